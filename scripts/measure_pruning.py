"""What pruning the search's inner move choices costs in play (``bgtrain.values.pruning``).

    python scripts/measure_pruning.py MODEL [--decisions 300] [--deep-decisions 100] [--positions 2000]
                                      [--seed 11] [--threads 1] [--json FILE]

MODEL is a checkpoint with pruning networks (``bgtrain prune``). On positions and rolls from random-play
games (seeded, each with a choice of play):

* the pruning networks alone: over every roll of ``--positions`` positions with more than ``more_than``
  plays, how often the full model's 0-ply best play is among the pruning networks' ``keep`` best (then the
  pruned inner choice is the full one), and the mean 0-ply equity the pruned inner choice gives up;
* the decisions: at 1-ply (``--decisions``) and 2-ply (``--deep-decisions``), how often the pruned
  search chooses the play the exact search chooses, and the mean equity lost by the pruned choice, valued
  by the exact search at that ply (with a 95% interval: 1.96 standard errors), and the largest loss.

Batched: the evaluator's ``choose`` and ``hint`` over all decisions at once.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict
from pathlib import Path

import torch

from bgtrain.outcomes import cubeless_equity
from bgtrain.values.evaluator import Evaluator
from bgtrain.values.pruning import pruned_best_plays
from engine.dice import ALL_ROLLS
from engine.movegen import argmax_per_position, legal_afterstates
from engine.random_play import sample_positions


def decisions(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    boards, dice = sample_positions(max(4 * count, 4000), seed=seed)
    choice = legal_afterstates(boards, dice).counts > 1
    return boards[choice][:count], dice[choice][:count]


def inner_choices(pruned: Evaluator, count: int, seed: int) -> dict[str, float]:
    """The pruned inner choice against the full 0-ply choice over every roll of ``count`` positions."""
    boards, _ = sample_positions(count, seed=seed)
    rolls = torch.tensor(ALL_ROLLS, dtype=torch.int8)
    afterstates = legal_afterstates(boards.repeat_interleave(len(ALL_ROLLS), 0), rolls.repeat(count, 1))
    full = cubeless_equity(pruned.static.afterstates(afterstates.boards), pruned.rules)
    best = argmax_per_position(full, afterstates)
    choice, _ = pruned_best_plays(afterstates, pruned.static, pruned.pruning_networks, pruned.play_pruning, pruned.rules)
    crowded = afterstates.counts > pruned.play_pruning.more_than
    lost = (full[afterstates.offsets + best] - full[afterstates.offsets + choice])[crowded].double()
    return {"rolls": int(crowded.numel()), "crowded_rolls": int(crowded.sum()),
            "best_kept": float((lost == 0).double().mean()), "mean_equity_lost": float(lost.mean()),
            "largest_equity_lost": float(lost.max())}


def compare(pruned: Evaluator, exact: Evaluator, boards: torch.Tensor, dice: torch.Tensor, ply: int) -> dict:
    afterstates = legal_afterstates(boards, dice, exact.rules)
    start = time.perf_counter()
    pruned_choice = pruned.choose(afterstates, ply)
    pruned_seconds = time.perf_counter() - start
    start = time.perf_counter()
    exact_choice = exact.choose(afterstates, ply)
    exact_seconds = time.perf_counter() - start
    hints = exact.hint(boards, dice, ply, notation=False)
    chosen = afterstates.boards[afterstates.offsets + pruned_choice].tolist()
    losses = []
    for hint, board in zip(hints, chosen):
        equity = {move.board: move.equity for move in hint}
        losses.append(hint[0].equity - equity[tuple(board)])
    lost = torch.tensor(losses, dtype=torch.float64)
    spread = 1.96 * float(lost.std()) / math.sqrt(lost.numel()) if lost.numel() > 1 else float("nan")
    return {"decisions": int(boards.shape[0]), "same_choice": float((pruned_choice == exact_choice).double().mean()),
            "mean_equity_lost": float(lost.mean()), "interval95": spread, "largest_equity_lost": float(lost.max()),
            "pruned_seconds": pruned_seconds, "exact_seconds": exact_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="checkpoint with pruning networks (bgtrain prune)")
    parser.add_argument("--decisions", type=int, default=300, help="decisions compared at 1-ply")
    parser.add_argument("--deep-decisions", type=int, default=100, help="decisions compared at 2-ply")
    parser.add_argument("--positions", type=int, default=2000, help="positions whose 21 rolls test the inner choice")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pruned = Evaluator.from_path(args.model)
    if pruned.play_pruning is None:
        raise SystemExit(f"{args.model} has no pruning networks (bgtrain prune attaches them)")
    exact = Evaluator.from_path(args.model, play_pruning=None)
    figures = {"model": args.model, "play_pruning": asdict(pruned.play_pruning),
               "inner": inner_choices(pruned, args.positions, args.seed)}
    boards, dice = decisions(max(args.decisions, args.deep_decisions), args.seed + 1)
    for ply, count in ((1, args.decisions), (2, args.deep_decisions)):
        figures[f"{ply}ply"] = compare(pruned, exact, boards[:count], dice[:count], ply)
    inner = figures["inner"]
    print(f"model {args.model}; pruning: the best {pruned.play_pruning.keep} of more than "
          f"{pruned.play_pruning.more_than} plays")
    print(f"inner choices: {inner['crowded_rolls']:,} of {inner['rolls']:,} rolls pruned; the full 0-ply best kept in "
          f"{100 * inner['best_kept']:.2f}%; 0-ply equity given up {inner['mean_equity_lost']:.5f} a pruned roll "
          f"(largest {inner['largest_equity_lost']:.3f})")
    for ply in (1, 2):
        row = figures[f"{ply}ply"]
        print(f"{ply}-ply decisions: {row['decisions']}; same choice as the exact search {100 * row['same_choice']:.1f}%; "
              f"equity lost {row['mean_equity_lost']:.5f} +/- {row['interval95']:.5f} (largest "
              f"{row['largest_equity_lost']:.3f}); batched seconds pruned {row['pruned_seconds']:.2f}, "
              f"exact {row['exact_seconds']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
