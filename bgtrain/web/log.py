"""The page's log: one line of plain text per event worth reading later (rolls, plays, cube actions,
messages, the result). Written on the server, so the session keeps the lines and a reopened tab shows
the same log (``Session.note``)."""

from __future__ import annotations

WHO = {"you": 0, "bot": 1}


def log_line(event: dict, names: tuple[str, str]) -> str | None:
    """The line for ``event`` (a ``Session`` event), or None for one that is only shown (a checker
    step, the tutor's warning)."""
    kind = event.get("type")
    name = names[WHO[event["who"]]] if event.get("who") in WHO else ""
    if kind == "opening":
        tie = " (tie: roll again)" if event["you"] == event["bot"] else ""
        return f"opening roll: {names[0]} {event['you']}, {names[1]} {event['bot']}{tie}"
    if kind == "roll":
        return f"{_says(name, 'rolls')} {event['dice'][0]}-{event['dice'][1]}"
    if kind == "played":
        return f"{_says(name, 'plays')} {event['dice'][0]}{event['dice'][1]}: {event['play']}"
    if kind == "double":
        return f"{_says(name, 'doubles')} to {event['value']}"
    if kind in ("take", "pass"):
        return event.get("text") or _says(name, "takes" if kind == "take" else "passes")
    if kind == "resign":
        return f"{_says(name, 'offers')} to resign ({event['level']})"
    if kind == "game_over":
        winner = names[WHO[event["winner"]]]
        points = event["points"]
        return f"{_says(winner, 'wins')} {points} point{'s' if points != 1 else ''} ({event['how']})"
    if kind == "message":
        return event["text"]
    return None


def _says(name: str, verb: str) -> str:
    """"bgtrain rolls", but "you roll"."""
    if name.lower() != "you":
        return f"{name} {verb}"
    return f"{name} {verb[:-2] if verb.endswith(('sses', 'shes')) else verb[:-1]}"
