"""Every legal play for positions and dice, one JSON object per input line.

Input lines are ``<position-id> <dice>``, e.g. ``4HPwATDgc/ABMA 31`` (dice as ``31`` or ``3-1``),
from the arguments (``bgtrain moves 4HPwATDgc/ABMA 31``) or, with none, from standard input.
Each output line is ``{"position_id", "dice", "moves": [{"play", "position_id"}, ...]}``, where each
move's position ID is the position after the play, still from the mover's side. All lines are
generated in one batched call.

``--variant NAME`` plays a variant's rules (``engine.variants``: nackgammon, hypergammon, dutch,
acey-deucey, ...): a position ID cannot say which, and an ID with more checkers than the variant
has is an error naming it. A position ID holds no checkers in hand, so positions of the variants
whose checkers start off the board (dutch, acey-deucey) take a third field, ``hand=M,O``: the checkers
still in hand of the player on roll and of the opponent (``4HPwATDgc/ABMA`` style IDs count only the
checkers on the board and the bar; without the field the rest are borne off). For those variants every
move also has ``"in_hand": [M, O]`` after the play, from the same side. In acey-deucey each move also
has ``"extra_roll"``: true when the play (a 1-2 and a double played in full) rolls again.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from engine.movegen import legal_afterstates
from engine.notation import play_notations
from engine.position_id import (
    decode_position_id,
    encode_position_id,
    split_checkers_in_hand,
    with_checkers_in_hand,
)
from engine.variants import VARIANTS, get_rules


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("items", nargs="*", help="position ID and dice pairs; read from stdin when absent")
    parser.add_argument("--variant", default="backgammon", metavar="NAME",
                        help=f"rules variant (default backgammon): {', '.join(VARIANTS)}")


def parse_dice(text: str, where: str) -> tuple[int, int]:
    digits = text.replace("-", "")
    if len(digits) != 2 or not digits.isdigit() or not all("1" <= d <= "6" for d in digits):
        raise ValueError(f"{where}: dice {text!r} must be two digits 1..6, like 31 or 3-1")
    return int(digits[0]), int(digits[1])


HAND_PREFIX = "hand="


def parse_hand(text: str, where: str) -> tuple[int, int]:
    """``M,O`` (or ``hand=M,O``) -> (checkers in hand of the player on roll, of the opponent)."""
    counts = text.removeprefix(HAND_PREFIX).split(",")
    if len(counts) != 2 or not all(count.isdigit() for count in counts):
        raise ValueError(f"{where}: {text!r} must be hand=M,O with two counts of checkers in hand, like hand=15,15")
    return int(counts[0]), int(counts[1])


def read_requests(args: argparse.Namespace) -> list[tuple[str, tuple[int, int], tuple[int, int] | None, str]]:
    """``(position_id, dice, hand or None, where)`` per request, from the arguments or standard input."""
    if args.items:
        lines, tokens, index = [], args.items, 0
        while index < len(tokens):
            take = 3 if index + 2 < len(tokens) and tokens[index + 2].startswith(HAND_PREFIX) else 2
            if index + take > len(tokens):
                raise ValueError("arguments come in groups: <position-id> <dice> [hand=M,O]")
            lines.append((f"argument group {len(lines) + 1}", " ".join(tokens[index : index + take])))
            index += take
    else:
        lines = [(f"line {n}", text) for n, text in enumerate(sys.stdin, 1) if text.strip()]
    requests = []
    for where, text in lines:
        fields = text.split()
        if len(fields) not in (2, 3) or (len(fields) == 3 and not fields[2].startswith(HAND_PREFIX)):
            raise ValueError(f"{where}: expected '<position-id> <dice> [hand=M,O]', got {text.strip()!r}")
        hand = parse_hand(fields[2], where) if len(fields) == 3 else None
        requests.append((fields[0], parse_dice(fields[1], where), hand, where))
    return requests


def run(args: argparse.Namespace) -> int:
    rules = get_rules(args.variant)
    requests = read_requests(args)
    if not requests:
        return 0
    boards = []
    for position_id, _, hand, where in requests:
        try:
            board = decode_position_id(position_id, rules)
            boards.append(board if hand is None else with_checkers_in_hand(board, hand, rules))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    board = torch.stack(boards)
    dice = torch.tensor([roll for _, roll, _, _ in requests], dtype=torch.int8)
    afterstates = legal_afterstates(board, dice, rules)
    rows = afterstates.boards.tolist()
    extra_rolls = afterstates.extra_roll.tolist()
    offsets, counts = afterstates.offsets.tolist(), afterstates.counts.tolist()
    out = sys.stdout
    for index, (position_id, roll, hand, _) in enumerate(requests):
        before = board[index].tolist()
        mine = range(offsets[index], offsets[index] + counts[index])
        notations = play_notations(before, roll, rules)
        moves = []
        for row in mine:
            after = rows[row]
            # The ID holds the checkers on the board and the bar; "in_hand" holds the rest.
            on_board, in_hand = split_checkers_in_hand(after)
            move = {"play": notations[tuple(after)], "position_id": encode_position_id(on_board)}
            if rules.start_in_hand:
                move["in_hand"] = list(in_hand)
            if rules.acey_deucey:
                move["extra_roll"] = extra_rolls[row]
            moves.append(move)
        moves.sort(key=lambda move: (move["play"], move.get("extra_roll", False)))
        request = {"position_id": position_id, "dice": f"{roll[0]}{roll[1]}"}
        if hand is not None:
            request["hand"] = list(hand)
        out.write(json.dumps({**request, "moves": moves}) + "\n")
    return 0
