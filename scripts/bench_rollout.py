"""Rollout throughput (``bgtrain.rollout``) against GNU Backgammon's, in the same run, on this CPU.

    python scripts/bench_rollout.py [--model checkpoints/bgtrain-default.pt] [--position 4HPwATDgc/ABMA]
                                    [--trials 1296] [--vr-trials 144] [--gnubg-games 324] [--truncate 11]
                                    [--runs 3] [--threads 1,2] [--json FILE]
    python scripts/bench_rollout.py --model M --labels 64 [--dataset DIR] [--label-trials 36] [--runs 3]
                                    [--device cuda]

With ``--labels N``, the rollout labels of N positions instead (``bgtrain dataset relabel --labeller
rollout:36``): the first N of ``--dataset`` (any bgtrain dataset), or of the shipped benchmark's contact
decisions; whole-game variance-reduced trials with the full luck and with the luck on pruned plays,
alternating on the same dice, one CPU thread (or ``--device cuda``); printed: seconds a position of each
(medians), labels an hour, their ratio, the variance ratio (mean squared standard error, pruned over
full) and the ratio at equal precision.

For each thread count and each run: our 0-ply rollout of the position (whole games and truncated at
``--truncate`` plies, with and without variance reduction), then GNU Backgammon (``gnubg-nn``) playing
the same kind of trials with its own 0-ply checker play. Prints trials per second of every run (wall
clock and per CPU second), their medians, the ratio ours / gnubg of each run, the standard error
with and without variance reduction on the same games, the time each needs for a standard error
of 0.01 (throughput at equal precision, the fair comparison with gnubg-nn, which has no variance
reduction), and a signature (the rollout's equity for the
fixed seed, which is deterministic: a change in the engine, the dice or the evaluator shows up there).
A model with pruning networks (``bgtrain prune``) is also timed with its luck measured on pruned plays
(``RolloutSettings.pruned_luck``): the same games as the variance-reduced ones, another control variate.

The GNU Backgammon reference. ``gnubg-nn`` has a ``rollout`` function, but the 1.1.0a11 wheel misreads
its arguments: its compiled argument parsing leaves out the board, so it crashes when given the
number of games and, given only a position, rolls out an uninitialised board (the start position
comes back as a certain win). This script shows both in a subprocess. The reference is therefore
gnubg-nn's 0-ply ``best_move`` playing the trials move by move from Python (one call per ply, the
position passed back as gnubg's own key), exactly the games its rollout would play: whole games, or
``--truncate`` plies; gnubg-nn is single-threaded. Our trials stop at the bear-off database (the
default, as GNU's rollouts do); gnubg's whole games are also timed stopping where ours would, when
both sides are bearing off.

Threads default to 1 and 2 (the machine has 2 cores shared with other work: figures are noisy, so
every run is printed; the CPU-time rates are steadier than the wall-clock ones).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bgtrain.rollout import RolloutSettings, rollout
from bgtrain.values.evaluator import Evaluator
from engine.position_id import decode_position_id

BROKEN_ROLLOUT_PROBE = """
import gnubg_nn
board = gnubg_nn.board_from_position_id({position!r})
opponent, mover = board
# gnubg-nn's 26-entry rollout board: [mover's bar, opponent's points 1..24 as signed counts, opponent's bar]
flat = [mover[24]] + [mover[24 - k] if mover[24 - k] else -opponent[k - 1] for k in range(1, 25)] + [-opponent[24]]
print("rollout(position) ->", gnubg_nn.rollout(flat), flush=True)
print("rollout(position, 36, 0, ro_over, 500) ->", gnubg_nn.rollout(flat, 36, 0, gnubg_nn.ro_over, 500), flush=True)
"""


def probe_gnubg_rollout(position: str) -> str:
    """What ``gnubg_nn.rollout`` does with the position, run in a subprocess (it may crash)."""
    process = subprocess.run([sys.executable, "-c", BROKEN_ROLLOUT_PROBE.format(position=position)],
                             check=False, capture_output=True, text=True, timeout=120)
    lines = process.stdout.strip().splitlines()
    if process.returncode < 0:
        lines.append(f"(the process died with signal {-process.returncode})")
    return "\n".join("    " + line for line in lines)


def _gnubg_equity(probabilities) -> float:
    win, win_gammon, win_backgammon, lose_gammon, lose_backgammon = probabilities
    return 2 * win - 1 + win_gammon - lose_gammon + win_backgammon - lose_backgammon


def gnubg_trials(position: str, games: int, seed: int, truncate: int | None, stop_at_bearoff: bool
                 ) -> tuple[int, list[float]]:
    """gnubg-nn's 0-ply play of ``games`` trials of ``position``, move by move: the plies played and
    each trial's cubeless equity for the side to move in ``position`` (the points of a finished game;
    gnubg's 0-ply equity at a truncation; nothing when ``stop_at_bearoff``, which only times)."""
    import gnubg_nn

    best_move, from_key, probabilities = gnubg_nn.best_move, gnubg_nn.board_from_position_key, gnubg_nn.probabilities
    start = gnubg_nn.board_from_position_id(position)
    dice = random.Random(seed)
    plies = 0
    equities = []
    for _ in range(games):
        board, turn, equity = start, 0, None
        while truncate is None or turn < truncate:
            opponent, mover = board
            if stop_at_bearoff and sum(mover[6:]) == 0 and sum(opponent[6:]) == 0:
                break
            # best_move(..., b=1) also returns the key of the position after the move, sides swapped:
            # the next player's position, in gnubg's own encoding.
            _, key = best_move(board, dice.randint(1, 6), dice.randint(1, 6), b=1)
            board = from_key(key)
            turn += 1
            if sum(board[0]) == 0:  # the side that just moved has borne off every checker
                loser = board[1]  # the loser's own view: points 1..24, its bar last
                points = 1
                if sum(loser) == 15:
                    points = 3 if sum(loser[18:]) else 2  # checkers in the winner's home board or on the bar
                equity = points if turn % 2 == 1 else -points  # the root side moved on even plies
                break
        if equity is None and not stop_at_bearoff:
            equity = _gnubg_equity(probabilities(board, 0))  # for the side to move now
            equity = equity if turn % 2 == 0 else -equity
        if equity is not None:
            equities.append(float(equity))
        plies += turn
    return plies, equities


def timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    value = function()
    return value, time.perf_counter() - wall, time.process_time() - cpu


PRECISION = 0.01  # the equity standard error the equal-precision comparison asks for


def seconds_to_precision(error: float, trials: int, rate: float) -> float:
    """Seconds to reach ``PRECISION`` at ``rate`` trials/s, given ``error`` measured over ``trials``
    (the standard error falls as one over the root of the trials)."""
    return trials * (error / PRECISION) ** 2 / rate


def print_time_to_precision(figures: dict, modes: dict, truncate: int) -> dict:
    """Throughput at equal precision: the seconds each rollout needs for a standard error of
    ``PRECISION``, from each one's measured standard error (gnubg-nn has no variance reduction: its
    trials' spread is measured on all its games of that kind)."""
    print(f"  time to a standard error of {PRECISION} (medians; gnubg's from the spread of all its trials):")
    table = {}
    for plain_name in ("whole games", f"truncated at {truncate}"):
        plain, reduced = figures[plain_name], figures[f"{plain_name}, variance reduction"]
        plain_trials, reduced_trials = modes[plain_name][1], modes[f"{plain_name}, variance reduction"][1]
        ours_plain = seconds_to_precision(plain["error"], plain_trials, statistics.median(plain["ours"]))
        ours_reduced = seconds_to_precision(reduced["error"], reduced_trials, statistics.median(reduced["ours"]))
        row = {"ours_plain_s": ours_plain, "ours_variance_reduced_s": ours_reduced}
        line = f"    {plain_name:<18} ours plain {ours_plain:8.2f} s, ours with variance reduction {ours_reduced:8.2f} s"
        pruned = figures.get(f"{plain_name}, pruned luck")
        if pruned:
            ours_pruned = seconds_to_precision(pruned["error"], modes[f"{plain_name}, pruned luck"][1],
                                               statistics.median(pruned["ours"]))
            row["ours_pruned_luck_s"] = ours_pruned
            line += f", with pruned luck {ours_pruned:8.2f} s ({ours_reduced / ours_pruned:.2f}x faster)"
        if plain["gnubg"]:
            spread = statistics.stdev(plain["gnubg_equities"])  # one trial's standard deviation
            gnubg = seconds_to_precision(spread, 1, statistics.median(plain["gnubg"]))
            ours_best = min(row.values())  # every entry so far is one of our times
            row["gnubg_s"] = gnubg
            row["ratio_gnubg_over_our_best"] = gnubg / ours_best
            line += f", gnubg-nn {gnubg:8.2f} s: ours {gnubg / ours_best:.2f}x faster"
        print(line)
        table[plain_name] = row
    return table


def bench_labels(args: argparse.Namespace) -> int:
    """Rollout labels of ``--labels`` positions, full luck against pruned luck."""
    from bgtrain.benchmark.decisions import load_decisions
    from bgtrain.datasets import load_datasets

    torch.set_num_threads(1)
    evaluator = Evaluator.from_path(args.model, args.device)
    if evaluator.pruning_networks is None:
        print(f"bench_rollout: {args.model} has no pruning networks (bgtrain prune fits them)", file=sys.stderr)
        return 2
    source = args.dataset or "the benchmark's contact decisions"
    boards = (load_datasets([args.dataset]).positions if args.dataset
              else load_decisions().of_class("contact").board)[: args.labels].to(args.device)
    rollout(evaluator, boards[:2], RolloutSettings(pruned_luck=True), trials=8, seed=99)  # compile first
    seconds: dict[bool, list[float]] = {False: [], True: []}
    errors: dict[bool, torch.Tensor] = {}
    for run in range(args.runs):
        for pruned in (False, True):  # alternating, so both meet the same load
            result, wall, _ = timed(lambda p=pruned: rollout(evaluator, boards, RolloutSettings(pruned_luck=p),
                                                           trials=args.label_trials, seed=args.seed))
            seconds[pruned].append(wall / boards.shape[0])
            errors[pruned] = result.equity()[1]  # the same dice every run: the same errors
            print(f"  run {run + 1}  {'pruned' if pruned else 'full  '} luck  {wall / boards.shape[0]:.4f} s a position, "
                  f"mean standard error {float(errors[pruned].mean()):.4f}", flush=True)
    full, pruned = statistics.median(seconds[False]), statistics.median(seconds[True])
    variance = float((errors[True] ** 2).mean() / (errors[False] ** 2).mean())
    print(f"{boards.shape[0]} positions of {source}, {args.label_trials} whole-game trials each, {args.device}, medians "
          f"of {args.runs}: full luck {full:.4f} s a position ({3600 / full:,.0f} an hour), pruned luck {pruned:.4f} s "
          f"({3600 / pruned:,.0f} an hour, {full / pruned:.2f}x); variance pruned / full {variance:.3f}; at equal "
          f"precision {full / pruned / variance:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"source": source, "device": args.device, "positions": int(boards.shape[0]),
                                               "trials": args.label_trials, "seconds_full": seconds[False],
                                               "seconds_pruned": seconds[True], "variance_ratio": variance}, indent=2))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="checkpoints/bgtrain-default.pt")
    parser.add_argument("--position", default="4HPwATDgc/ABMA")
    parser.add_argument("--trials", type=int, default=1296, help="trials of our plain rollouts")
    parser.add_argument("--vr-trials", type=int, default=144, help="trials of our variance-reduced rollouts")
    parser.add_argument("--gnubg-games", type=int, default=324)
    parser.add_argument("--truncate", type=int, default=11)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--labels", type=int, help="time the rollout labels of this many positions instead (above)")
    parser.add_argument("--dataset", help="with --labels: the positions' dataset (default: the benchmark's contact ones)")
    parser.add_argument("--label-trials", type=int, default=36, help="with --labels: trials a position")
    parser.add_argument("--device", default="cpu", help="with --labels: cpu or cuda")
    args = parser.parse_args()
    if args.labels:
        return bench_labels(args)

    try:
        import gnubg_nn  # noqa: F401
        have_gnubg = True
    except ImportError:
        have_gnubg = False
        print("gnubg-nn is not installed (pip install gnubg-nn): our figures only")
    if have_gnubg:
        print(f"gnubg_nn.rollout on {args.position} (expected: about 0.5 to win, not a certain win):")
        print(probe_gnubg_rollout(args.position))

    evaluator = Evaluator.from_path(args.model)
    board = decode_position_id(args.position).unsqueeze(0)
    modes = {
        "whole games": (RolloutSettings(variance_reduction=False), args.trials, None),
        f"truncated at {args.truncate}": (RolloutSettings(variance_reduction=False, truncate=args.truncate),
                                          args.trials, args.truncate),
        "whole games, variance reduction": (RolloutSettings(), args.vr_trials, None),
        f"truncated at {args.truncate}, variance reduction": (RolloutSettings(truncate=args.truncate),
                                                               args.vr_trials, args.truncate),
    }
    if evaluator.pruning_networks is not None:  # the luck on pruned plays: the same games, the same trials
        modes["whole games, pruned luck"] = (RolloutSettings(pruned_luck=True), args.vr_trials, None)
        modes[f"truncated at {args.truncate}, pruned luck"] = (
            RolloutSettings(truncate=args.truncate, pruned_luck=True), args.vr_trials, args.truncate)
    report: dict = {"position": args.position, "model": args.model, "runs": {}}
    rollout(evaluator, board, RolloutSettings(), trials=72, seed=99)  # compile the engine's kernels first
    for threads in (int(text) for text in args.threads.split(",")):
        torch.set_num_threads(threads)
        print(f"\n{threads} thread(s), {args.runs} runs, position {args.position}, 0-ply checker play:")
        figures: dict = {}
        for run in range(args.runs):
            for name, (settings, trials, truncate) in modes.items():
                result, wall, cpu = timed(lambda s=settings, t=trials: rollout(evaluator, board, s, trials=t,
                                                                                 seed=args.seed))
                equity, error = result.equity()
                raw_error = result.equity(raw=True)[1]
                entry = figures.setdefault(name, {"ours": [], "ours_cpu": [], "gnubg": [], "gnubg_cpu": [], "ratio": [],
                                                  "ratio_cpu": []})
                entry["ours"].append(trials / wall)
                entry["ours_cpu"].append(trials / cpu)
                entry["signature"] = round(float(equity[0]), 6)
                entry["error"], entry["raw_error"] = float(error[0]), float(raw_error[0])
                line = (f"  run {run + 1}  {name:<36} ours {trials / wall:7.1f} trials/s "
                        f"({trials / cpu:7.1f} per CPU s, {float(result.plies.double().mean()):4.1f} plies), "
                        f"equity {float(equity[0]):+.4f} ± {float(error[0]):.4f}")
                if have_gnubg and not settings.variance_reduction:
                    (plies, equities), gnubg_wall, gnubg_cpu = timed(lambda t=truncate, r=run: gnubg_trials(
                        args.position, args.gnubg_games, args.seed + r, t, False))
                    entry.setdefault("gnubg_equities", []).extend(equities)
                    gnubg_rate, gnubg_cpu_rate = args.gnubg_games / gnubg_wall, args.gnubg_games / gnubg_cpu
                    entry["gnubg"].append(gnubg_rate)
                    entry["gnubg_cpu"].append(gnubg_cpu_rate)
                    entry["ratio"].append(trials / wall / gnubg_rate)
                    entry["ratio_cpu"].append(trials / cpu / gnubg_cpu_rate)
                    line += (f" | gnubg {gnubg_rate:6.1f} trials/s ({gnubg_cpu_rate:6.1f} per CPU s, "
                             f"{plies / args.gnubg_games:4.1f} plies), ratio {trials / wall / gnubg_rate:5.2f} "
                             f"(per CPU s {trials / cpu / gnubg_cpu_rate:5.2f}), equity "
                             f"{statistics.mean(equities):+.4f} ± {statistics.stdev(equities) / len(equities) ** 0.5:.4f}")
                    if truncate is None and run == 0:
                        _, leaf_wall, _ = timed(lambda: gnubg_trials(args.position, args.gnubg_games,
                                                                     args.seed, None, True))
                        entry["gnubg_to_bearoff"] = args.gnubg_games / leaf_wall
                        line += f" (to the bear-off: {args.gnubg_games / leaf_wall:.1f}/s)"
                print(line, flush=True)
        print(f"  medians, {threads} thread(s):")
        for name, entry in figures.items():
            line = (f"    {name:<36} ours {statistics.median(entry['ours']):7.1f} trials/s "
                    f"({statistics.median(entry['ours_cpu']):7.1f} per CPU s)")
            if entry["gnubg"]:
                line += (f", gnubg {statistics.median(entry['gnubg']):6.1f}/s "
                         f"({statistics.median(entry['gnubg_cpu']):6.1f} per CPU s), ratio median "
                         f"{statistics.median(entry['ratio']):.2f} (per CPU s {statistics.median(entry['ratio_cpu']):.2f})")
            if "variance reduction" in name or "pruned luck" in name:
                line += (f"; standard error {entry['error']:.4f} vs {entry['raw_error']:.4f} without: "
                         f"{entry['raw_error'] / entry['error']:.1f}x lower at equal trials")
            print(line + f"; signature {entry['signature']:+.6f}")
        report["runs"][threads] = figures
        report.setdefault("to_precision", {})[threads] = print_time_to_precision(figures, modes, args.truncate)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
