"""What the page is sent: the session's state from the person's side, as one JSON-able dict.

The page draws only this; every rule (legal destinations, whether the play can be confirmed, whether
the cube may be turned) is decided here on the server.
"""

from __future__ import annotations

from bgtrain.web.game import BOT, YOU, Session
from bgtrain.web.record import board_view, flip

LOG_LINES_SHOWN = 200


def _owner(owner: int | None) -> str:
    return "centred" if owner is None else ("you" if owner == YOU else "bot")


def session_view(session: Session, model: str = "") -> dict:
    settings = session.settings
    moving = session.phase == "move" and session.node is not None
    if moving:
        board = session.node.board
    else:
        board = session.board if session.turn == YOU else flip(session.board)
    view = {
        "type": "state",
        "variant": session.rules.name,
        "model": model,
        "ply": settings.ply,
        "phase": session.phase,
        "turn": "you" if session.turn == YOU else "bot",
        "names": {"you": settings.names[YOU], "bot": settings.names[BOT]},
        "board": board_view(board, session.rules),
        "dice": list(session.dice) if session.dice else None,
        "dice_left": list(session.node.dice_left) if moving else [],
        "cube": {
            "value": session.cube_value,
            "owner": _owner(session.cube_owner),
            "used": session.rules.cube,
            "can_double": session.phase == "roll" and session.turn == YOU and session._cube(YOU).available,
        },
        "score": {"you": session.score[YOU], "bot": session.score[BOT], "length": settings.match_length,
                  "crawford": session.crawford},
        "game_number": session.game_number,
        "destinations": {},
        "can_confirm": False,
        "can_undo": False,
        "double_choices": [],
        "settings": {
            "tutor": settings.tutor, "tutor_threshold": settings.tutor_threshold,
            "auto_play_forced": settings.auto_play_forced, "clock_seconds": settings.clock_seconds,
            "clock_action": settings.clock_action, "clock_cube": settings.clock_cube, "jacoby": settings.jacoby,
            "automatic_doubles": settings.automatic_doubles,
        },
        "setup": session.setup["text"] if session.setup else None,
        "log": session.log[-LOG_LINES_SHOWN:],
        "clock": None,
        "record": [_record_row(event, settings.names) for event in session.events],
        "result": _result(session),
        "waiting_for": session._waiting_for() if session.phase not in ("game_over", "match_over") else "",
    }
    if moving:
        tree = session.tree
        view["destinations"] = {str(source): options for source, options in tree.destinations(session.node).items()}
        view["can_confirm"] = tree.ends_turn(session.node)
        view["can_undo"] = bool(session.history)
        view["double_choices"] = tree.double_choices(session.node)
    if session.deadline is not None:
        view["clock"] = {"seconds_left": max(0.0, session.deadline - session.clock()),
                         "seconds": settings.clock_seconds, "action": settings.clock_action}
    return view


def _result(session: Session) -> dict | None:
    """The game's result, its review boards drawn for the page (``board_view``)."""
    result = session.result
    if not result or not result.get("analysis", {}).get("review"):
        return result
    boards = ("before", "after", "best_after")
    review = [{**step, **{name: board_view(step[name], session.rules) for name in boards}}
              for step in result["analysis"]["review"]]
    return {**result, "analysis": {**result["analysis"], "review": review}}


def _record_row(event: dict, names) -> dict:
    """One line of the page's game record, with the IDs GNU Backgammon reads."""
    who = names[event["seat"]] if "seat" in event else ""
    kind = event["kind"]
    if kind == "move":
        text = f"{event['dice'][0]}{event['dice'][1]}: {event['play']}"
    elif kind == "double":
        text = f"doubles to {event['value']}"
    elif kind == "take":
        text = "takes"
    elif kind == "drop":
        text = "passes"
    else:
        text = f"wins {event['value']} point{'s' if event['value'] != 1 else ''} ({event.get('how', '')})"
    return {"who": who, "text": text, "position_id": event.get("position_id"), "match_id": event.get("match_id")}
