"""The HTTP API (``bgtrain serve``): a Starlette app on the evaluator, speaking wildbg's protocol and bgtrain's.

Endpoints (all ``GET``, all answers JSON; the full description at ``/openapi.json``):

* ``/move`` and ``/eval``: wildbg's, with its parameters (``die1``, ``die2``, ``p0``..``p25``, ``x_away``,
  ``o_away``) and its response fields; bgtrain adds fields, never renames or drops one (see ``openapi``).
* ``/bgtrain/move`` and ``/bgtrain/eval``: a position as a GNU Backgammon position ID (optionally with
  ``:matchID``) or an XGID, ``dice``, ``ply``, ``variant``, and for the cube decision the cube and score
  (``cube``, ``owner``, ``match``, ``score``, ``crawford``, ``jacoby``, ``beavers``) when the position
  does not carry them.

Every request becomes an item of a ``BatchQueue`` job (``plays`` or ``probabilities``, keyed by variant
and ply), so concurrent requests share one evaluation. Bad requests get 400 (or 404, 405, 414) and
``{"message": ...}`` (wildbg's error body), never a traceback. The query string is bounded
(``MAX_QUERY``), the ply by the server's ``max_ply``, the plays listed by ``limit``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping

import torch
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bgtrain.api.batching import BatchQueue
from bgtrain.api.openapi import openapi_document
from bgtrain.api.wildbg import (
    RequestError,
    away_from_params,
    board_from_pips,
    dice_from_params,
    play_details,
    probabilities_view,
)
from bgtrain.cube import CubeState, MatchGame, MoneyGame, TakeAction, action_label, is_double
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.cube_action import cube_action
from bgtrain.values.evaluator import Evaluator
from engine.parsing import parse_dice, parse_position
from engine.position_id import encode_position_id, split_checkers_in_hand

MAX_QUERY = 2048  # characters of query string: a full position with every option needs under 300
MAX_LIMIT = 1000  # plays listed per answer (a position has at most a few hundred)
OUTCOME_NAMES = ("win", "win_gammon", "win_backgammon", "lose_gammon", "lose_backgammon")


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Engines:
    """The evaluators served, by variant (the first is the default), and the batch functions on them."""

    def __init__(self, evaluators: list[Evaluator], default_ply: int = 0, max_ply: int = 2) -> None:
        if not evaluators:
            raise ValueError("no model to serve")
        self.by_variant = {}
        for evaluator in evaluators:
            if evaluator.rules.name in self.by_variant:
                raise ValueError(f"two models for the variant {evaluator.rules.name!r}")
            self.by_variant[evaluator.rules.name] = evaluator
        self.default_variant = evaluators[0].rules.name
        if not 0 <= default_ply <= max_ply:
            raise ValueError(f"the default ply {default_ply} must be between 0 and the maximum {max_ply}")
        self.default_ply = default_ply
        self.max_ply = max_ply

    def evaluator(self, variant: str | None) -> Evaluator:
        name = variant or self.default_variant
        if name not in self.by_variant:
            raise ApiError(400, f"variant {name!r} is not served here; served: {', '.join(self.by_variant)}")
        return self.by_variant[name]

    def ply(self, params: Mapping[str, str], evaluator: Evaluator) -> int:
        text = params.get("ply")
        if text is None or text == "":
            ply = self.default_ply
        else:
            try:
                ply = int(text)
            except ValueError:
                raise ApiError(400, f"ply must be a whole number, not {text[:20]!r}") from None
        if not 0 <= ply <= self.max_ply:
            raise ApiError(400, f"ply {ply} is out of range: this server searches 0 to {self.max_ply} plies")
        if ply and evaluator.rules.acey_deucey:
            raise ApiError(400, f"{evaluator.rules.name} is evaluated at 0-ply only")
        return ply

    # --- batch functions: one evaluation for every request of a batch --------------------------------

    def plays(self, key, items):
        """``key``: (variant, ply, notation); ``notation`` False skips GNU's notation (a scalar search per
        request: half the time of a batch of wildbg requests, which write their plays as steps instead)."""
        variant, ply, notation = key
        evaluator = self.by_variant[variant]
        device = _device(evaluator)
        boards = torch.tensor([board for board, _ in items], dtype=torch.int8, device=device)
        dice = torch.tensor([roll for _, roll in items], dtype=torch.int8, device=device)
        return evaluator.hint(boards, dice, ply, notation=notation)

    def probabilities(self, key, items):
        variant, ply = key
        evaluator = self.by_variant[variant]
        boards = torch.tensor(items, dtype=torch.int8, device=_device(evaluator))
        return evaluator.probabilities(boards, ply).cpu().tolist()


def _device(evaluator: Evaluator) -> torch.device:
    from bgtrain.values.static_value import model_device

    return model_device(getattr(evaluator.value, "network", None))


def create_app(engines: Engines, max_batch: int = 256, max_wait: float = 0.002) -> Starlette:
    queue = BatchQueue({"plays": engines.plays, "probabilities": engines.probabilities}, max_batch, max_wait)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await queue.start()
        yield
        await queue.stop()

    async def wildbg_move(request: Request) -> JSONResponse:
        params = request.query_params
        evaluator = engines.evaluator(params.get("variant"))
        dice = dice_from_params(params)
        x_away, o_away = away_from_params(params)
        board = board_from_pips(params, evaluator.rules)
        ply = engines.ply(params, evaluator)
        game = _match_from_away(x_away, o_away)
        hints = await queue.submit("plays", (evaluator.rules.name, ply, False), (board, dice))
        moves = []
        for hint in hints:
            value = hint.equity if game is None else _match_winning_chance(hint.probabilities, game)
            moves.append((hint, value))
        # Ranked as wildbg ranks: by the value of the score (money: equity; a match: match winning chance).
        moves.sort(key=lambda pair: (-pair[0].ply, -pair[1]))
        details = play_details(board, dice, evaluator.rules)
        return JSONResponse({"moves": [
            {"play": details[hint.board][0],
             "probabilities": probabilities_view(hint.probabilities),
             "equity": round(value, 6), "notation": details[hint.board][1], "ply": hint.ply}
            for hint, value in moves
        ]})

    async def wildbg_eval(request: Request) -> JSONResponse:
        params = request.query_params
        evaluator = engines.evaluator(params.get("variant"))
        board = board_from_pips(params, evaluator.rules)
        ply = engines.ply(params, evaluator)
        probabilities = await queue.submit("probabilities", (evaluator.rules.name, ply), board)
        decision = _cube(probabilities, board, CubeState(), MoneyGame(), evaluator)
        return JSONResponse({
            "cube": {"double": decision["double"], "accept": decision["accept"], "action": decision["action"]},
            "probabilities": probabilities_view(probabilities),
            "equity": round(float(cubeless_equity(torch.tensor(probabilities), evaluator.rules)), 6),
            "ply": ply,
        })

    async def bgtrain_move(request: Request) -> JSONResponse:
        params = request.query_params
        evaluator = engines.evaluator(params.get("variant"))
        board, position_dice, _ = _position(params, evaluator)
        dice = parse_dice(params["dice"], "dice") if params.get("dice") else position_dice
        if dice is None:
            raise ApiError(400, "dice: give the roll (dice=31), or an XGID or match ID that holds one")
        ply = engines.ply(params, evaluator)
        limit = _limit(params)
        hints = await queue.submit("plays", (evaluator.rules.name, ply, True), (board, dice))
        moves = []
        for rank, hint in enumerate(hints[:limit], 1):
            on_board, _ = split_checkers_in_hand(hint.board)
            moves.append({"rank": rank, "play": hint.play, "position_id": encode_position_id(on_board),
                          "equity": round(hint.equity, 6), "difference": round(hint.difference, 6), "ply": hint.ply,
                          "probabilities": _named(hint.probabilities),
                          **({"extra_roll": hint.extra_roll} if evaluator.rules.acey_deucey else {})})
        return JSONResponse({"variant": evaluator.rules.name, "dice": list(dice), "ply": ply, "moves": moves})

    async def bgtrain_eval(request: Request) -> JSONResponse:
        params = request.query_params
        evaluator = engines.evaluator(params.get("variant"))
        board, _, setting = _position(params, evaluator)
        ply = engines.ply(params, evaluator)
        cube, game = _cube_and_game(params, setting) if evaluator.rules.cube else (None, None)
        probabilities = await queue.submit("probabilities", (evaluator.rules.name, ply), board)
        answer = {
            "variant": evaluator.rules.name, "ply": ply,
            "probabilities": _named(probabilities),
            "equity": round(float(cubeless_equity(torch.tensor(probabilities), evaluator.rules)), 6),
        }
        if cube is not None:
            answer["cube"] = _cube(probabilities, board, cube, game, evaluator)
        return JSONResponse(answer)

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(openapi_document(engines))

    def handled(endpoint):
        async def wrapper(request: Request) -> JSONResponse:
            if len(request.scope.get("query_string", b"")) > MAX_QUERY:
                return _error(414, f"the query string is longer than {MAX_QUERY} characters")
            try:
                return await endpoint(request)
            except ApiError as error:
                return _error(error.status, error.message)
            except (RequestError, ValueError) as error:
                return _error(400, str(error).strip().splitlines()[0] if str(error).strip() else "bad request")
        return wrapper

    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        return _error(error.status_code, error.detail)

    async def server_error(request: Request, error: Exception) -> JSONResponse:
        return _error(500, f"the evaluation failed: {type(error).__name__}")

    routes = [
        Route("/move", handled(wildbg_move)),
        Route("/eval", handled(wildbg_eval)),
        Route("/bgtrain/move", handled(bgtrain_move)),
        Route("/bgtrain/eval", handled(bgtrain_eval)),
        Route("/openapi.json", openapi),
        Route("/api-docs/openapi.json", openapi),  # where wildbg serves its description
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error, Exception: server_error})
    app.state.queue = queue
    return app


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status)


def _named(probabilities) -> dict[str, float]:
    return {name: round(float(value), 6) for name, value in zip(OUTCOME_NAMES, probabilities)}


def _limit(params: Mapping[str, str]) -> int:
    text = params.get("limit")
    if not text:
        return MAX_LIMIT
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise ApiError(400, f"limit must be a whole number from 1 to {MAX_LIMIT}, not {text[:20]!r}")
    return int(text)


def _position(params: Mapping[str, str], evaluator: Evaluator):
    text = params.get("position") or params.get("xgid") or params.get("id")
    if not text:
        raise ApiError(400, "position: give a GNU Backgammon position ID (optionally ':' and a match ID) or an XGID")
    parsed = parse_position(text, evaluator.rules)
    return [int(value) for value in parsed.board.tolist()], parsed.dice, parsed.setting


def _match_from_away(x_away: int, o_away: int) -> MatchGame | None:
    """wildbg's score (points each side still needs) as a match game for ``bgtrain.cube``; None for money."""
    if x_away == 0:
        return None
    length = max(x_away, o_away)
    try:
        return MatchGame(length, (length - x_away, length - o_away))
    except ValueError as error:
        raise ApiError(400, str(error)) from None


def _match_winning_chance(probabilities, game: MatchGame) -> float:
    """The mover's match winning chance after a play, cube dead at 1: each outcome's probability (from the
    cumulative five) times the match winning chance after it."""
    win, win_gammon, win_backgammon, lose_gammon, lose_backgammon = (float(value) for value in probabilities)
    outcomes = ((win - win_gammon, 1), (win_gammon - win_backgammon, 2), (win_backgammon, 3),
                (1.0 - win - lose_gammon, -1), (lose_gammon - lose_backgammon, -2), (lose_backgammon, -3))
    return sum(probability * game.mwc_after(points) for probability, points in outcomes)


def _cube_and_game(params: Mapping[str, str], setting):
    def integer(name: str, default):
        text = params.get(name)
        if text is None or text == "":
            return default
        if not text.isdigit():
            raise ApiError(400, f"{name} must be a whole number, not {text[:20]!r}")
        return int(text)

    def flag(name: str, default) -> bool:
        text = params.get(name)
        if text is None or text == "":
            return bool(default)
        if text.lower() not in ("true", "false", "1", "0"):
            raise ApiError(400, f"{name} must be true or false, not {text[:20]!r}")
        return text.lower() in ("true", "1")

    value = integer("cube", setting.value or 1)
    owner = params.get("owner") or setting.owner or "centred"
    cube = CubeState(value, owner)
    if value < 2 and owner != "centred":
        raise ApiError(400, f"a cube of {value} is centred; owner={owner} needs cube=2 or more")
    length = integer("match", setting.match_length or 0)
    if not length:
        return cube, MoneyGame(jacoby=flag("jacoby", True if setting.jacoby is None else setting.jacoby),
                               beavers=flag("beavers", setting.beavers))
    score = setting.score or (0, 0)
    if params.get("score"):
        mover, dash, opponent = params["score"].partition("-")
        if not dash or not mover.isdigit() or not opponent.isdigit():
            raise ApiError(400, "score: the player on roll's score and the opponent's, like 2-4")
        score = (int(mover), int(opponent))
    return cube, MatchGame(length, score, flag("crawford", setting.crawford))


def _cube(probabilities, board, cube: CubeState, game, evaluator: Evaluator) -> dict:
    """The cube decision of the player on roll (``bgtrain.values.cube_action``: exact in small bear-offs)."""
    tensor_board = torch.tensor([board], dtype=torch.int8)
    decision, _ = cube_action(torch.tensor([probabilities], dtype=torch.float64), tensor_board, cube, game,
                              evaluator.two_sided, evaluator.rules)
    action = int(decision.action[0])
    take = int(decision.take[0])

    def number(values) -> float | None:
        value = float(values[0])
        return None if math.isnan(value) else round(value, 6)

    return {
        "double": bool(is_double(action)),
        "accept": take in (int(TakeAction.TAKE), int(TakeAction.BEAVER)),
        "action": action_label(action, cube),
        "response": TakeAction(take).name.lower(),
        "cube": {"value": cube.value, "owner": cube.owner},
        "equities": {"no_double": number(decision.no_double), "double_take": number(decision.double_take),
                     "double_pass": number(decision.double_pass), "cubeless": number(decision.cubeless_equity)},
        "costs": {"no_double": number(decision.cost_no_double), "double": number(decision.cost_double),
                  "take": number(decision.cost_take), "pass": number(decision.cost_pass)},
    }
