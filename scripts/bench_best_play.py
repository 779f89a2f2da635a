"""Models side by side: 0-ply best play, decisions a second, batched, measured in one run, alternating.

    python scripts/bench_best_play.py [--models A.pt,B.pt] [--decisions 4096] [--rounds 7] [--threads 1]

Each round times every model once on the same positions and dice (``Evaluator.best_moves`` at 0-ply:
move generation, every legal play's evaluation, the choice; bear-offs from the database), the order
of the models turning each round, so that a change in the machine's load falls on all of them alike.
It prints each model's median decisions a second, and each model's median ratio to the first model
over the rounds (a ratio per round, the median of those). The signature line is a checksum of each
model's choices on the fixed positions: it changes only when a model, the rules or the search do.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from bgtrain.values.evaluator import Evaluator
from engine.random_play import sample_positions

DEFAULT_MODELS = "checkpoints/bgtrain-supervised.pt,checkpoints/bgtrain-distilled.pt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=DEFAULT_MODELS, help=f"comma-separated checkpoints (default {DEFAULT_MODELS})")
    parser.add_argument("--decisions", type=int, default=4096, help="positions with a roll per batched call")
    parser.add_argument("--rounds", type=int, default=7, help="timed calls per model, alternating (median)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    paths = [path for path in args.models.split(",") if path]
    evaluators = [Evaluator.from_path(path) for path in paths]
    # A pool that spans whole games (random play), the first ``decisions`` of it.
    boards, dice = sample_positions(max(args.decisions, 20_000), seed=4048)
    boards, dice = boards[: args.decisions], dice[: args.decisions]
    choices = [evaluator.best_moves(boards, dice, 0) for evaluator in evaluators]  # warm-up, signature
    seconds: list[list[float]] = [[] for _ in paths]
    for round_index in range(args.rounds):
        shift = round_index % len(paths)
        for index in [*range(shift, len(paths)), *range(shift)]:
            started = time.perf_counter()
            evaluators[index].best_moves(boards, dice, 0)
            seconds[index].append(time.perf_counter() - started)
    print(f"{args.decisions:,} decisions at 0-ply, batched; {args.rounds} rounds alternating; "
          f"{torch.get_num_threads()} thread(s), torch {torch.__version__}")
    for index, path in enumerate(paths):
        rate = args.decisions / statistics.median(seconds[index])
        ratio = statistics.median(first / own for first, own in zip(seconds[0], seconds[index]))
        print(f"{path}: {rate:,.0f} decisions/s (median), {ratio:.2f}x {paths[0]} (median of the per-round ratios)")
    weights = torch.arange(1, args.decisions + 1)
    print("signature:", ", ".join(f"{path} {int((choice.cpu() * weights).sum())}" for path, choice in zip(paths, choices)))


if __name__ == "__main__":
    main()
