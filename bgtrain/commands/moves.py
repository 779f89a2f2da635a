"""Every legal play for positions and dice, one JSON object per input line.

Input lines are ``<position-id> <dice>``, e.g. ``4HPwATDgc/ABMA 31`` (dice as ``31`` or ``3-1``),
from the arguments (``bgtrain moves 4HPwATDgc/ABMA 31``) or, with none, from standard input.
Each output line is ``{"position_id", "dice", "moves": [{"play", "position_id"}, ...]}``, where each
move's position ID is the position after the play, still from the mover's side. Input is read and
answered in batches of ``--batch`` lines (4,096 by default), each generated in one batched call and
written before the next is read, so memory stays bounded and output starts at once. A bad line ends
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
import itertools
import operator
import os
import sys
from collections.abc import Iterable, Iterator

import torch

from bgtrain.commands import add_variant, positive_int
from engine.batch_notation import distinct_play_notations
from engine.kernels import ENVIRONMENT_VARIABLE, set_mode
from engine.movegen import legal_afterstates
from engine.parsing import HAND_PREFIX, MovesRequest, parse_moves_request
from engine.position_id import (
    decode_position_id,
    decode_position_ids,
    encode_position_ids,
    with_checkers_in_hand,
    with_checkers_in_hand_rows,
)
from engine.rules import Rules
from engine.variants import get_rules

BATCH_LINES = 4096


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


def read_requests(items: list[str], stream: Iterable[str]) -> Iterator[MovesRequest]:
    """The requests of the arguments or, with none, of the lines of ``stream``, one at a time."""
    lines = _argument_lines(items) if items else ((f"line {n}", text) for n, text in enumerate(stream, 1))
    for where, text in lines:
        if text.strip():
            yield parse_moves_request(text, where)


def _boards(requests: list[MovesRequest], rules: Rules) -> torch.Tensor:
    """``int8[B, 28]``: the decoded positions, checkers in hand put in. A batch with a bad field is decoded
    again one line at a time, which names the line."""
    try:
        board = decode_position_ids([request.position_id for request in requests], rules)
        holding = [index for index, request in enumerate(requests) if request.hand is not None]
        if holding:
            hands = torch.tensor([requests[index].hand for index in holding], dtype=torch.int64)
            board[holding] = with_checkers_in_hand_rows(board[holding], hands, rules)
        return board
    except ValueError:
        pass
    boards = []
    for request in requests:
        try:
            board = decode_position_id(request.position_id, rules)
            boards.append(board if request.hand is None else with_checkers_in_hand(board, request.hand, rules))
        except ValueError as error:
            raise ValueError(f"{request.where}: {error}") from None
    return torch.stack(boards)


def _move_end(hand: list[int] | None, extra_roll: bool | None) -> str:
    in_hand = "" if hand is None else f', "in_hand": [{hand[0]}, {-hand[1]}]'
    return f'"{in_hand}' + ("}" if extra_roll is None else f', "extra_roll": {"true" if extra_roll else "false"}}}')


def answer_batch(requests: list[MovesRequest], rules: Rules) -> list[str]:
    """The JSON line of each request, from one batched move generation and one batched notation.

    The lines are the text ``json.dumps`` writes for ``{"position_id", "dice", ["hand",] "moves"}``, each
    move ``{"play", "position_id"[, "in_hand"][, "extra_roll"]}``, sorted by play (then extra roll), but
    joined from pieces: every string in them is a position ID or a notation, which JSON writes as is.
    Tested byte for byte against ``json.dumps``."""
    board = _boards(requests, rules)
    dice = torch.tensor([request.dice for request in requests], dtype=torch.int8)
    afterstates = legal_afterstates(board, dice, rules)
    texts, notation = distinct_play_notations(board, dice, afterstates, rules)
    # Sort each request's moves by (play, extra roll): one stable sort of the whole batch, as the
    # rows of a request are contiguous.
    rank = torch.empty(len(texts), dtype=torch.int64)
    rank[sorted(range(len(texts)), key=texts.__getitem__)] = torch.arange(len(texts))
    extra_roll = afterstates.extra_roll.cpu().to(torch.int64) if rules.acey_deucey else 0
    key = (afterstates.position.cpu() * len(texts) + rank[notation]) * 2 + extra_roll
    order = torch.sort(key, stable=True).indices
    boards = afterstates.boards.cpu()[order]
    # The IDs hold the checkers on the board and the bar; "in_hand" holds the rest.
    position_ids = encode_position_ids(boards[:, :26])
    openings = [f'{{"play": "{text}", "position_id": "' for text in texts]
    pieces = list(map(operator.add, map(openings.__getitem__, notation[order].tolist()), position_ids))
    if rules.start_in_hand or rules.acey_deucey:
        hands = boards[:, 26:].tolist() if rules.start_in_hand else itertools.repeat(None)
        flags = afterstates.extra_roll.cpu()[order].tolist() if rules.acey_deucey else itertools.repeat(None)
        moves = [piece + _move_end(hand, flag) for piece, hand, flag in zip(pieces, hands, flags)]
        separator, last = ", ", ""
    else:
        # Every move then ends '"}': written by the separators rather than appended to each move.
        moves, separator, last = pieces, '"}, ', '"}'
    offsets, counts = afterstates.offsets.tolist(), afterstates.counts.tolist()
    lines = []
    for request, offset, count in zip(requests, offsets, counts):
        hand = "" if request.hand is None else f'"hand": [{request.hand[0]}, {request.hand[1]}], '
        body = separator.join(moves[offset : offset + count]) + last if count else ""
        lines.append(f'{{"position_id": "{request.position_id}", "dice": "{request.dice[0]}{request.dice[1]}", '
                     f'{hand}"moves": [{body}]}}\n')
    return lines


def run(args: argparse.Namespace) -> int:
    # Compiling the move generator costs seconds and saves a fraction of a second per 100,000 lines:
    # unless BGTRAIN_COMPILE asks for it, this command runs op by op (and leaves the mode as it found it).
    previous = None if ENVIRONMENT_VARIABLE in os.environ else set_mode("never")
    try:
        rules = get_rules(args.variant)
        requests = read_requests(args.items, sys.stdin)
        out = sys.stdout
        while batch := list(itertools.islice(requests, args.batch)):
            out.writelines(answer_batch(batch, rules))
            out.flush()
        return 0
    finally:
        if previous is not None:
            set_mode(previous)
