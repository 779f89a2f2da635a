"""Roll out positions: play many games from each, in lock step, and average their results.

    bgtrain rollout POSITION... [--trials 1296] [--ply N] [--truncate K] [--cube] [--dice 31] [--top N]
                    [--target-se X] [--seed S] [--model M | --variant V] [--json] [--device D]
                    [--executor process|ray [--address A] [--workers N]] [--work-dir DIR]

POSITION is a GNU Backgammon position ID (optionally ``:matchID``) or an XGID, the side to move before
its roll; several positions are rolled out together, in one batch. Each trial plays the checkers at
``--ply`` (the evaluator's move choice) to the end of the game, to an exact bear-off leaf, or for
``--truncate K`` plies (then the 0-ply value). The dice are quasi-random: every ordered pair of the
first two rolls once per 1,296 trials, the rest from ``--seed``. Variance reduction (on unless
``--no-variance-reduction``) subtracts each roll's luck by the 0-ply evaluator. It prints the five
outcome probabilities and the cubeless equity, each with its standard error; ``--cube`` adds the
cubeful money equity (cube decisions inside the trials, Jacoby on unless ``--no-jacoby``; the cube
from the XGID or match ID, else centred), normalised to the initial cube.

``--dice 31`` rolls out every candidate play of that roll (the evaluator's move filter at ``--ply``,
at most ``--top``) with the same dice for each, and reports each play's equity and its difference to
the best with the standard error of the difference.

``--target-se X`` stops early, between chunks of ``--chunk`` trials, once every equity's standard error
is at most X. A progress bar on standard error shows the running equity (``--quiet`` hides it).

``--executor ray`` runs chunks of ``--chunk`` trials (a multiple of 36; default 324) on a Ray cluster
(``bgtrain.distributed.rollouts``), with the same numbers as in process for the same seed; ``--work-dir
DIR`` writes each chunk as a shard there and a rerun resumes. ``--dice`` (the candidates are the
positions of one rollout on common dice) and ``--target-se`` (the same stopping rule at the same chunk
boundaries, default 324 trials) give the in-process numbers there too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from pathlib import Path

import torch

from bgtrain.commands import add_device, add_seed, add_threads, add_variant, apply_threads
from bgtrain.commands.eval import OUTCOME_NAMES, PROBABILITY_HEADER
from bgtrain.cube import CubeState
from bgtrain.distributed.executor import add_executor_arguments, executor_from_args
from bgtrain.model.shipped import MODEL_HELP, shipped_model
from bgtrain.rollout import RolloutSettings
from bgtrain.rollout.chunks import DEFAULT_CHUNK, rollout_in_chunks
from bgtrain.rollout.plays import rollout_plays
from bgtrain.values.evaluator import Evaluator, check_ply
from engine.parsing import parse_dice, parse_position
from engine.position_id import encode_position_id, split_checkers_in_hand

TARGET_CHUNK = 324  # a quarter of a complete stratification: four stopping checks per 1296 trials


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("positions", nargs="+", metavar="POSITION", help="GNU Backgammon position ID or XGID")
    parser.add_argument("--trials", type=int, default=1296, help="trials per position (default 1296)")
    parser.add_argument("--ply", type=int, default=0, help="checker play search depth (default 0)")
    parser.add_argument("--truncate", type=int, metavar="K", help="stop each trial after K plies (0-ply value)")
    parser.add_argument("--cube", action="store_true", help="cubeful money rollout: cube decisions in the trials")
    parser.add_argument("--no-jacoby", action="store_true", help="with --cube: gammons count with a centred cube")
    parser.add_argument("--dice", help="roll out the candidate plays of this roll, e.g. 31")
    parser.add_argument("--top", type=int, default=5, help="with --dice: at most this many plays (default 5)")
    parser.add_argument("--target-se", type=float, metavar="X", help="stop once every equity's error is <= X")
    parser.add_argument("--chunk", type=int, help="trials per chunk between progress updates and stopping checks "
                        f"(default {DEFAULT_CHUNK}, {TARGET_CHUNK} with --target-se; smaller chunks are smaller "
                        "batches, which run slower)")
    parser.add_argument("--no-variance-reduction", action="store_true", help="plain results, no luck correction")
    parser.add_argument("--pruned-luck", action="store_true",
                        help="measure the luck on each roll's pruned best play (the model's pruning networks rank the "
                             "plays, the model values the best 5): the same games and an unbiased mean, at about half "
                             "the time for a little more variance")
    add_seed(parser, help="dice seed (default 0)")
    parser.add_argument("--model", help=f"checkpoint or .onnx model (default {MODEL_HELP})")
    add_variant(parser, default=None, help="rules variant; must be the model's (default: the model's)")
    add_device(parser)
    add_threads(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_executor_arguments(parser)


def _number(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else round(value, 6)  # NaN (a single trial) -> null


def _probabilities(mean, error) -> dict:
    return {name: {"mean": _number(m), "se": _number(e)} for name, m, e in zip(OUTCOME_NAMES, mean, error)}


def _settings(args: argparse.Namespace) -> RolloutSettings:
    if args.trials < 1:
        raise ValueError(f"--trials must be >= 1, not {args.trials}")
    if args.truncate is not None and args.truncate < 1:
        raise ValueError(f"--truncate must be >= 1 plies, not {args.truncate} (leave it out for whole games)")
    check_ply(args.ply)
    if args.chunk is not None and args.chunk < 1:
        raise ValueError(f"--chunk must be >= 1, not {args.chunk}")
    if args.target_se is not None and not args.target_se > 0:
        raise ValueError(f"--target-se must be > 0, not {args.target_se}")
    if args.top < 1:
        raise ValueError(f"--top must be >= 1, not {args.top}")
    if args.pruned_luck and args.no_variance_reduction:
        raise ValueError("--pruned-luck measures the luck that --no-variance-reduction leaves out: give one of them")
    return RolloutSettings(ply=args.ply, truncate=args.truncate, variance_reduction=not args.no_variance_reduction,
                           pruned_luck=args.pruned_luck, cube=args.cube, jacoby=not args.no_jacoby)


def _cube(setting, text: str) -> CubeState:
    if setting.match_length:
        raise ValueError(f"position {text!r} is in a match: rollouts are money play")
    return CubeState(setting.value or 1, setting.owner or "centred")


def build_report(args: argparse.Namespace) -> dict:
    settings = _settings(args)
    apply_threads(args)
    model = Path(args.model) if args.model else shipped_model(args.variant)
    device = torch.device(args.device)
    evaluator = Evaluator.from_path(model, device)
    if args.variant is not None and args.variant != evaluator.rules.name:
        raise ValueError(f"{model} was trained for {evaluator.rules.name!r}, not for {args.variant!r}")
    if settings.pruned_luck and evaluator.pruning_networks is None:
        raise ValueError(f"--pruned-luck: {model} has no pruning networks (bgtrain prune fits them)")
    parsed = [parse_position(text, evaluator.rules) for text in args.positions]
    dice = parse_dice(args.dice, "--dice") if args.dice else None
    if dice is None and len(parsed) == 1 and parsed[0].dice is not None:
        dice = parsed[0].dice  # an XGID with a roll: its plays, as bgtrain eval shows them
    if dice is not None and len(parsed) > 1:
        raise ValueError("--dice rolls out the plays of one position: give exactly one POSITION")
    boards = torch.stack([position.board for position in parsed]).to(device)
    cubes = [_cube(position.setting, text) for position, text in zip(parsed, args.positions)]
    chunk = args.chunk or (TARGET_CHUNK if args.target_se else DEFAULT_CHUNK)
    chunking = {"seed": args.seed, "trials": args.trials, "chunk": chunk, "target_error": args.target_se,
                "progress": not args.quiet}
    report: dict = {
        "model": str(model),
        "settings": {"trials": args.trials, "ply": settings.ply, "truncate": settings.truncate,
                     "variance_reduction": settings.variance_reduction, "pruned_luck": settings.pruned_luck,
                     "cube": settings.cube,
                     "jacoby": settings.jacoby, "seed": args.seed, "target_se": args.target_se},
    }
    distributed = args.executor != "process" or args.work_dir or args.address
    start = time.perf_counter()
    if dice is not None:
        if distributed:
            plays = _rollout_plays_chunked(args, evaluator, model, boards[0], dice, settings, cubes[0])
            report["executor"] = args.executor
        else:
            plays = rollout_plays(evaluator, boards[0], dice, settings, top=args.top, cube=cubes[0], **chunking)
        report["position"] = _describe(args.positions[0], boards[0])
        report["dice"] = list(dice)
        report["plays"] = _plays_report(plays)
        trials = plays.result.trials
    elif distributed:
        result = _rollout_chunked(args, model, boards, settings, cubes)
        report["executor"] = args.executor
        report["positions"] = [_position_report(text, result, index, cubes[index])
                               for index, text in enumerate(args.positions)]
        trials = result.trials
    else:
        result = rollout_in_chunks(evaluator, boards, settings, cubes=cubes, **chunking)
        report["positions"] = [_position_report(text, result, index, cubes[index])
                               for index, text in enumerate(args.positions)]
        trials = result.trials
    seconds = time.perf_counter() - start
    report["trials_played"] = trials
    report["seconds"] = round(seconds, 3)
    return report


def _distributed_chunk(args: argparse.Namespace, workers: int) -> int:
    from bgtrain.distributed.rollouts import default_trial_chunk
    from bgtrain.distributed.shards import JOB_FILE

    if args.chunk:
        return args.chunk
    if args.target_se:
        return TARGET_CHUNK  # the in-process default: the same stopping points, the same result
    stored = Path(args.work_dir or "") / JOB_FILE
    if args.work_dir and stored.is_file():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            return int(json.loads(stored.read_text())["chunk"])  # a resumed job keeps its chunks
    return default_trial_chunk(args.trials, workers) if args.executor == "ray" else DEFAULT_CHUNK


def _rollout_chunked(args: argparse.Namespace, model: Path, boards: torch.Tensor, settings, cubes):
    from bgtrain.distributed.rollouts import rollout_distributed

    executor = executor_from_args(args)
    try:
        return rollout_distributed(model, boards, settings, seed=args.seed, trials=args.trials,
                                   chunk=_distributed_chunk(args, executor.workers), cubes=cubes, executor=executor,
                                   work_dir=args.work_dir, target_error=args.target_se)
    finally:
        executor.close()


def _rollout_plays_chunked(args: argparse.Namespace, evaluator, model: Path, board: torch.Tensor, dice, settings,
                           cube):
    from bgtrain.distributed.rollouts import rollout_plays_distributed

    executor = executor_from_args(args)
    try:
        chunk = _distributed_chunk(args, executor.workers)
        return rollout_plays_distributed(evaluator, model, board, dice, settings, top=args.top, cube=cube,
                                         seed=args.seed, trials=args.trials, chunk=chunk,
                                         executor=executor, work_dir=args.work_dir, target_error=args.target_se)
    finally:
        executor.close()


def _describe(text: str, board: torch.Tensor) -> dict:
    on_board, _ = split_checkers_in_hand(board.cpu())
    return {"input": text, "position_id": encode_position_id(on_board)}


def _position_report(text: str, result, index: int, cube: CubeState) -> dict:
    mean, error = result.probabilities()
    equity, equity_error = result.equity()
    report = {**_describe(text, result.boards[index]),
              "probabilities": _probabilities(mean[index].tolist(), error[index].tolist()),
              "equity": {"mean": _number(equity[index]), "se": _number(equity_error[index])},
              "mean_plies": round(float(result.plies[index].double().mean()), 2)}
    if result.settings.variance_reduction:
        raw, raw_error = result.equity(raw=True)
        report["equity_without_variance_reduction"] = {"mean": _number(raw[index]), "se": _number(raw_error[index])}
    if result.cubeful is not None:
        cubeful, cubeful_error = result.cubeful_equity()
        report["cube"] = {"value": cube.value, "owner": cube.owner}
        report["cubeful_equity"] = {"mean": _number(cubeful[index]), "se": _number(cubeful_error[index])}
    return report


def _plays_report(plays) -> list[dict]:
    mean, error = plays.probabilities()
    equity, equity_error = plays.equities()
    difference, difference_error = plays.differences()
    order = sorted(range(len(plays.plays)), key=lambda row: -float(equity[row]))
    return [
        {"play": plays.plays[row],
         "evaluator_equity": _number(plays.evaluator_equities[row]),
         "equity": {"mean": _number(equity[row]), "se": _number(equity_error[row])},
         "difference": {"mean": _number(difference[row]), "se": _number(difference_error[row])},
         "probabilities": _probabilities(mean[row].tolist(), error[row].tolist())}
        for row in order
    ]


def _columns(probabilities: dict, key: str) -> str:
    values = [probabilities[name][key] for name in OUTCOME_NAMES]
    if key == "mean":
        values = values[:3] + [1.0 - values[0]] + values[3:]
    else:
        values = values[:3] + [values[0]] + values[3:]
    return " ".join("   n/a" if value is None else f"{value:6.3f}" for value in values)


def _equity(entry: dict) -> str:
    error = "n/a" if entry["se"] is None else f"{entry['se']:.4f}"
    return f"{entry['mean']:+.4f} ± {error}"


def render(report: dict) -> str:
    settings = report["settings"]
    how = (f"{report['trials_played']} trials, {settings['ply']}-ply, "
           + (f"truncated at {settings['truncate']} plies, " if settings["truncate"] else "whole games, ")
           + (("variance reduction" + (" on pruned plays" if settings.get("pruned_luck") else "") + ", ")
              if settings["variance_reduction"] else "no variance reduction, ")
           + (("cubeful" + ("" if settings["jacoby"] else ", no Jacoby") + ", ") if settings["cube"] else "")
           + f"seed {settings['seed']}, {report['seconds']:.1f} s, model {report['model']}")
    lines = []
    if "plays" in report:
        dice = report["dice"]
        kind = "cubeful" if settings["cube"] else "cubeless"
        lines.append(f"Plays of {dice[0]}{dice[1]} in {report['position']['position_id']}, rolled out with common "
                     f"dice ({how}); {kind} equity for the player on roll:")
        width = max(len(row["play"]) for row in report["plays"])
        lines.append(f"    #  {'Play':<{width}}   Equity ± s.e.       Diff ± s.e.      Evaluator")
        for rank, row in enumerate(report["plays"], 1):
            diff = "" if rank == 1 else _equity(row["difference"])
            lines.append(f"  {rank:>3}  {row['play']:<{width}}  {_equity(row['equity'])}  {diff:>17}  "
                         f"{row['evaluator_equity']:+.4f}")
        return "\n".join(lines) + "\n"
    for position in report["positions"]:
        lines.append(f"Rollout of {position['position_id']} for the player on roll ({how}):")
        lines.append(f"          {PROBABILITY_HEADER}   Equity")
        equity = position["equity"]
        error = "n/a" if equity["se"] is None else f"{equity['se']:.4f}"
        lines.append(f"  mean    {_columns(position['probabilities'], 'mean')}  {equity['mean']:+.4f}")
        lines.append(f"  s.e.    {_columns(position['probabilities'], 'se')}   {error}")
        if "equity_without_variance_reduction" in position:
            lines.append(f"  without variance reduction: {_equity(position['equity_without_variance_reduction'])}")
        if "cubeful_equity" in position:
            cube = position["cube"]
            lines.append(f"  cubeful money equity (cube {cube['value']} {cube['owner']}, per initial cube): "
                         f"{_equity(position['cubeful_equity'])}")
        lines.append(f"  mean plies per trial {position['mean_plies']}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def run(args: argparse.Namespace) -> int:
    report = build_report(args)
    sys.stdout.write(json.dumps(report) + "\n" if args.json else render(report))
    return 0
