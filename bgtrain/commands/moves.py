"""Every legal play for positions and dice, one JSON object per input line.

Input lines are ``<position-id> <dice>``, e.g. ``4HPwATDgc/ABMA 31`` (dice as ``31`` or ``3-1``),
from the arguments (``bgtrain moves 4HPwATDgc/ABMA 31``) or, with none, from standard input.
Each output line is ``{"position_id", "dice", "moves": [{"play", "position_id"}, ...]}``, where each
move's position ID is the position after the play, still from the mover's side. All lines are
generated in one batched call.

``--variant NAME`` plays a variant's rules (``engine.variants``: nackgammon, hypergammon, dutch,
acey-deucey, ...): a position ID cannot say which, and an ID with more checkers than the variant
has is an error naming it. A position ID holds no checkers in hand, so positions of the variants
whose checkers start off the board can be given once all have entered. In acey-deucey each move
also has ``"extra_roll"``: true when the play (a 1-2 and a double played in full) rolls again.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from engine.movegen import legal_afterstates
from engine.notation import play_notations
from engine.position_id import decode_position_id, encode_position_id
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


def read_requests(args: argparse.Namespace) -> list[tuple[str, tuple[int, int], str]]:
    if args.items:
        tokens = args.items
        if len(tokens) % 2:
            raise ValueError("arguments come in pairs: <position-id> <dice>")
        lines = [(f"argument pair {i // 2 + 1}", f"{tokens[i]} {tokens[i + 1]}") for i in range(0, len(tokens), 2)]
    else:
        lines = [(f"line {n}", text) for n, text in enumerate(sys.stdin, 1) if text.strip()]
    requests = []
    for where, text in lines:
        fields = text.split()
        if len(fields) != 2:
            raise ValueError(f"{where}: expected '<position-id> <dice>', got {text.strip()!r}")
        requests.append((fields[0], parse_dice(fields[1], where), where))
    return requests


def run(args: argparse.Namespace) -> int:
    rules = get_rules(args.variant)
    requests = read_requests(args)
    if not requests:
        return 0
    boards = []
    for position_id, _, where in requests:
        try:
            boards.append(decode_position_id(position_id, rules))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    board = torch.stack(boards)
    dice = torch.tensor([roll for _, roll, _ in requests], dtype=torch.int8)
    afterstates = legal_afterstates(board, dice, rules)
    rows = afterstates.boards.tolist()
    extra_rolls = afterstates.extra_roll.tolist()
    offsets, counts = afterstates.offsets.tolist(), afterstates.counts.tolist()
    out = sys.stdout
    for index, (position_id, roll, _) in enumerate(requests):
        before = board[index].tolist()
        mine = range(offsets[index], offsets[index] + counts[index])
        notations = play_notations(before, roll, rules)
        moves = []
        for row in mine:
            move = {"play": notations[tuple(rows[row])], "position_id": encode_position_id(rows[row])}
            if rules.acey_deucey:
                move["extra_roll"] = extra_rolls[row]
            moves.append(move)
        moves.sort(key=lambda move: (move["play"], move.get("extra_roll", False)))
        out.write(json.dumps({"position_id": position_id, "dice": f"{roll[0]}{roll[1]}", "moves": moves}) + "\n")
    return 0
