"""Every legal play for positions and dice, one JSON object per input line.

Input lines are ``<position-id> <dice>``, e.g. ``4HPwATDgc/ABMA 31`` (dice as ``31`` or ``3-1``),
from the arguments (``bgtrain moves 4HPwATDgc/ABMA 31``) or, with none, from standard input.
Each output line is ``{"position_id", "dice", "moves": [{"play", "position_id"}, ...]}``, where each
move's position ID is the position after the play, still from the mover's side. Input is read and
answered in batches of ``--batch`` lines (4,096 by default), each generated in one batched call and
written before the next is read, so memory stays bounded and output starts at once; when the input
pauses, the lines that have arrived are answered at once (a program can write one line into an open
pipe and wait for its answer). A bad line ends
the command with one error line naming it, after the answers of the batches before it.

``--variant NAME`` plays a variant's rules (``engine.variants``: nackgammon, hypergammon, dutch,
acey-deucey, ...): a position ID cannot say which, and an ID with more checkers than the variant
has is an error naming it. A position ID holds no checkers in hand, so positions of the variants
whose checkers start off the board (dutch, acey-deucey) take a third field, ``hand=M,O``: the checkers
still in hand of the player on roll and of the opponent (``4HPwATDgc/ABMA`` style IDs count only the
checkers on the board and the bar; without the field the rest are borne off). For those variants every
move also has ``"in_hand": [M, O]`` after the play, from the same side. In acey-deucey each move also
has ``"extra_roll"``: true when the play (a 1-2 and a double played in full) rolls again.

When the reader stops early (``bgtrain moves < big.txt | head``) the command stops quietly with status 141.
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import os
import re
import select
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from bgtrain.commands import add_variant, positive_int
from engine.batch_notation import play_words
from engine.kernels import op_by_op_unless_asked
from engine.movegen import legal_afterstates
from engine.parsing import HAND_PREFIX, parse_moves_request
from engine.position_id import (
    decode_position_id,
    decode_position_ids,
    position_id_characters,
    with_checkers_in_hand,
    with_checkers_in_hand_rows,
)
from engine.rules import Rules
from engine.variants import get_rules

BATCH_LINES = 4096

# One request: (position ID, dice, checkers in hand or None, where it was written, for errors).
Request = tuple[str, tuple[int, int], "tuple[int, int] | None", str]

# The dice fields of a line that ``engine.parsing.parse_dice`` reads, by their text: a line of a position
# ID and one of these is read without the parser (the ID is checked when it is decoded).
_ROLLS = {f"{first}{separator}{second}": (first, second)
          for first in range(1, 7) for second in range(1, 7) for separator in ("", "-")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("items", nargs="*", help="position ID and dice pairs; read from stdin when absent")
    add_variant(parser)
    parser.add_argument("--batch", type=positive_int, default=BATCH_LINES,
                        help=f"input lines generated per batched call (default {BATCH_LINES})")


def _argument_lines(tokens: list[str]) -> Iterator[tuple[str, str]]:
    index, group = 0, 0
    while index < len(tokens):
        take = 3 if index + 2 < len(tokens) and tokens[index + 2].startswith(HAND_PREFIX) else 2
        if index + take > len(tokens):
            raise ValueError("arguments come in groups: <position-id> <dice> [hand=M,O]")
        group += 1
        yield f"argument group {group}", " ".join(tokens[index : index + take])
        index += take


def read_requests(items: list[str], stream: Iterable[str], first_line: int = 1) -> Iterator[Request]:
    """The requests of the arguments or, with none, of the lines of ``stream`` (numbered from
    ``first_line``), one at a time."""
    lines = _argument_lines(items) if items else ((f"line {n}", text) for n, text in enumerate(stream, first_line))
    for where, text in lines:
        fields = text.split()
        if len(fields) == 2 and (roll := _ROLLS.get(fields[1])) is not None:
            yield fields[0], roll, None, where
        elif fields:
            request = parse_moves_request(text, where)
            yield request.position_id, request.dice, request.hand, where


@dataclass(frozen=True)
class RequestBatch:
    """Up to ``--batch`` requests as columns: position IDs, rolls, checkers in hand (None for a line without),
    and where each was written, for errors."""

    position_ids: Sequence[str]
    rolls: Sequence[tuple[int, int]]
    hands: Sequence[tuple[int, int] | None]
    wheres: Sequence[str]

    @classmethod
    def of(cls, requests: list[Request]) -> RequestBatch:
        return cls(*zip(*requests))


# A line as the bench and most tools write it, "<14 characters> <two dice>": a batch of only such lines is
# read by one regular expression; any other batch line by line (``read_requests``), with the same answers.
_PLAIN_LINE = re.compile(r"^(\S{14}) ([1-6][1-6])$", re.MULTILINE)


def read_batches(items: list[str], stream: Iterable[str], size: int) -> Iterator[RequestBatch]:
    """The requests of ``read_requests(items, stream)``, ``size`` lines at a time (fewer where lines are
    blank)."""
    if items:
        requests = read_requests(items, ())
        while batch := list(itertools.islice(requests, size)):
            yield RequestBatch.of(batch)
        return
    first_line = 1
    for lines in line_batches(stream, size):
        matches = _PLAIN_LINE.findall("".join(lines))
        if len(matches) == len(lines):  # one match a line at most, so every line is plain
            position_ids, dice = zip(*matches)
            yield RequestBatch(position_ids, list(map(_ROLLS.__getitem__, dice)), [None] * len(lines),
                               [f"line {number}" for number in range(first_line, first_line + len(lines))])
        elif requests := list(read_requests([], lines, first_line)):
            yield RequestBatch.of(requests)
        first_line += len(lines)


def line_batches(stream, size: int) -> Iterator[list[str]]:
    """The lines of ``stream`` in lists of at most ``size``: full lists while input flows, and whatever
    complete lines have arrived whenever it pauses, so that a program that writes one line into an open
    pipe and waits gets its answer at once. A stream without a file descriptor (a test's StringIO) is read
    ``size`` lines at a time."""
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        stream = iter(stream)
        while lines := list(itertools.islice(stream, size)):
            yield lines
        return
    pending: list[str] = []
    partial = bytearray()  # the unfinished last line (a bytearray: appending to it is amortised O(1))
    while True:
        # Wait for input only when no line is waiting for an answer; otherwise answer what has come.
        if pending and not select.select([descriptor], [], [], 0)[0]:
            yield pending
            pending = []
            continue
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:  # end of input: the last line may lack its newline
            if partial:
                pending.append(partial.decode("utf-8", "surrogateescape"))
            for start in range(0, len(pending), size):
                yield pending[start : start + size]
            return
        start = len(partial)
        partial += chunk
        end = partial.rfind(b"\n", start)
        if end >= 0:
            pending += partial[: end + 1].decode("utf-8", "surrogateescape").splitlines(keepends=True)
            del partial[: end + 1]
        while len(pending) >= size:
            yield pending[:size]
            pending = pending[size:]


def _boards(position_ids: Sequence[str], hands: Sequence, wheres: Sequence[str], rules: Rules) -> torch.Tensor:
    """``int8[B, 28]``: the decoded positions, checkers in hand put in. A batch with a bad field is decoded
    again one line at a time, which names the line."""
    try:
        board = decode_position_ids(position_ids, rules)
        holding = [index for index, hand in enumerate(hands) if hand is not None]
        if holding:
            counts = torch.tensor([hands[index] for index in holding], dtype=torch.int64)
            board[holding] = with_checkers_in_hand_rows(board[holding], counts, rules)
        return board
    except ValueError:
        pass
    boards = []
    for position_id, hand, where in zip(position_ids, hands, wheres):
        try:
            board = decode_position_id(position_id, rules)
            boards.append(board if hand is None else with_checkers_in_hand(board, hand, rules))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    return torch.stack(boards)


def _play_order(position: np.ndarray, words: np.ndarray, extra_roll: np.ndarray | None) -> np.ndarray:
    """The order of the afterstates that sorts each position's plays by notation (word numbers follow the
    order of the words' texts), then extra roll: one sort of one integer key when the numbers fit 62
    bits, else a sort on each column (``np.lexsort``: the same order)."""
    columns = [position, *words, *([] if extra_roll is None else [extra_roll.astype(np.int64)])]
    widths = [int(column.max(initial=0)).bit_length() for column in columns]
    if sum(widths) > 62:
        return np.lexsort(columns[::-1])
    key = np.zeros(len(position), dtype=np.int64)
    for column, width in zip(columns, widths):
        key = key << width | column
    return np.argsort(key, kind="stable")


_PLAY = b'{"play": "'
_POSITION_ID = b'", "position_id": "'
_END = b'"}'
_SEPARATOR = b", \0"  # after every move but a line's last, which ends the line
_LINE_END = b"]}\n"


def _byte_rows(fields: list, count: int) -> np.ndarray:
    """``uint8[count, w]``: the fields side by side, each a constant (``bytes``) or ``uint8[count, w_k]``."""
    fields = [np.frombuffer(field, dtype=np.uint8) if isinstance(field, bytes) else field for field in fields]
    rows = np.zeros((count, sum(field.shape[-1] for field in fields)), dtype=np.uint8)
    column = 0
    for field in fields:
        rows[:, column : column + field.shape[-1]] = field
        column += field.shape[-1]
    return rows


def _digits(counts: np.ndarray) -> np.ndarray:
    """``uint8[N, 2]``: each count below 100 in decimal ASCII, a NUL for the tens of one below 10."""
    return np.stack([np.where(counts >= 10, ord("0") + counts // 10, 0), ord("0") + counts % 10], 1).astype(np.uint8)


def _line_starts(batch: RequestBatch, counts: np.ndarray) -> np.ndarray:
    """``uint8[B, w]``: each line up to its first move, ``{"position_id": "…", "dice": "31", ["hand": [M, O],
    ]"moves": [``, and ``]}`` and the newline for a line without moves. NUL-padded."""
    count = len(batch.position_ids)
    ids = np.frombuffer("".join(batch.position_ids).encode("ascii"), dtype=np.uint8).reshape(count, -1)
    fields = [b'{"position_id": "', ids, b'", "dice": "', np.array(batch.rolls, dtype=np.uint8) + ord("0"), b'", ']
    holding = np.array([hand is not None for hand in batch.hands])
    if holding.any():
        hands = np.array([hand or (0, 0) for hand in batch.hands], dtype=np.int64)
        hand = _byte_rows([b'"hand": [', _digits(hands[:, 0]), b", ", _digits(hands[:, 1]), b"], "], count)
        hand[~holding] = 0
        fields.append(hand)
    ends = np.zeros((count, len(_LINE_END)), dtype=np.uint8)
    ends[counts == 0] = np.frombuffer(_LINE_END, dtype=np.uint8)
    return _byte_rows([*fields, b'"moves": [', ends], count)


def _move_ends(boards: np.ndarray, extra_roll: np.ndarray | None, rules: Rules) -> np.ndarray:
    """``uint8[N, w]``: how each move ends after its position ID: ``"}``, with its checkers in hand and extra
    roll before the brace in the variants that have them, NUL-padded."""
    hand = np.zeros((len(boards), 2), dtype=np.int64)
    if rules.start_in_hand:
        hand = np.stack([boards[:, 26], -boards[:, 27]], 1).astype(np.int64)  # at most 15 each
    flag = np.zeros(len(boards), dtype=np.int64) if extra_roll is None else extra_roll.astype(np.int64)
    code = (hand[:, 0] * 16 + hand[:, 1]) * 2 + flag
    present = np.zeros(16 * 16 * 2, dtype=bool)
    present[code] = True
    texts = [b""] * len(present)
    for value in np.flatnonzero(present).tolist():
        mine, theirs, extra = value // 32, value // 2 % 16, value % 2
        in_hand = f', "in_hand": [{mine}, {theirs}]' if rules.start_in_hand else ""
        roll = "" if extra_roll is None else f', "extra_roll": {"true" if extra else "false"}'
        texts[value] = f'"{in_hand}{roll}}}'.encode("ascii")
    width = max(map(len, texts))
    table = np.frombuffer(b"".join(text.ljust(width, b"\0") for text in texts), dtype=np.uint8).reshape(-1, width)
    return table[code]


def answer_batch(batch: RequestBatch, rules: Rules) -> str:
    """The JSON lines of the requests, from one batched move generation and one batched notation.

    The lines are the text ``json.dumps`` writes for ``{"position_id", "dice", ["hand",] "moves"}``, each
    move ``{"play", "position_id"[, "in_hand"][, "extra_roll"]}``, sorted by play (then extra roll), but
    written in bulk: every string in them is a position ID or a notation, which JSON writes as is. Each
    move is a row of one byte matrix, written field by field for the whole batch, and each line's start a
    row before its moves; fields of varying length are padded with NUL bytes, deleted once at the end.
    Tested byte for byte against ``json.dumps``."""
    board = _boards(batch.position_ids, batch.hands, batch.wheres, rules)
    dice = torch.tensor(batch.rolls, dtype=torch.int8)
    afterstates = legal_afterstates(board, dice, rules)
    words = play_words(board, dice, afterstates, rules)
    extra_roll = afterstates.extra_roll.cpu().numpy() if rules.acey_deucey else None
    order = _play_order(afterstates.position.cpu().numpy(), words.words, extra_roll)
    boards = afterstates.boards.cpu()
    # The IDs hold the checkers on the board and the bar; "in_hand" holds the rest.
    identities = position_id_characters(boards)[order]
    if rules.start_in_hand or rules.acey_deucey:
        ends = _move_ends(boards.numpy()[order], None if extra_roll is None else extra_roll[order], rules)
    else:
        ends = _END
    counts, offsets = afterstates.counts.cpu().numpy(), afterstates.offsets.cpu().numpy()
    moves = _byte_rows([_PLAY, *words.fields(order), _POSITION_ID, identities, ends, _SEPARATOR], len(order))
    moves[(offsets + counts - 1)[counts > 0], -len(_LINE_END):] = np.frombuffer(_LINE_END, dtype=np.uint8)
    starts = _line_starts(batch, counts)
    width = max(moves.shape[1], starts.shape[1])
    moves = np.pad(moves, ((0, 0), (0, width - moves.shape[1])))
    lines = np.insert(moves, offsets, np.pad(starts, ((0, 0), (0, width - starts.shape[1]))), axis=0)
    return lines.tobytes().translate(None, b"\0").decode("ascii")


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def _reuse_freed_memory() -> None:
    """Let glibc's malloc keep freed blocks of up to 32 MB for reuse rather than give them back to the
    system: each batch allocates arrays of megabytes, and fresh pages cost a fault each (measured, 100,000
    lines: 200,000 page faults and 10 % more time, 60,000 with this). Memory stays bounded: each batch
    reuses what the last one freed. Nothing happens without glibc."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # the largest glibc accepts on 64-bit systems
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)


def run(args: argparse.Namespace) -> int:
    # Compiling the move generator costs seconds and saves a fraction of a second per 100,000 lines:
    # unless BGTRAIN_COMPILE asks for it, this command runs op by op (and leaves the mode as it found it).
    with op_by_op_unless_asked():
        rules = get_rules(args.variant)
        _reuse_freed_memory()
        out = sys.stdout
        for batch in read_batches(args.items, sys.stdin, args.batch):
            out.write(answer_batch(batch, rules))
            out.flush()
        return 0
