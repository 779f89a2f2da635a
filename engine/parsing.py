"""Reading what a user types: positions (GNU position ID, ``ID:matchID``, XGID), dice and checkers in
hand. Every problem is a ValueError of one line that names the field (``where``) and quotes the input,
cut short when it is long. The command line (``bgtrain eval``, ``bgtrain moves``) uses these alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.match_id import decode_match_id
from engine.position_id import POSITION_ID_LENGTH, decode_position_id
from engine.rules import STANDARD, Rules
from engine.xgid import XGID_FIELDS, XGID_PREFIX, decode_xgid

HAND_PREFIX = "hand="
QUOTE_LIMIT = 60  # characters of a user's input quoted in an error


def quote(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``repr`` of ``text``, cut to ``limit`` characters with an ellipsis (errors stay one short line)."""
    text = text.strip()
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def _count(text: str) -> int | None:
    """A count written in ASCII digits, else None (``str.isdigit`` also accepts ``²`` and other digits)."""
    return int(text) if text.isascii() and text.isdecimal() else None


def parse_dice(text: str, where: str = "dice") -> tuple[int, int]:
    """``31`` or ``3-1`` -> (3, 1)."""
    digits = text.replace("-", "")
    if len(digits) != 2 or digits[0] not in "123456" or digits[1] not in "123456":
        raise ValueError(f"{where}: dice {quote(text)} must be two digits 1..6, like 31 or 3-1")
    return int(digits[0]), int(digits[1])


def parse_hand(text: str, where: str = "hand") -> tuple[int, int]:
    """``M,O`` (or ``hand=M,O``) -> (checkers in hand of the player on roll, of the opponent)."""
    counts = [_count(part) for part in text.removeprefix(HAND_PREFIX).split(",")]
    if len(counts) != 2 or None in counts:
        raise ValueError(f"{where}: {quote(text)} must be hand=M,O with two counts of checkers in hand, "
                         "like hand=15,15")
    return counts[0], counts[1]


@dataclass(frozen=True)
class CubeSetting:
    """The cube and score as the input wrote them (None: not said)."""

    value: int | None = None
    owner: str | None = None  # "centred", "mover" or "opponent"
    match_length: int | None = None
    score: tuple[int, int] | None = None  # (player on roll, opponent)
    crawford: bool | None = None
    jacoby: bool | None = None
    beavers: bool | None = None


@dataclass(frozen=True)
class ParsedPosition:
    board: torch.Tensor  # int8[28], from the player on roll
    dice: tuple[int, int] | None  # the roll written in the input, if any
    kind: str  # "xgid", "position_id" or "position_id:match_id"
    setting: CubeSetting


def parse_position(text: str, rules: Rules = STANDARD) -> ParsedPosition:
    """A position as GNU Backgammon or eXtreme Gammon writes it: an XGID (``XGID=`` optional), a position
    ID, or a position ID and a match ID joined by ``:``."""
    text = text.strip()
    if text.startswith(XGID_PREFIX) or text.count(":") == XGID_FIELDS - 1:
        position = decode_xgid(text, rules)
        setting = CubeSetting(
            value=position.cube_value,
            owner=position.cube_owner,
            match_length=position.match_length,
            score=(position.mover_score, position.opponent_score),
            crawford=position.crawford,
            jacoby=position.jacoby,
            beavers=position.beaver,
        )
        dice = position.dice if position.dice != (0, 0) else None
        return ParsedPosition(position.board_tensor(), dice, "xgid", setting)
    position_text, _, match_text = text.partition(":")
    if len(position_text) == POSITION_ID_LENGTH and ":" not in match_text:
        board = decode_position_id(position_text, rules)
        if not match_text:
            return ParsedPosition(board, None, "position_id", CubeSetting())
        match = decode_match_id(match_text)
        mover = match.player_on_roll
        owner = "centred" if match.cube_owner == "centred" else (
            "mover" if match.cube_owner == f"player{mover}" else "opponent")
        setting = CubeSetting(
            value=match.cube_value,
            owner=owner,
            match_length=match.match_length,
            score=(match.score[mover], match.score[1 - mover]),
            crawford=match.crawford,
            jacoby=match.jacoby,
        )
        dice = match.dice if match.dice != (0, 0) else None
        return ParsedPosition(board, dice, "position_id:match_id", setting)
    raise ValueError(
        f"position {quote(text)} is neither a GNU Backgammon position ID ({POSITION_ID_LENGTH} characters, "
        f"like 4HPwATDgc/ABMA, optionally followed by ':' and a match ID) nor an XGID "
        f"({XGID_FIELDS} fields separated by ':')"
    )


@dataclass(frozen=True)
class MovesRequest:
    """One line of ``bgtrain moves``: ``<position-id> <dice> [hand=M,O]``."""

    position_id: str
    dice: tuple[int, int]
    hand: tuple[int, int] | None
    where: str  # "line 7" or "argument group 2", for errors


def parse_moves_request(text: str, where: str) -> MovesRequest:
    fields = text.split()
    if len(fields) not in (2, 3) or (len(fields) == 3 and not fields[2].startswith(HAND_PREFIX)):
        raise ValueError(f"{where}: expected '<position-id> <dice> [hand=M,O]', got {quote(text)}")
    hand = parse_hand(fields[2], where) if len(fields) == 3 else None
    return MovesRequest(fields[0], parse_dice(fields[1], where), hand, where)
