"""A game started from a position, for practice: ``bgtrain play --position ID|XGID`` or the page's box.

A GNU Backgammon position ID (``4HPwATDgc/ABMA``, optionally followed by ``:`` and a match ID, which
is not read) puts the person on roll, before the roll, with the cube centred. An XGID (eXtreme
Gammon's ``XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10``) gives more: the person is XG's
bottom player, so its turn field says who is on roll; its cube value and owner, and its dice when they
are rolled, are used. Its score, match length and rules are not: the session's settings hold those,
and a pending cube action is ignored (the game starts before the roll).

A setup is a plain dict, saved with the session: ``{"text", "board" (28 ints from the side on roll),
"turn" (0 the person, 1 the bot), "cube_value", "cube_owner" (None, 0 or 1), "dice" (None or two)}``.
"""

from __future__ import annotations

import torch

from engine.position_facts import mover_finished, opponent_finished
from engine.position_id import decode_position_id
from engine.rules import Rules
from engine.xgid import decode_xgid

YOU, BOT = 0, 1
MAX_TEXT = 120


def parse_setup(text: str, rules: Rules) -> dict:
    """The setup ``text`` describes; ``ValueError`` in one sentence when it is not a position to play."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("give a GNU Backgammon position ID (14 characters) or an XGID")
    text = text.strip()
    if len(text) > MAX_TEXT:
        raise ValueError(f"a position ID or XGID is under {MAX_TEXT} characters, not {len(text)}")
    if text.upper().startswith("XGID=") or text.count(":") >= 9:
        position = decode_xgid(text, rules)
        turn = YOU if position.mover_is_bottom else BOT
        other = BOT if turn == YOU else YOU
        owner = {"centred": None, "mover": turn, "opponent": other}[position.cube_owner]
        setup = {"text": text, "board": list(position.board), "turn": turn, "cube_value": position.cube_value,
                 "cube_owner": owner, "dice": list(position.dice) if position.dice != (0, 0) else None}
    else:
        position_id = text.split(":")[0]
        board = decode_position_id(position_id, rules)
        setup = {"text": position_id, "board": board.tolist(), "turn": YOU, "cube_value": 1, "cube_owner": None,
                 "dice": None}
    _check_live(setup["board"])
    if setup["cube_value"] > 1 and not rules.cube:
        raise ValueError(f"{rules.name} is played without a cube; this position has the cube at {setup['cube_value']}")
    return setup


def _check_live(board: list[int]) -> None:
    row = torch.tensor([board], dtype=torch.int8)
    if bool(mover_finished(row)[0]) or bool(opponent_finished(row)[0]):
        raise ValueError("that position is already over: one side has borne off all its checkers")
