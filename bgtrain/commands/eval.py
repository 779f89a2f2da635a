"""Evaluate a position with a trained model: outcome probabilities, cubeless equity and, with dice, the
ranked legal plays (as GNU Backgammon's ``eval`` and ``hint``).

    bgtrain eval POSITION [--dice 31] [--ply N] [--model PATH] [--json]

POSITION is a GNU Backgammon position ID (``4HPwATDgc/ABMA``) or an XGID (``XGID=-b----E-C---eE---c-e----B-:
0:0:1:31:0:0:0:0:10``, the ``XGID=`` prefix optional); the side to move is the player on roll. Dice come
from ``--dice``, else from the XGID when it has a roll. Everything is cubeless and from the side to move.

``--ply N`` searches N plies deep (GNU Backgammon's numbering: 0 is the network alone; 1 and 2 take
a fraction of a second; every further ply costs about 20 times more). ``--model`` defaults to
``checkpoints/bgtrain-default.pt``. ``--json`` prints one JSON object with the same content.
Exact bear-off values come from the bear-off database, built once into the cache on first use.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from bgtrain.commands.moves import parse_dice
from bgtrain.evaluator import Evaluator, HintMove
from bgtrain.outcomes import cubeless_equity
from engine.drawing import draw_board
from engine.position_id import POSITION_ID_LENGTH, decode_position_id, encode_position_id
from engine.rules import STANDARD
from engine.xgid import XGID_FIELDS, XGID_PREFIX, decode_xgid

DEFAULT_MODEL = Path("checkpoints") / "bgtrain-default.pt"
OUTCOME_NAMES = ("win", "win_gammon", "win_backgammon", "lose_gammon", "lose_backgammon")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("position", metavar="POSITION", help="GNU Backgammon position ID or XGID")
    parser.add_argument("--dice", help="the roll to play, e.g. 31 or 3-1 (default: the XGID's roll, if any)")
    parser.add_argument("--ply", type=int, default=0, help="search depth, GNU numbering (default 0)")
    parser.add_argument("--model", help=f"checkpoint to evaluate with (default {DEFAULT_MODEL})")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def default_model() -> Path:
    """``checkpoints/bgtrain-default.pt`` in the working directory, else in the source checkout."""
    for candidate in (DEFAULT_MODEL, Path(__file__).resolve().parents[2] / DEFAULT_MODEL):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no model: pass --model PATH (the default {DEFAULT_MODEL} does not exist)")


def parse_position(text: str) -> tuple[torch.Tensor, tuple[int, int] | None, str]:
    """(board ``int8[28]`` from the player on roll, the roll written in it or None, its kind)."""
    text = text.strip()
    if text.startswith(XGID_PREFIX) or text.count(":") == XGID_FIELDS - 1:
        position = decode_xgid(text, STANDARD)
        dice = position.dice if position.dice != (0, 0) else None
        return position.board_tensor(), dice, "xgid"
    if len(text) == POSITION_ID_LENGTH and ":" not in text:
        return decode_position_id(text, STANDARD), None, "position_id"
    raise ValueError(
        f"position {text!r} is neither a GNU Backgammon position ID ({POSITION_ID_LENGTH} characters, "
        f"like 4HPwATDgc/ABMA) nor an XGID ({XGID_FIELDS} fields separated by ':')"
    )


def _probabilities(values) -> dict[str, float]:
    return {name: round(float(value), 6) for name, value in zip(OUTCOME_NAMES, values)}


def build_report(args: argparse.Namespace) -> dict:
    """Everything the command shows, as plain data; sections appear in this order in text and JSON."""
    if args.ply < 0:
        raise ValueError(f"--ply must be >= 0, not {args.ply}")
    board, position_dice, kind = parse_position(args.position)
    dice = parse_dice(args.dice, "--dice") if args.dice else position_dice
    model = Path(args.model) if args.model else default_model()
    device = torch.device(args.device)
    evaluator = Evaluator.from_path(model, device)
    boards = board.unsqueeze(0).to(device)

    report: dict = {
        "position": {
            "input": args.position,
            "format": kind,
            "position_id": encode_position_id(board),
            "board": board.tolist(),
            "dice": list(dice) if dice else None,
        },
        "model": str(model),
        "ply": args.ply,
        "move_filter": {"keep": evaluator.move_filter.keep, "threshold": evaluator.move_filter.threshold},
    }
    probabilities = evaluator.probabilities(boards, args.ply)[0]
    report["evaluation"] = {
        "probabilities": _probabilities(probabilities.tolist()),
        "equity": round(float(cubeless_equity(probabilities)), 6),
    }
    if dice:
        roll = torch.tensor([dice], dtype=torch.int8, device=device)
        moves = evaluator.hint(boards, roll, args.ply)[0]
        report["hint"] = [_hint_row(rank, move) for rank, move in enumerate(moves, 1)]
    return report


def _hint_row(rank: int, move: HintMove) -> dict:
    return {
        "rank": rank,
        "play": move.play,
        "position_id": encode_position_id(move.board),
        "ply": move.ply,
        "equity": round(move.equity, 6),
        "difference": round(move.difference, 6),
        "probabilities": _probabilities(move.probabilities),
    }


PROBABILITY_HEADER = "   Win   W(g)  W(bg)   Lose   L(g)  L(bg)"


def _probability_columns(probabilities: dict[str, float]) -> str:
    win = probabilities["win"]
    values = (win, probabilities["win_gammon"], probabilities["win_backgammon"], 1.0 - win,
              probabilities["lose_gammon"], probabilities["lose_backgammon"])
    return " ".join(f"{value:6.3f}" for value in values)


def render_position(report: dict) -> list[str]:
    position = report["position"]
    return [draw_board(position["board"], position["dice"]), ""]


def render_evaluation(report: dict) -> list[str]:
    evaluation = report["evaluation"]
    ply = report["ply"]
    return [
        f"Evaluation, cubeless, for the player on roll before the roll ({ply}-ply, model {report['model']}):",
        f"        {PROBABILITY_HEADER}    Equity",
        f"  {ply}-ply {_probability_columns(evaluation['probabilities'])}   {evaluation['equity']:+.3f}",
        "",
    ]


def render_hint(report: dict) -> list[str]:
    if "hint" not in report:
        return []
    dice = report["position"]["dice"]
    settings = report["move_filter"]
    lines = [f"Plays of {dice[0]}{dice[1]}, best first ({report['ply']}-ply"
             + (f"; 0-ply candidates filtered: best {settings['keep']} within {settings['threshold']:.3f}"
                if report["ply"] else "") + "):"]
    width = max(len(row["play"]) for row in report["hint"])
    lines.append(f"    #  Ply  {'Play':<{width}}   Equity    Diff  {PROBABILITY_HEADER}")
    for row in report["hint"]:
        difference = f"{row['difference']:+.3f}" if row["rank"] > 1 else ""
        lines.append(
            f"  {row['rank']:>3}  {row['ply']:>3}  {row['play']:<{width}}  {row['equity']:+.3f}  {difference:>6}  "
            f"{_probability_columns(row['probabilities'])}"
        )
    lines.append("")
    return lines


# The text output: one renderer per report section, in display order.
TEXT_SECTIONS = (render_position, render_evaluation, render_hint)


def run(args: argparse.Namespace) -> int:
    report = build_report(args)
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        lines = [line for render in TEXT_SECTIONS for line in render(report)]
        sys.stdout.write("\n".join(lines).rstrip() + "\n")
    return 0
