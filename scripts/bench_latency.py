"""Latency and throughput of the default model against GNU Backgammon's net (gnubg-nn), in one run,
alternating: what a user of ``bgtrain eval``, the hint button, analysis and the benchmarks waits for.

    python scripts/bench_latency.py [--model PATH] [--positions 40] [--deep-positions 8] [--repeats 3]
                                    [--batch 4096] [--threads 1] [--no-process] [--compare-pruning] [--json FILE]

Measured on the same positions and rolls (from random-play games, seeded) for both programs:

* one decision at 0, 1 and 2 ply: the best play of one position and roll, as ``bgtrain eval`` makes it
  (the legal plays generated, evaluated and searched with the evaluator's move filter) against
  ``gnubg_nn.best_move(board, die1, die2, n=ply)``; the median milliseconds of a decision;
* batched 0-ply evaluation: positions per second of ``Evaluator.probabilities`` on ``--batch``
  positions at once against ``gnubg_nn.probabilities(board, 0)`` one call a position (its only form);
* the encoder alone: positions per second of the model's first phase's encoder on ``--batch`` positions;
* the wall time of one ``bgtrain eval POSITION --dice 31`` process, beside ``python -c "import torch"``.

Each figure is the median of ``--repeats`` rounds, and in each round bgtrain and gnubg-nn are timed
one after the other (the order alternating between rounds), so the ratios compare the two under the
same load. Every round takes positions of its own: gnubg-nn keeps an evaluation cache, so a position it
has seen answers several times faster (measured: 0-ply probabilities 159,000/s fresh, 1,050,000/s again),
which a user analysing new positions does not get. The ratios printed are bgtrain's time over gnubg-nn's (below 1: bgtrain is faster) and, for
throughput, bgtrain's rate over gnubg-nn's. The signature (a checksum of bgtrain's chosen plays) changes
only when the model, the rules or the search change.

A model with pruning networks (``bgtrain prune``) prunes its searches' inner move choices, as ``bgtrain
eval`` does. ``--compare-pruning`` times the same model's exact search too (``play_pruning=None``) on the
same decisions, in the same alternating rounds (the three in a rotating order), with its own ratios and
signature (of its 1- and 2-ply choices only, the ones pruning can change).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from bgtrain.arena.gnubg import load_bindings, to_gnubg_board
from bgtrain.model.shipped import shipped_model
from bgtrain.values.evaluator import Evaluator
from engine.movegen import legal_afterstates
from engine.random_play import sample_positions

PLIES = (0, 1, 2)
EVAL_POSITION = "4HPwATDgc/ABMA"


def positions(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` positions with rolls, spread over whole games, each with a choice of play."""
    boards, dice = sample_positions(max(4 * count, 20_000), seed=seed)
    choice = legal_afterstates(boards, dice).counts > 1
    return boards[choice][:count], dice[choice][:count]


def bgtrain_decisions(evaluator: Evaluator, boards: torch.Tensor, dice: torch.Tensor, ply: int) -> tuple[list, list]:
    """Seconds of each single decision (move generation, evaluation, search) and the choices."""
    seconds, choices = [], []
    for row in range(boards.shape[0]):
        start = time.perf_counter()
        afterstates = legal_afterstates(boards[row : row + 1], dice[row : row + 1], evaluator.rules)
        choice = int(evaluator.choose(afterstates, ply)[0])
        seconds.append(time.perf_counter() - start)
        choices.append(choice)
    return seconds, choices


def gnubg_decisions(bindings, boards: list, dice: list, ply: int) -> list[float]:
    seconds = []
    for board, (die1, die2) in zip(boards, dice):
        start = time.perf_counter()
        bindings.best_move(board, die1, die2, ply)
        seconds.append(time.perf_counter() - start)
    return seconds


def bgtrain_batch(evaluator: Evaluator, boards: torch.Tensor) -> float:
    start = time.perf_counter()
    evaluator.probabilities(boards, 0)
    return boards.shape[0] / (time.perf_counter() - start)


def gnubg_batch(bindings, boards: list) -> float:
    start = time.perf_counter()
    for board in boards:
        bindings.probabilities(board, 0)
    return len(boards) / (time.perf_counter() - start)


def encoder_rate(evaluator: Evaluator, boards: torch.Tensor) -> float:
    """Positions per second of the encoder of the contact phase's (first) network."""
    encoder = evaluator.value.network.encoder
    start = time.perf_counter()
    encoder.encode(boards, evaluator.rules)
    return boards.shape[0] / (time.perf_counter() - start)


def process_seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def median(values) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="checkpoint or .onnx (default: the default model of bgtrain eval)")
    parser.add_argument("--positions", type=int, default=40, help="positions for single decisions at 0 and 1 ply")
    parser.add_argument("--deep-positions", type=int, default=8, help="positions for single decisions at 2 ply")
    parser.add_argument("--repeats", type=int, default=3, help="rounds, alternating (median)")
    parser.add_argument("--batch", type=int, default=4096, help="positions per batched 0-ply call")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as gnubg-nn has)")
    parser.add_argument("--no-process", action="store_true", help="skip the wall time of a bgtrain eval process")
    parser.add_argument("--compare-pruning", action="store_true",
                        help="also time the model's search without its pruning networks, alternating")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model = Path(args.model) if args.model else shipped_model()
    evaluator = Evaluator.from_path(model)
    if args.compare_pruning and evaluator.play_pruning is None:
        raise SystemExit(f"--compare-pruning: {model} has no pruning networks (bgtrain prune attaches them)")
    exact = Evaluator.from_path(model, play_pruning=None) if args.compare_pruning else None
    bindings = load_bindings()
    counts = {0: args.positions, 1: args.positions, 2: args.deep_positions}
    per_round = sum(counts.values())
    # Fresh positions for every round and kind of decision (see the module docstring), the first two for warming up.
    boards, dice = positions(2 + args.repeats * per_round, seed=2026)
    gnubg_boards = [to_gnubg_board(row.tolist()) for row in boards]
    gnubg_dice = [tuple(int(die) for die in row) for row in dice]
    all_batches, _ = sample_positions((args.repeats + 1) * args.batch, seed=7)
    batches = all_batches.split(args.batch)
    gnubg_batches = [[to_gnubg_board(row.tolist()) for row in batch] for batch in batches]

    # Warm-up: the first call of each kind pays one-off costs (tables, databases) that a session pays once.
    bgtrain_decisions(evaluator, boards[:2], dice[:2], 0)
    evaluator.probabilities(batches[-1][:64], 0)
    gnubg_decisions(bindings, gnubg_boards[:2], gnubg_dice[:2], 0)

    ours: dict[str, list[float]] = {}
    theirs: dict[str, list[float]] = {}
    unpruned: dict[str, list[float]] = {}
    signature = unpruned_signature = 0
    for round_index in range(args.repeats):
        order = (0, 1) if round_index % 2 == 0 else (1, 0)
        start = 2 + round_index * per_round
        for ply in PLIES:
            count = counts[ply]
            rows = slice(start, start + count)
            start += count
            # The exact search (who 2) takes its turn in a rotating place among the three.
            shift = round_index % 3
            decision_order = ((0, 1, 2)[shift:] + (0, 1, 2)[:shift]) if exact is not None and ply else order
            for who in decision_order:
                if who == 0:
                    seconds, choices = bgtrain_decisions(evaluator, boards[rows], dice[rows], ply)
                    ours.setdefault(f"decision_{ply}ply_ms", []).append(1000 * median(seconds))
                    if round_index == 0:
                        signature += sum((index + 1) * (choice + 1) for index, choice in enumerate(choices))
                elif who == 2:
                    seconds, choices = bgtrain_decisions(exact, boards[rows], dice[rows], ply)
                    unpruned.setdefault(f"decision_{ply}ply_ms", []).append(1000 * median(seconds))
                    if round_index == 0:
                        unpruned_signature += sum((index + 1) * (choice + 1) for index, choice in enumerate(choices))
                else:
                    seconds = gnubg_decisions(bindings, gnubg_boards[rows], gnubg_dice[rows], ply)
                    theirs.setdefault(f"decision_{ply}ply_ms", []).append(1000 * median(seconds))
        for who in order:
            if who == 0:
                ours.setdefault("batch_0ply_positions_per_s", []).append(bgtrain_batch(evaluator, batches[round_index]))
                ours.setdefault("encoder_positions_per_s", []).append(encoder_rate(evaluator, batches[round_index]))
            else:
                theirs.setdefault("batch_0ply_positions_per_s", []).append(
                    gnubg_batch(bindings, gnubg_batches[round_index]))
        if not args.no_process:
            for who in order:
                if who == 0:
                    ours.setdefault("eval_process_s", []).append(process_seconds(
                        [sys.executable, "-m", "bgtrain.cli", "eval", EVAL_POSITION, "--dice", "31", "--model", str(model)]))
                else:
                    theirs.setdefault("import_torch_process_s", []).append(process_seconds(
                        [sys.executable, "-c", "import torch"]))

    figures = {"model": str(model), "threads": args.threads, "repeats": args.repeats,
               "bgtrain": {key: median(values) for key, values in ours.items()},
               "gnubg_nn": {key: median(values) for key, values in theirs.items()},
               "signature": signature}
    ratios = {}
    for ply in PLIES:
        key = f"decision_{ply}ply_ms"
        ratios[f"decision_{ply}ply_time_ratio"] = figures["bgtrain"][key] / figures["gnubg_nn"][key]
    key = "batch_0ply_positions_per_s"
    ratios["batch_0ply_rate_ratio"] = figures["bgtrain"][key] / figures["gnubg_nn"][key]
    figures["ratios"] = ratios
    if exact is not None:
        figures["bgtrain_unpruned"] = {key: median(values) for key, values in unpruned.items()}
        figures["unpruned_signature"] = unpruned_signature
        for ply in PLIES[1:]:
            key = f"decision_{ply}ply_ms"
            ratios[f"unpruned_decision_{ply}ply_time_ratio"] = figures["bgtrain_unpruned"][key] / figures["gnubg_nn"][key]
            ratios[f"pruned_over_unpruned_{ply}ply"] = figures["bgtrain"][key] / figures["bgtrain_unpruned"][key]

    pruning = evaluator.play_pruning
    print(f"model {model}, {args.threads} torch thread(s), medians of {args.repeats} alternating rounds"
          + (f"; its searches pruned to the best {pruning.keep} of more than {pruning.more_than} plays" if pruning else ""))
    print(f"{'':34}{'bgtrain':>14}{'gnubg-nn':>14}{'ratio':>10}")
    for ply in PLIES:
        key = f"decision_{ply}ply_ms"
        print(f"{f'one decision at {ply}-ply (ms, {counts[ply]} positions)':34}{figures['bgtrain'][key]:>14.2f}"
              f"{figures['gnubg_nn'][key]:>14.2f}{ratios[f'decision_{ply}ply_time_ratio']:>9.2f}x")
    if exact is not None:
        for ply in PLIES[1:]:
            key = f"decision_{ply}ply_ms"
            print(f"{f'  without pruning, {ply}-ply (ms)':34}{figures['bgtrain_unpruned'][key]:>14.2f}"
                  f"{figures['gnubg_nn'][key]:>14.2f}{ratios[f'unpruned_decision_{ply}ply_time_ratio']:>9.2f}x"
                  f"   (pruned/unpruned {ratios[f'pruned_over_unpruned_{ply}ply']:.2f})")
    key = "batch_0ply_positions_per_s"
    print(f"{'0-ply positions/s (batched / one call each)':34}{figures['bgtrain'][key]:>14,.0f}"
          f"{figures['gnubg_nn'][key]:>14,.0f}{ratios['batch_0ply_rate_ratio']:>9.2f}x")
    print(f"{'encoder alone, positions/s':34}{figures['bgtrain']['encoder_positions_per_s']:>14,.0f}")
    if not args.no_process:
        print(f"{'one bgtrain eval process (s)':34}{figures['bgtrain']['eval_process_s']:>14.2f}"
              f"   (python -c 'import torch': {figures['gnubg_nn']['import_torch_process_s']:.2f} s)")
    print(f"signature: {signature}" + (f" (without pruning, its 1- and 2-ply choices: {unpruned_signature})" if exact is not None else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
