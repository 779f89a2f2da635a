"""The API's OpenAPI 3.0 description, written by hand (served at ``/openapi.json`` and, where wildbg serves
its own, ``/api-docs/openapi.json``).

wildbg's schema (``crates/web/src/axum.rs``, ``web_api.rs``): ``MoveResponse {moves: [MoveInfo]}``,
``MoveInfo {play: [MoveDetail], probabilities}``, ``MoveDetail {from, to}``, ``EvalResponse {cube:
CubeInfo, probabilities}``, ``CubeInfo {double, accept}``, ``Probabilities {win, winG, winBg, loseG, loseBg}``,
``ErrorMessage {message}``. Fields bgtrain adds are marked "bgtrain:" in their descriptions: ``MoveInfo``
gains ``equity``, ``notation`` and ``ply``; ``EvalResponse`` gains ``equity`` and ``ply``; ``CubeInfo``
gains ``action``. Parameters bgtrain adds to wildbg's endpoints: ``ply`` and ``variant``; and ``x_away`` /
``o_away`` take any match score (wildbg: money and 1-pointers only).
"""

from __future__ import annotations

from typing import Any


def _integer(name: str, description: str, minimum: int | None = None, maximum: int | None = None,
             required: bool = False, example: int | None = None) -> dict:
    schema: dict[str, Any] = {"type": "integer"}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    parameter = {"name": name, "in": "query", "required": required, "description": description, "schema": schema}
    if example is not None:
        parameter["example"] = example
    return parameter


def _string(name: str, description: str, required: bool = False, example: str | None = None) -> dict:
    parameter = {"name": name, "in": "query", "required": required, "description": description,
                 "schema": {"type": "string"}}
    if example is not None:
        parameter["example"] = example
    return parameter


START_EXAMPLE = {"p24": 2, "p19": -5, "p17": -3, "p13": 5, "p12": -5, "p8": 3, "p6": 5, "p1": -2}


def _pips() -> list[dict]:
    parameters = [_integer("p0", "Bar of the opponent o (<= 0).", -15, 0)]
    for point in range(1, 25):
        parameters.append(_integer(f"p{point}", f"Point {point} from the side to move x: > 0 x's checkers, < 0 o's.",
                                   -15, 15, example=START_EXAMPLE.get(f"p{point}")))
    parameters.append(_integer("p25", "Bar of the side to move x (>= 0).", 0, 15))
    return parameters


def _json(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def openapi_document(engines) -> dict:
    variants = list(engines.by_variant)
    probability = {"type": "number", "minimum": 0, "maximum": 1}
    common = [
        _integer("ply", f"bgtrain: search depth, GNU numbering (default {engines.default_ply}).", 0, engines.max_ply),
        {"name": "variant", "in": "query", "required": False,
         "description": f"bgtrain: rules variant (default {engines.default_variant}).",
         "schema": {"type": "string", "enum": variants}},
    ]
    position = _string("position", "GNU Backgammon position ID (optionally followed by ':' and a match ID) or an XGID.",
                       True, "4HPwATDgc/ABMA")
    cube_parameters = [
        _integer("cube", "Cube value (default: from the position, else 1).", 1),
        {"name": "owner", "in": "query", "required": False, "description": "Who owns the cube.",
         "schema": {"type": "string", "enum": ["centred", "mover", "opponent"]}},
        _integer("match", "Match length (0 or absent: money play).", 0),
        _string("score", "The player on roll's score and the opponent's, like 2-4."),
        _string("crawford", "true in the Crawford game."),
        _string("jacoby", "Money play with the Jacoby rule (default true)."),
        _string("beavers", "Money play with beavers (default false)."),
    ]
    play_schema = {"type": "object", "properties": {
        "rank": {"type": "integer"}, "play": {"type": "string"}, "position_id": {"type": "string"},
        "equity": {"type": "number"}, "difference": {"type": "number"}, "ply": {"type": "integer"},
        "probabilities": {"$ref": "#/components/schemas/Outcomes"}}}
    plays_schema = {"type": "object", "properties": {
        "variant": {"type": "string"}, "ply": {"type": "integer"},
        "dice": {"type": "array", "items": {"type": "integer"}},
        "moves": {"type": "array", "items": play_schema}}}
    evaluation_schema = {"type": "object", "properties": {
        "variant": {"type": "string"}, "ply": {"type": "integer"},
        "probabilities": {"$ref": "#/components/schemas/Outcomes"}, "equity": {"type": "number"},
        "cube": {"type": "object", "description": "The cube decision (absent for variants without a cube)."}}}
    error = {"description": "Bad request", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorMessage"}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "bgtrain", "version": "1",
                 "description": "bgtrain's evaluator over HTTP: wildbg's /move and /eval, and bgtrain's own endpoints "
                                "on position IDs and XGIDs with the cube and score. Fields bgtrain adds to wildbg's "
                                "responses are marked 'bgtrain:'."},
        "paths": {
            "/move": {"get": {
                "summary": "Ranked legal moves for a position and dice (wildbg)",
                "parameters": [_integer("die1", "First die.", 1, 6, True, 3), _integer("die2", "Second die.", 1, 6, True, 1),
                               _integer("x_away", "Points x still needs (0 with o_away 0: money).", 0),
                               _integer("o_away", "Points o still needs.", 0), *_pips(), *common],
                "responses": {"200": {"description": "All legal moves, best first",
                                      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/MoveResponse"}}}},
                              "400": error},
            }},
            "/eval": {"get": {
                "summary": "Outcome probabilities and the money cube decision for a position (wildbg)",
                "parameters": [*_pips(), *common],
                "responses": {"200": {"description": "Probabilities and cube decision",
                                      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EvalResponse"}}}},
                              "400": error},
            }},
            "/bgtrain/move": {"get": {
                "summary": "Ranked plays of a position ID or XGID",
                "parameters": [position, _string("dice", "The roll, like 31 (default: the XGID's)."),
                               _integer("limit", "At most this many plays.", 1, 1000), *common],
                "responses": {"200": _json("Plays, best first", plays_schema), "400": error},
            }},
            "/bgtrain/eval": {"get": {
                "summary": "Probabilities, cubeless equity and the cube decision at any cube and score",
                "parameters": [position, *cube_parameters, *common],
                "responses": {"200": _json("Evaluation", evaluation_schema), "400": error},
            }},
        },
        "components": {"schemas": {
            "ErrorMessage": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}},
            "Probabilities": {"type": "object", "required": ["win", "winG", "winBg", "loseG", "loseBg"], "properties": {
                "win": probability, "winG": probability, "winBg": probability, "loseG": probability, "loseBg": probability}},
            "Outcomes": {"type": "object", "properties": {name: probability for name in (
                "win", "win_gammon", "win_backgammon", "lose_gammon", "lose_backgammon")}},
            "MoveDetail": {"type": "object", "required": ["from", "to"], "properties": {
                "from": {"type": "integer", "minimum": 1, "maximum": 25, "description": "25: the bar."},
                "to": {"type": "integer", "minimum": 0, "maximum": 24, "description": "0: borne off."}}},
            "MoveInfo": {"type": "object", "required": ["play", "probabilities"], "properties": {
                "play": {"type": "array", "maxItems": 4, "items": {"$ref": "#/components/schemas/MoveDetail"}},
                "probabilities": {"$ref": "#/components/schemas/Probabilities"},
                "equity": {"type": "number", "description": "bgtrain: the value moves are ranked by (money: cubeless "
                                                           "equity; a match: match winning chance)."},
                "notation": {"type": "string", "description": "bgtrain: the same steps as text, one die each, * on hits "
                                                                 "(as .mat files write a play: 8/5 6/5)."},
                "ply": {"type": "integer", "description": "bgtrain: the ply this move was evaluated at."}}},
            "MoveResponse": {"type": "object", "required": ["moves"], "properties": {
                "moves": {"type": "array", "items": {"$ref": "#/components/schemas/MoveInfo"}}}},
            "CubeInfo": {"type": "object", "required": ["double", "accept"], "properties": {
                "double": {"type": "boolean"}, "accept": {"type": "boolean"},
                "action": {"type": "string", "description": "bgtrain: GNU Backgammon's name of the proper action."}}},
            "EvalResponse": {"type": "object", "required": ["cube", "probabilities"], "properties": {
                "cube": {"$ref": "#/components/schemas/CubeInfo"},
                "probabilities": {"$ref": "#/components/schemas/Probabilities"},
                "equity": {"type": "number", "description": "bgtrain: cubeless equity."},
                "ply": {"type": "integer", "description": "bgtrain: the ply evaluated at."}}},
        }},
    }
