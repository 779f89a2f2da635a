"""GNU Backgammon's ``.bm`` benchmark files (``contact.bm``, ``crashed.bm``, ``race.bm``): read and write.

The format, as GNU Backgammon's neural-net training tools read it (the ``perr`` script of the
original ``gnubg-nn`` training scripts, and ``gnubg_nn.training.referr``): text, one record a line,
fields separated by white space, the first field the record's kind:

``m KEY D1 D2 BEST [MOVE LOSS]...``
    a move decision: the position ``KEY`` with the roll ``D1 D2``, the best play ``BEST`` and any
    number of other plays, each with its equity loss against the best (rollout equities, cubeless
    money). Plays are written as the position key of the position after the play seen by the side
    to move next (what gnubg's ``bestmove(..., b=1)`` returns), so the opponent is on roll in it.
``o KEY P1 P2 P3 P4 P5``
    a cube decision with the five rollout probabilities: not a move decision, skipped here.
``#...``, ``s ...``, ``r ...``
    comments, settings and seed lines of the rollout program: skipped.

A position key is 20 letters ``A``..``P``: the 10 bytes of GNU Backgammon's position key (the same
80 bits a position ID holds in Base64, ``engine.position_id``), each byte as two letters, the high
four bits first (``'A' + nibble``). The start position is ``OAHDPAABDAOAHDPAABDA`` (position ID
``4HPwATDgc/ABMA``). For example, this line is the opening 31 with 8/5 6/5 best and two other plays
losing 0.166 and 0.173 (illustrative numbers)::

    m OAHDPAABDAOAHDPAABDA 3 1 LAGHPAABDAOAHDPAABDA OAHDOCABCIOAHDPAABDA 0.166 NAHDPAABCCOAHDPAABDA 0.173

A play that is not listed is charged the worst listed loss (the ``perr`` script charges the last
field of the line, the worst one in files sorted by loss; here the largest listed loss, which is the
same for sorted files). Every listed play is checked against the engine's legal plays of its position,
so a misread key or a line from the wrong side stops with an error naming the line.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path

import torch

from bgtrain.benchmark.decisions import FROM_FILE, DecisionSet, classes_of
from bgtrain.files import atomic_write
from engine.board import flip_board
from engine.movegen import legal_afterstates
from engine.position_id import decode_position_id, encode_position_id
from engine.position_kinds import PositionKind
from engine.rules import STANDARD

KEY_LENGTH = 20
KEY_LETTERS = "ABCDEFGHIJKLMNOP"
SKIPPED_RECORDS = ("o", "s", "r")  # cube decisions, settings, seeds
_MIX = 0x9E3779B97F4A7C15 % (1 << 62)  # an odd multiplier that spreads decision indices over the keys


def encode_position_key(board) -> str:
    """The 20-letter position key of a board (``int[28]``, seen from the side to move)."""
    key = base64.b64decode(encode_position_id(board) + "==")
    return "".join(KEY_LETTERS[byte >> 4] + KEY_LETTERS[byte & 15] for byte in key)


def decode_position_key(text: str) -> torch.Tensor:
    """The board ``int8[28]`` (from the side to move) of a 20-letter position key; a ValueError naming
    the problem (length, a letter outside A..P, an impossible position)."""
    if len(text) != KEY_LENGTH or any(letter not in KEY_LETTERS for letter in text):
        raise ValueError(f"position key {text!r}: must be {KEY_LENGTH} letters A to P")
    key = bytes(KEY_LETTERS.index(high) * 16 + KEY_LETTERS.index(low) for high, low in zip(text[0::2], text[1::2]))
    position_id = base64.b64encode(key).decode("ascii")[:14]
    try:
        return decode_position_id(position_id)
    except ValueError as error:
        raise ValueError(f"position key {text!r}: {str(error).split(': ', 1)[-1]}") from None


def _parse_move_line(fields: list[str], where: str) -> tuple[torch.Tensor, tuple[int, int], list, list]:
    if len(fields) < 5 or len(fields) % 2 == 0:
        raise ValueError(f"{where}: a move line is 'm KEY D1 D2 BEST [MOVE LOSS]...', not {len(fields)} fields")
    try:
        board = decode_position_key(fields[1])
        plays = [flip_board(decode_position_key(key)) for key in [fields[4], *fields[5::2]]]
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if not all(field.isdigit() and 1 <= int(field) <= 6 for field in fields[2:4]):
        raise ValueError(f"{where}: the dice {fields[2]} {fields[3]} must be two numbers from 1 to 6")
    try:
        losses = [0.0] + [float(field) for field in fields[6::2]]
    except ValueError:
        raise ValueError(f"{where}: an equity loss is not a number") from None
    if any(not loss >= 0.0 for loss in losses):
        raise ValueError(f"{where}: equity losses must be numbers >= 0")
    return board, (int(fields[2]), int(fields[3])), plays, losses


def parse_bm(lines: Iterable[str], name: str = "<bm>") -> DecisionSet:
    """The move decisions of ``.bm`` lines (see the module docstring); ``name`` labels errors."""
    boards, rolls, candidates, losses, counts, numbers = [], [], [], [], [], []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or fields[0].startswith("#") or fields[0] in SKIPPED_RECORDS:
            continue
        where = f"{name}:{number}"
        if fields[0] != "m":
            raise ValueError(f"{where}: unknown record {fields[0]!r} (expected m, o, s, r or #)")
        board, roll, plays, play_losses = _parse_move_line(fields, where)
        boards.append(board)
        rolls.append(roll)
        candidates += plays
        losses += play_losses
        counts.append(len(plays))
        numbers.append(number)
    if not boards:
        raise ValueError(f"{name}: no move decisions ('m' lines)")
    board = torch.stack(boards)
    dice = torch.sort(torch.tensor(rolls, dtype=torch.int8), dim=1, descending=True).values
    candidate = torch.stack(candidates)
    counts_tensor = torch.tensor(counts, dtype=torch.int64)
    _check_legal(board, dice, candidate, counts_tensor, numbers, name)
    kind = classes_of(board)
    over = kind == PositionKind.OVER
    if bool(over.any()):
        line = numbers[int(over.nonzero()[0])]
        raise ValueError(f"{name}:{line}: the game is over in this position")
    order = _sorted_within(counts_tensor, torch.tensor(losses, dtype=torch.float32))
    return DecisionSet(
        board=board, dice=dice, kind=kind.to(torch.int8),
        source=torch.full((board.shape[0],), FROM_FILE, dtype=torch.int8),
        counts=counts_tensor, candidate=candidate[order], loss=torch.tensor(losses, dtype=torch.float32)[order],
        equity=torch.full((candidate.shape[0],), float("nan"), dtype=torch.float32),
    )


def _sorted_within(counts: torch.Tensor, losses: torch.Tensor) -> torch.Tensor:
    """A permutation that orders each decision's candidates by loss, best first (stable)."""
    owner = torch.repeat_interleave(torch.arange(counts.numel()), counts).double()
    return torch.argsort(owner * 1e6 + losses.double(), stable=True)


def _keys(boards: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
    """A 64-bit key per (decision, board) pair: a polynomial hash of the 28 counts mixed with the
    decision's index (a collision could only let a wrong play through the check, never reject one)."""
    powers = torch.tensor([pow(1_000_003, column, 1 << 62) for column in range(boards.shape[1])], dtype=torch.int64)
    # int64 arithmetic wraps around, which a hash may do.
    return (boards.to(torch.int64) * powers).sum(1) * 31 + owner.to(torch.int64) * _MIX


def _check_legal(board, dice, candidate, counts, numbers, name: str) -> None:
    """Every listed play must be a legal afterstate of its position, and listed once (batched: each
    (decision, play) pair is looked up by its key among the (decision, legal afterstate) keys)."""
    afterstates = legal_afterstates(board, dice, STANDARD)
    owner = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    keys = _keys(candidate, owner)
    legal = torch.isin(keys, _keys(afterstates.boards, afterstates.position))
    if not bool(legal.all()):
        decision = int(owner[(~legal).nonzero()[0]])
        roll = dice[decision].tolist()
        raise ValueError(f"{name}:{numbers[decision]}: a listed play is not a legal play of position "
                         f"{encode_position_key(board[decision])} with {roll[0]}-{roll[1]}")
    distinct, first = torch.unique(keys, return_counts=True)
    if bool((first > 1).any()):
        decision = int(owner[torch.isin(keys, distinct[first > 1]).nonzero()[0]])
        raise ValueError(f"{name}:{numbers[decision]}: a play is listed twice")


def read_bm(path: str | Path) -> DecisionSet:
    """The move decisions of a ``.bm`` file."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"benchmark file {str(path)!r} is a directory, not a .bm file")
    if not path.is_file():
        raise FileNotFoundError(f"benchmark file {str(path)!r} does not exist")
    try:
        with path.open(encoding="utf-8") as handle:
            return parse_bm(handle, path.name)
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise ValueError(f"{path.name}:{line}: not text (byte 0x{error.object[error.start]:02x} is not UTF-8); "
                         "a .bm file is GNU Backgammon's text format") from None


def format_bm(decisions: DecisionSet) -> str:
    """``decisions`` as ``.bm`` move lines (losses with 6 decimals), each decision's best play first."""
    lines = []
    for decision, start in enumerate(decisions.offsets.tolist()):
        count = int(decisions.counts[decision])
        rows = range(start, start + count)
        order = sorted(rows, key=lambda row: float(decisions.loss[row]))
        die1, die2 = decisions.dice[decision].tolist()
        keys = [encode_position_key(flip_board(decisions.candidate[row])) for row in order]
        fields = ["m", encode_position_key(decisions.board[decision]), str(die1), str(die2), keys[0]]
        for key, row in zip(keys[1:], order[1:]):
            fields += [key, f"{float(decisions.loss[row]):.6f}"]
        lines.append(" ".join(fields))
    return "\n".join(lines) + "\n"


def write_bm(decisions: DecisionSet, path: str | Path) -> Path:
    """Write ``decisions`` as a ``.bm`` file, atomically."""
    return atomic_write(path, format_bm(decisions).encode())
