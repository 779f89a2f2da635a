"""The session on disk: its whole state as JSON, written atomically after every action, and read
back into a fresh ``Session`` (``Session.to_json`` / ``Session.from_json``).

The turn in progress is kept as its partial play (the node of ``bgtrain.web.turn`` and the undo
history); the tree itself is rebuilt from the position and the dice.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from bgtrain.files import atomic_write
from bgtrain.web.turn import Node, TurnTree

FIELDS = ("score", "game_number", "crawford", "crawford_done", "games", "phase", "turn", "board",
          "cube_value", "cube_owner", "dice", "deadline", "offered", "cube_considered", "events",
          "decisions", "result", "score_before")


# Fields added since the first saved sessions, with the value an older file stands for.
LATER_FIELDS = {"setup": None, "log": []}


def session_state(session) -> dict:
    data = {name: getattr(session, name) for name in (*FIELDS, *LATER_FIELDS)}
    data["variant"] = session.rules.name
    data["settings"] = asdict(session.settings)
    data["dice_source"] = session.dice_source.state()
    data["node"] = asdict(session.node) if session.node else None
    data["history"] = [asdict(node) for node in session.history]
    return data


def check_variant(data: dict, rules) -> None:
    if data["variant"] != rules.name:
        raise ValueError(f"the saved session plays {data['variant']}, the model {rules.name}")


def _node(item: dict) -> Node:
    return Node(tuple(item["board"]), tuple(item["dice_left"]), item["stage"])


def restore(session, data: dict) -> None:
    """Fill a freshly made session (same evaluator, settings and dice) with the saved state."""
    for name in FIELDS:
        setattr(session, name, data[name])
    for name, default in LATER_FIELDS.items():
        setattr(session, name, data.get(name, default))
    session.board = tuple(session.board)
    session.dice = tuple(session.dice) if session.dice else None
    if session.phase == "move":
        session.tree = TurnTree(session.board, session.dice, session.rules)
        session.node = _node(data["node"])
        session.history = [_node(item) for item in data["history"]]


def write_atomically(path: Path, data: dict) -> None:
    """``data`` as JSON at ``path``, through the one atomic writer (``bgtrain.files.atomic_write``): a
    reader (or a crash) never sees half a file."""
    atomic_write(path, json.dumps(data))