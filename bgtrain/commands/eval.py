"""Evaluate a position with a trained model: outcome probabilities, cubeless equity and, with dice, the
ranked legal plays (as GNU Backgammon's ``eval`` and ``hint``).

    bgtrain eval POSITION [--dice 31] [--ply N] [--no-pruning] [--model PATH] [--json]

POSITION is a GNU Backgammon position ID (``4HPwATDgc/ABMA``) or an XGID (``XGID=-b----E-C---eE---c-e----B-:
0:0:1:31:0:0:0:0:10``, the ``XGID=`` prefix optional); the side to move is the player on roll. Dice come
from ``--dice``, else from the XGID when it has a roll. Everything is cubeless and from the side to move.

The cube decision for the player on roll (No double / Double, take / Double, pass / Too good, with the
equities and the cost of each wrong choice) uses the cube and score written in the XGID or in a GNU
``positionID:matchID`` pair, or the options: ``--cube 2 --owner mover``, ``--match 7 --score 2-4
[--crawford]`` (the player on roll's score first), ``--no-jacoby``, ``--beavers``. It is Janowski's
cubeful equity on the probabilities of the chosen ply (``bgtrain.cube``), except for money play in
bear-offs of up to 6 checkers a side, where it is exact (``bgtrain.values.bearoff_two_sided``).

``--ply N`` searches N plies deep (GNU Backgammon's numbering: 0 is the network alone; 1 and 2 take
a fraction of a second; every further ply costs about 20 times more). A model with pruning networks
(``bgtrain prune``; the default model has them) chooses the replies inside the search among their few best
plays, as GNU Backgammon does; ``--no-pruning`` searches every play (the exact reference). ``--model``
defaults to the ``--variant``'s shipped model (``bgtrain.model.shipped``): ``checkpoints/bgtrain-gen9-deep.pt``
for backgammon (generation 8 distilled into one network a phase, taught further by its own 1-ply, by
GNU Backgammon's and by its own 2-ply, its contact network a layer deeper; ``checkpoints/bgtrain-gen9.pt``,
``checkpoints/bgtrain-two-teachers.pt``, ``checkpoints/bgtrain-iterated.pt``,
``checkpoints/bgtrain-distilled.pt`` and ``checkpoints/bgtrain-supervised.pt`` are options),
``checkpoints/bgtrain-<variant>.pt`` for the others. ``--json`` prints one JSON object with the same content.
Exact bear-off values come from the bear-off database, built once into the cache on first use.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

from bgtrain.commands import add_device, add_variant
from bgtrain.cube import CubeState, MatchGame, MoneyGame, TakeAction, action_label
from bgtrain.model.shipped import MODEL_HELP, shipped_model
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.cube_action import cube_action
from bgtrain.values.evaluator import MAX_PLY, Evaluator, HintMove, check_ply
from engine.board import mover_checkers_on_board, opponent_checkers_on_board
from engine.drawing import draw_board
from engine.parsing import CubeSetting, parse_dice, parse_hand, parse_position
from engine.position_id import encode_position_id, split_checkers_in_hand, with_checkers_in_hand
from engine.rules import STANDARD, Rules
from engine.variants import get_rules

OUTCOME_NAMES = ("win", "win_gammon", "win_backgammon", "lose_gammon", "lose_backgammon")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("position", metavar="POSITION", help="GNU Backgammon position ID or XGID")
    parser.add_argument("--dice", help="the roll to play, e.g. 31 or 3-1 (default: the XGID's roll, if any)")
    parser.add_argument("--ply", type=int, default=0, help=f"search depth, GNU numbering, 0 to {MAX_PLY} (default 0)")
    parser.add_argument("--no-pruning", action="store_true",
                        help="value every reply inside the search with the full model, not only the pruning "
                             "networks' few best (models made by bgtrain prune; slower, the exact search)")
    parser.add_argument("--model", help=f"checkpoint to evaluate with (default {MODEL_HELP})")
    add_device(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    add_variant(parser, default=None, help="rules variant (default: the one the model was trained for)")
    parser.add_argument("--hand", metavar="M,O", help="checkers still in hand, the player on roll's and the "
                        "opponent's (dutch, acey-deucey: a position ID counts only those on the board)")
    cube = parser.add_argument_group("cube and score (default: from the XGID or match ID, else a centred 1-cube)")
    cube.add_argument("--cube", type=int, help="cube value (1, 2, 4, ...)")
    cube.add_argument("--owner", choices=("centred", "mover", "opponent"), help="who owns the cube")
    cube.add_argument("--match", type=int, help="match length (0 or absent: money play)")
    cube.add_argument("--score", help="the player on roll's score and the opponent's, e.g. 2-4")
    cube.add_argument("--crawford", action="store_true", help="this is the Crawford game")
    cube.add_argument("--no-jacoby", action="store_true", help="money play without the Jacoby rule")
    cube.add_argument("--beavers", action="store_true", help="money play with beavers")


def cube_and_game(args: argparse.Namespace, written: CubeSetting) -> tuple[CubeState, MoneyGame | MatchGame]:
    """The cube state and game (money or match) from the options, else from the input, else defaults."""

    def pick(option, value, default):
        return option if option is not None else (value if value is not None else default)

    value, owner = pick(args.cube, written.value, 1), pick(args.owner, written.owner, "centred")
    if value < 2 and owner != "centred":
        # Nobody owns a cube that was never turned (the XGID reader refuses the same state).
        raise ValueError(f"a cube of {value} is centred; --owner {owner} needs --cube 2 or more")
    cube = CubeState(value, owner)
    length = pick(args.match, written.match_length, 0)
    if args.score is not None:
        mover, dash, opponent = args.score.partition("-")
        if not dash or not mover.isdigit() or not opponent.isdigit():
            raise ValueError(f"--score {args.score!r}: write the player on roll's score and the opponent's, like 2-4")
        score = (int(mover), int(opponent))
    else:
        score = written.score or (0, 0)
    if not length:
        if args.score is not None or args.crawford:
            raise ValueError("--score and --crawford need --match LENGTH (a money game has no score)")
        jacoby = not args.no_jacoby and pick(None, written.jacoby, True)
        beavers = args.beavers or bool(written.beavers)
        return cube, MoneyGame(jacoby=jacoby, beavers=beavers)
    crawford = args.crawford or bool(written.crawford)
    return cube, MatchGame(length, score=score, crawford=crawford)


def cube_report(probabilities: torch.Tensor, board: torch.Tensor, cube: CubeState, game,
                two_sided=None, rules: Rules = STANDARD) -> dict:
    """The cube decision of the player on roll from its outcome probabilities ``float[5]``; exact from
    the two-sided bear-off database ``two_sided`` where it covers the position (money play)."""
    decision, method = cube_action(probabilities.unsqueeze(0), board.unsqueeze(0), cube, game, two_sided, rules)

    def number(tensor) -> float | None:
        value = float(tensor[0])
        return None if math.isnan(value) else round(value, 6)

    report = {
        "game": ("money" if isinstance(game, MoneyGame) else
                 f"{game.length}-point match, {game.score[0]}-{game.score[1]}" + (", Crawford" if game.crawford else "")),
        "cube": {"value": cube.value, "owner": cube.owner},
        "method": method,
        "efficiency": number(decision.efficiency),
        "action": action_label(int(decision.action[0]), cube),
        "response": TakeAction(int(decision.take[0])).name.lower(),
        "equities": {
            "cubeless": number(decision.cubeless_equity),
            "no_double": number(decision.no_double),
            "double_take": number(decision.double_take),
            "double_pass": number(decision.double_pass),
        },
        "costs": {
            "no_double": number(decision.cost_no_double),
            "double": number(decision.cost_double),
            "take": number(decision.cost_take),
            "pass": number(decision.cost_pass),
        },
    }
    if isinstance(game, MatchGame):
        report["match_winning_chances"] = {
            "cubeless": number(decision.cubeless_mwc),
            "no_double": number(decision.no_double_mwc),
            "double_take": number(decision.double_take_mwc),
            "double_pass": number(decision.double_pass_mwc),
        }
    return report


def _probabilities(values) -> dict[str, float]:
    return {name: round(float(value), 6) for name, value in zip(OUTCOME_NAMES, values)}


def build_report(args: argparse.Namespace) -> dict:
    """Everything the command shows, as plain data; sections appear in this order in text and JSON."""
    try:
        check_ply(args.ply)  # before the model and its databases load
    except ValueError as error:
        raise ValueError(f"--ply {args.ply}: {error}") from None
    model = Path(args.model) if args.model else shipped_model(args.variant)
    if model.suffix.lower() in (".ts", ".torchscript"):
        raise ValueError(f"--model {model}: TorchScript exports are for other programs (C++, Java, ...); "
                         "give a bgtrain checkpoint (.pt) or an ONNX export (.onnx)")
    cube_and_game(args, CubeSetting())  # the options alone, checked before the model and its databases load
    device = torch.device(args.device)
    pruning = {"play_pruning": None} if args.no_pruning else {}
    evaluator = Evaluator.from_path(model, device, rules=get_rules(args.variant) if args.variant else None,
                                    **pruning)
    parsed = parse_position(args.position, evaluator.rules)
    board, position_dice, kind, written = parsed.board, parsed.dice, parsed.kind, parsed.setting
    if args.hand:
        board = with_checkers_in_hand(board, parse_hand(args.hand, "--hand"), evaluator.rules)
    if mover_checkers_on_board(board) == 0 and opponent_checkers_on_board(board) == 0:
        raise ValueError(f"position {args.position!r} has no checkers left for either side"
                         + ("; give the checkers in hand with --hand M,O" if evaluator.rules.start_in_hand else ""))
    dice = parse_dice(args.dice, "--dice") if args.dice else position_dice
    cube, game = cube_and_game(args, written)
    boards = board.unsqueeze(0).to(device)
    on_board, in_hand = split_checkers_in_hand(board)

    report: dict = {
        "position": {
            "input": args.position,
            "checkers_per_side": evaluator.rules.checkers_per_side,
            "format": kind,
            "position_id": encode_position_id(on_board),
            **({"in_hand": list(in_hand)} if evaluator.rules.start_in_hand else {}),
            "board": board.tolist(),
            "dice": list(dice) if dice else None,
        },
        "model": str(model),
        "ply": args.ply,
        "move_filter": {"keep": evaluator.move_filter.keep, "threshold": evaluator.move_filter.threshold},
    }
    if evaluator.play_pruning is not None and args.ply:
        report["play_pruning"] = {"keep": evaluator.play_pruning.keep, "more_than": evaluator.play_pruning.more_than}
    probabilities = evaluator.probabilities(boards, args.ply)[0]
    report["evaluation"] = {
        "probabilities": _probabilities(probabilities.tolist()),
        "equity": round(float(cubeless_equity(probabilities, evaluator.rules)), 6),
    }
    if evaluator.rules.cube:  # acey-deucey has no doubling cube
        report["cube"] = cube_report(probabilities, board, cube, game, evaluator.two_sided, evaluator.rules)
    if dice:
        roll = torch.tensor([dice], dtype=torch.int8, device=device)
        moves = evaluator.hint(boards, roll, args.ply)[0]
        report["hint"] = [_hint_row(rank, move, evaluator.rules) for rank, move in enumerate(moves, 1)]
    return report


def _hint_row(rank: int, move: HintMove, rules: Rules) -> dict:
    on_board, in_hand = split_checkers_in_hand(move.board)
    return {
        "rank": rank,
        "play": move.play,
        "position_id": encode_position_id(on_board),
        **({"in_hand": list(in_hand)} if rules.start_in_hand else {}),
        **({"extra_roll": move.extra_roll} if rules.acey_deucey else {}),
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
    return [draw_board(position["board"], position["dice"], checkers_per_side=position["checkers_per_side"]), ""]


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
                if report["ply"] else "")
             + (f"; replies pruned to the best {pruning['keep']} of more than {pruning['more_than']}"
                if (pruning := report.get("play_pruning")) else "") + "):"]
    plays = [row["play"] + (" (rolls again)" if row.get("extra_roll") else "") for row in report["hint"]]
    width = max(len(play) for play in plays)
    lines.append(f"    #  Ply  {'Play':<{width}}   Equity    Diff  {PROBABILITY_HEADER}")
    for row, play in zip(report["hint"], plays):
        difference = f"{row['difference']:+.3f}" if row["rank"] > 1 else ""
        lines.append(
            f"  {row['rank']:>3}  {row['ply']:>3}  {play:<{width}}  {row['equity']:+.3f}  {difference:>6}  "
            f"{_probability_columns(row['probabilities'])}"
        )
    lines.append("")
    return lines


def render_cube(report: dict) -> list[str]:
    if "cube" not in report:
        return []
    cube = report["cube"]
    equities, costs = cube["equities"], cube["costs"]

    def show(value):
        return "   n/a" if value is None else f"{value:+.3f}"

    method = "exact, two-sided bear-off database" if cube["efficiency"] is None else f"efficiency {cube['efficiency']:.2f}"
    title = (f"Cube decision ({cube['game']}, cube {cube['cube']['value']} {cube['cube']['owner']}, "
             f"{method}; equities normalised to the cube):")
    lines = [title]
    for name, key in (("No double", "no_double"), ("Double, take", "double_take"), ("Double, pass", "double_pass")):
        lines.append(f"  {name:<14}{show(equities[key])}")
    lines.append(f"  Proper cube action: {cube['action']}")
    mistakes = [f"{name} {value:.3f}" for name, value in
                (("no double", costs["no_double"]), ("double", costs["double"]),
                 ("take", costs["take"]), ("pass", costs["pass"])) if value]
    if mistakes:
        lines.append("  Cost of each wrong choice: " + ", ".join(mistakes))
    lines.append("")
    return lines


# The text output: one renderer per report section, in display order.
TEXT_SECTIONS = (render_position, render_evaluation, render_cube, render_hint)


def run(args: argparse.Namespace) -> int:
    report = build_report(args)
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        lines = [line for render in TEXT_SECTIONS for line in render(report)]
        sys.stdout.write("\n".join(lines).rstrip() + "\n")
    return 0
