"""XGID (eXtreme Gammon ID): a position with its cube, dice and score on one line.

``XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10`` is ten ``:``-separated fields (the ``XGID=`` prefix
is optional on input). Semantics as eXtreme Gammon writes them and GNU Backgammon reads them (gnubg
``set.c`` ``SetXGID``, ``positionid.c`` ``PositionFromXG``):

1.  position, 26 characters, always from the **bottom** player's side: character 0 is the top player's bar,
    1..24 the bottom player's points 1..24, 25 the bottom player's bar. ``-`` is empty, ``A``.. counts the
    bottom player's checkers (A = 1, B = 2, ...), ``a``.. the top player's.
2.  cube value as log2 (0 = 1-cube).
3.  cube position: 1 the bottom player owns it, -1 the top player, 0 centred.
4.  turn: 1 the bottom player is on roll, -1 the top player.
5.  dice: ``00`` the player on roll has yet to roll (or double); two digits 1..6 the roll to play, in the
    order written; ``D`` the player on roll has doubled and the opponent must take or pass; ``B`` the
    opponent has beavered; ``R`` the player on roll has raccooned.
6.  the bottom player's score.
7.  the top player's score.
8.  match play: 1 if this is the Crawford game, else 0. Money play: bit 0 the Jacoby rule, bit 1 beavers.
9.  match length, 0 for money play.
10. the cube limit as log2 (XG's default 10 is a 1024-cube).

``XgPosition`` keeps all of it with the board in our layout (``engine.board``) from the side to move, i.e. the
player named by the turn field, and the cube and scores relative to that side. ``mover_is_bottom`` remembers
which side of the XG diagram the mover sits on, so that encoding gives back the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from engine.board import BOARD_WIDTH, MOVER_IN_HAND, OPPONENT_IN_HAND, flip_board
from engine.position_id import MAX_CHECKERS_PER_SIDE, board_to_list, check_board_signs
from engine.rules import STANDARD, Rules

XGID_PREFIX = "XGID="
XGID_FIELDS = 10
XGID_POSITION_LENGTH = 26
MAX_CUBE_LOG2 = 15

CUBE_OWNERS = ("centred", "mover", "opponent")
CUBE_ACTIONS = {"none": "", "doubled": "D", "beavered": "B", "raccooned": "R"}

_COUNT = re.compile(r"0|[1-9][0-9]*")  # canonical non-negative integers only, so that text round-trips


@dataclass(frozen=True)
class XgPosition:
    """One XGID, decoded. Construction validates; invalid values raise ``ValueError``.

    ``board``            28 ints (our layout) from the side to move; a sequence or ``int[28]`` tensor is
                         accepted and stored as a tuple. No checkers in hand (an XGID has no place for them).
    ``dice``             ``(first, second)`` as written, each 1..6, or ``(0, 0)`` before the roll.
    ``cube_value``       1, 2, 4, ... (at most ``max_cube``).
    ``cube_owner``       ``"centred"``, ``"mover"`` or ``"opponent"``.
    ``cube_action``      ``"none"``; ``"doubled"`` (the mover doubled, the opponent answers), ``"beavered"``
                         (the opponent beavered) or ``"raccooned"`` (the mover raccooned). ``cube_value`` is
                         the value before that double, as XG writes it. Dice are ``(0, 0)`` when not none.
    ``mover_score``      points of the side to move; ``opponent_score`` the other side's.
    ``match_length``     0 for money play.
    ``crawford``         this is the Crawford game (match play only).
    ``jacoby``           the Jacoby rule is on; ``beaver`` beavers are allowed (money play only).
    ``max_cube``         the cube limit, a power of two.
    ``mover_is_bottom``  the XGID turn field: True for 1 (the mover is XG's bottom player), False for -1.
    """

    board: tuple[int, ...]
    dice: tuple[int, int] = (0, 0)
    cube_value: int = 1
    cube_owner: str = "centred"
    cube_action: str = "none"
    mover_score: int = 0
    opponent_score: int = 0
    match_length: int = 0
    crawford: bool = False
    jacoby: bool = False
    beaver: bool = False
    max_cube: int = 1024
    mover_is_bottom: bool = True

    def __post_init__(self) -> None:
        values = board_to_list(self.board)
        object.__setattr__(self, "board", tuple(values))
        object.__setattr__(self, "dice", tuple(int(die) for die in self.dice))
        check_board_signs(values, "XGID")
        if values[MOVER_IN_HAND] or values[OPPONENT_IN_HAND]:
            raise ValueError("XGID: checkers in hand cannot be written in an XGID")
        for side, count in (
            ("mover", sum(max(0, value) for value in values[1:26])),
            ("opponent", sum(max(0, -value) for value in values[0:25])),
        ):
            if count > MAX_CHECKERS_PER_SIDE:
                raise ValueError(f"XGID: {count} checkers for the {side} (at most {MAX_CHECKERS_PER_SIDE})")
        for name in ("cube_value", "max_cube"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1) or value.bit_length() - 1 > MAX_CUBE_LOG2:
                raise ValueError(f"{name} {value} is not a power of two from 1 to {1 << MAX_CUBE_LOG2}")
        if self.cube_value > self.max_cube:
            raise ValueError(f"cube value {self.cube_value} is above the cube limit {self.max_cube}")
        if self.cube_owner not in CUBE_OWNERS:
            raise ValueError(f"cube owner {self.cube_owner!r} is not one of {CUBE_OWNERS}")
        if self.cube_owner != "centred" and self.cube_value < 2:
            raise ValueError("an owned cube has a value of at least 2")
        if self.cube_action not in CUBE_ACTIONS:
            raise ValueError(f"cube action {self.cube_action!r} is not one of {tuple(CUBE_ACTIONS)}")
        if len(self.dice) != 2 or (self.dice != (0, 0) and any(not 1 <= die <= 6 for die in self.dice)):
            raise ValueError(f"dice {self.dice} out of range: each die is 1..6, or (0, 0) before the roll")
        if self.cube_action != "none" and self.dice != (0, 0):
            raise ValueError(f"dice {self.dice} rolled while a cube action ({self.cube_action}) is pending")
        if self.match_length < 0 or self.mover_score < 0 or self.opponent_score < 0:
            raise ValueError("match length and scores are >= 0")
        if self.match_length:
            for side, points in (("mover", self.mover_score), ("opponent", self.opponent_score)):
                if points >= self.match_length:
                    raise ValueError(
                        f"score {points} of the {side} is not below the match length {self.match_length}"
                    )
            if self.crawford and max(self.mover_score, self.opponent_score) != self.match_length - 1:
                raise ValueError("the Crawford game needs a side 1 point from winning the match")
            if self.jacoby or self.beaver:
                raise ValueError("the Jacoby and beaver rules are for money play (match length 0)")
            if self.cube_action in ("beavered", "raccooned"):
                raise ValueError(f"cube action {self.cube_action!r} is for money play (match length 0)")
        elif self.crawford:
            raise ValueError("money play (match length 0) has no Crawford game")

    def board_tensor(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """The board as ``int8[28]``."""
        return torch.tensor(self.board, dtype=torch.int8, device=device)


def _position_from_text(text: str, xgid: str) -> list[int]:
    """The bottom player's view of the 26-character position field, in our board layout."""
    if len(text) != XGID_POSITION_LENGTH:
        raise ValueError(
            f"XGID {xgid!r}: the position has {len(text)} characters, not {XGID_POSITION_LENGTH}"
        )
    bottom_view = [0] * BOARD_WIDTH
    for index, character in enumerate(text):
        if character == "-":
            continue
        if not character.isascii() or not character.isalpha():
            raise ValueError(
                f"XGID {xgid!r}: position character {character!r} at {index} is not '-' or a letter"
            )
        count = ord(character.lower()) - ord("a") + 1
        if character.isupper():  # the bottom player, the "mover" of this view
            if index == 0:
                raise ValueError(f"XGID {xgid!r}: bottom player's checkers on the top player's bar")
            bottom_view[index] = count
        else:
            if index == 25:
                raise ValueError(f"XGID {xgid!r}: top player's checkers on the bottom player's bar")
            bottom_view[index] = -count
    return bottom_view


def _position_to_text(bottom_view: list[int]) -> str:
    characters = []
    for value in bottom_view[:XGID_POSITION_LENGTH]:
        if value > 0:
            characters.append(chr(ord("A") + value - 1))
        elif value < 0:
            characters.append(chr(ord("a") - value - 1))
        else:
            characters.append("-")
    return "".join(characters)


def _count(field: str, name: str, xgid: str) -> int:
    if not _COUNT.fullmatch(field):
        raise ValueError(f"XGID {xgid!r}: {name} {field!r} is not a non-negative integer")
    return int(field)


def decode_xgid(text: str, rules: Rules = STANDARD) -> XgPosition:
    """The ``XgPosition`` an XGID describes (``XGID=`` prefix optional); ``ValueError`` names any problem."""
    if not isinstance(text, str):
        raise TypeError(f"XGID {text!r}: must be a string")
    fields = text.removeprefix(XGID_PREFIX).split(":")
    if len(fields) != XGID_FIELDS:
        raise ValueError(f"XGID {text!r}: {len(fields)} fields, not {XGID_FIELDS}")
    position, cube, cube_position, turn, dice, bottom_score, top_score, rules_field, length, limit = fields

    bottom_view = _position_from_text(position, text)
    limit_checkers = rules.checkers_per_side
    for side, count in (
        ("bottom player", sum(max(0, value) for value in bottom_view)),
        ("top player", sum(max(0, -value) for value in bottom_view)),
    ):
        if count > limit_checkers:
            raise ValueError(
                f"XGID {text!r}: {count} checkers for the {side} (at most {limit_checkers} in {rules.name})"
            )

    if turn not in ("1", "-1"):
        raise ValueError(f"XGID {text!r}: turn {turn!r} is not 1 (bottom) or -1 (top)")
    mover_is_bottom = turn == "1"
    if cube_position not in ("1", "0", "-1"):
        raise ValueError(f"XGID {text!r}: cube position {cube_position!r} is not 1, 0 or -1")
    if cube_position == "0":
        cube_owner = "centred"
    else:
        cube_owner = "mover" if (cube_position == "1") == mover_is_bottom else "opponent"

    cube_log2 = _count(cube, "cube value", text)
    limit_log2 = _count(limit, "cube limit", text)
    for name, value in (("cube value", cube_log2), ("cube limit", limit_log2)):
        if value > MAX_CUBE_LOG2:
            raise ValueError(f"XGID {text!r}: {name} 2^{value} is above 2^{MAX_CUBE_LOG2}")

    actions = {code: name for name, code in CUBE_ACTIONS.items() if code}
    if dice in actions:
        cube_action, rolled = actions[dice], (0, 0)
    elif dice == "00":
        cube_action, rolled = "none", (0, 0)
    elif re.fullmatch(r"[1-6][1-6]", dice):
        cube_action, rolled = "none", (int(dice[0]), int(dice[1]))
    else:
        raise ValueError(f"XGID {text!r}: dice {dice!r} out of range (00, D, B, R, or two digits 1..6)")

    match_length = _count(length, "match length", text)
    rules_code = _count(rules_field, "Crawford/Jacoby field", text)
    if match_length:
        if rules_code > 1:
            raise ValueError(f"XGID {text!r}: Crawford field {rules_code} in match play is not 0 or 1")
        crawford, jacoby, beaver = rules_code == 1, False, False
    else:
        if rules_code > 3:
            raise ValueError(f"XGID {text!r}: Jacoby/beaver field {rules_code} in money play is not 0..3")
        crawford, jacoby, beaver = False, bool(rules_code & 1), bool(rules_code & 2)

    scores = (_count(bottom_score, "bottom score", text), _count(top_score, "top score", text))
    board = torch.tensor(bottom_view, dtype=torch.int8)
    if not mover_is_bottom:
        board = flip_board(board)
        scores = scores[::-1]
    try:
        return XgPosition(
            board=board,
            dice=rolled,
            cube_value=1 << cube_log2,
            cube_owner=cube_owner,
            cube_action=cube_action,
            mover_score=scores[0],
            opponent_score=scores[1],
            match_length=match_length,
            crawford=crawford,
            jacoby=jacoby,
            beaver=beaver,
            max_cube=1 << limit_log2,
            mover_is_bottom=mover_is_bottom,
        )
    except ValueError as error:
        raise ValueError(f"XGID {text!r}: {error}") from None


def encode_xgid(position: XgPosition, *, prefix: bool = True) -> str:
    """The XGID text of ``position``, with the ``XGID=`` prefix unless ``prefix`` is False."""
    board = torch.tensor(position.board, dtype=torch.int8)
    bottom_view = board if position.mover_is_bottom else flip_board(board)
    scores = (position.mover_score, position.opponent_score)
    bottom_score, top_score = scores if position.mover_is_bottom else scores[::-1]
    if position.cube_owner == "centred":
        cube_position = 0
    else:
        owner_is_bottom = (position.cube_owner == "mover") == position.mover_is_bottom
        cube_position = 1 if owner_is_bottom else -1
    if position.cube_action != "none":
        dice = CUBE_ACTIONS[position.cube_action]
    else:
        dice = f"{position.dice[0]}{position.dice[1]}"
    if position.match_length:
        rules_code = int(position.crawford)
    else:
        rules_code = int(position.jacoby) | (int(position.beaver) << 1)
    fields = [
        _position_to_text(bottom_view.tolist()),
        str(position.cube_value.bit_length() - 1),
        str(cube_position),
        "1" if position.mover_is_bottom else "-1",
        dice,
        str(bottom_score),
        str(top_score),
        str(rules_code),
        str(position.match_length),
        str(position.max_cube.bit_length() - 1),
    ]
    return (XGID_PREFIX if prefix else "") + ":".join(fields)
