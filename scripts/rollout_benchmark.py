"""Relabel a sample of benchmark decisions by rollouts, and score agents under both references.

    python scripts/rollout_benchmark.py [--class contact] [--decisions 200] [--top 4] [--trials 72]
                                        [--truncate 7] [--model checkpoints/bgtrain-distilled.pt] [--seed 1]
                                        [--agents pubeval,gnubg:0ply,checkpoints/bgtrain-default.pt,...]
                                        [--out runs/benchmark-rollout] [--batch 16] [--threads 1]
                                        [--device cpu] [--from-the-end]

The benchmark as built (``bgtrain/data/benchmark/gnubg-2ply/``) has GNU Backgammon 2-ply as its
reference, which shares GNU 0-ply's network. This script draws ``--decisions`` decisions of one class
(seeded; all of them when ``--decisions`` is at least the class's size), keeps each one's ``--top``
best-listed candidates and rolls them out (``bgtrain.benchmark.rollout_reference``: variance reduction, common
dice within a decision, truncated at ``--truncate`` plies with the model's 0-ply value, or whole
games with ``--truncate 0``). It writes ``OUT/benchmark.npz`` with its ``manifest.json`` (score it
with ``bgtrain benchmark AGENT... --data OUT/benchmark.npz``); the rollouts are kept as shards in
``OUT/shards`` and a rerun resumes.

It then scores the agents on the same decisions three ways: the GNU 2-ply losses (the same kept
candidates), the rollout losses, and the rollout losses cross-fitted (best chosen on the even
trials, loss measured on the odd ones, and the other way round: free of the upward bias of the best
of noisy means). Printed: each error rate x 1000 with its 95% interval, the mean standard error of a
rollout loss, and pubeval's error over GNU 0-ply's with a bootstrap 95% interval (the issue's bar
for the benchmark is 3 to 5; the published ratio is 4.2). The relabelling of a whole class becomes
the shipped benchmark's reference for that class with ``scripts/ship_rollout_benchmark.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bgtrain.arena.specs import make_agent
from bgtrain.benchmark.decisions import (
    GNUBG_2PLY_DATA,
    content_hash,
    load_decisions,
    save_decisions,
    write_manifest,
)
from bgtrain.benchmark.rollout_reference import cross_fitted_losses, keep_top, rollout_reference
from bgtrain.benchmark.scorer import agent_choices, losses_of_plays, mean_interval
from bgtrain.rollout import RolloutSettings
from bgtrain.values.evaluator import Evaluator

DEFAULT_AGENTS = "pubeval,gnubg:0ply,checkpoints/bgtrain-default.pt,checkpoints/bgtrain-plus.pt"


def ratio_interval(numerator: torch.Tensor, denominator: torch.Tensor, seed: int = 0, draws: int = 4000):
    """mean(numerator) / mean(denominator) over paired decisions, and a bootstrap 95% interval."""
    generator = torch.Generator().manual_seed(seed)
    count = numerator.numel()
    rows = torch.randint(count, (draws, count), generator=generator)
    below = denominator[rows].mean(1)
    ratios = torch.where(below > 0, numerator[rows].mean(1) / below.clamp(min=1e-300), torch.inf)
    low, high = torch.quantile(ratios, torch.tensor([0.025, 0.975], dtype=ratios.dtype)).tolist()
    return float(numerator.mean() / denominator.mean()), low, high


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class", dest="position_class", default="contact")
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--top", type=int, default=4)
    parser.add_argument("--trials", type=int, default=72)
    parser.add_argument("--truncate", type=int, default=7, help="plies; 0 for whole games")
    # The shipped reference's roller: the fast default model, which taught none of the models it grades.
    parser.add_argument("--model", default="checkpoints/bgtrain-distilled.pt")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agents", default=DEFAULT_AGENTS)
    parser.add_argument("--out", default="runs/benchmark-rollout")
    parser.add_argument("--batch", type=int, default=16, help="decisions rolled out in one lock-step batch")
    parser.add_argument("--from-the-end", action="store_true",
                        help="roll out the last batches first: a second process on the same --out (same "
                             "arguments) meets the first in the middle")
    parser.add_argument("--pruned-luck", action="store_true",
                        help="measure the luck on pruned plays (the model's pruning networks; RolloutSettings.pruned_luck)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    shipped = load_decisions(GNUBG_2PLY_DATA)  # the set as built, labelled by GNU Backgammon 2-ply
    members = shipped.of_class(args.position_class)
    generator = torch.Generator().manual_seed(args.seed)
    picked = torch.randperm(len(members), generator=generator)[: args.decisions].sort().values
    sample = keep_top(members.select(picked), args.top)
    settings = RolloutSettings(truncate=args.truncate or None, pruned_luck=args.pruned_luck)
    evaluator = Evaluator.from_path(args.model, args.device)
    out = Path(args.out)
    started = time.perf_counter()
    relabelled, errors, halves = rollout_reference(evaluator, sample, settings, trials=args.trials, top=args.top,
                                                   seed=args.seed, batch=args.batch, work_dir=out / "shards",
                                                   device=args.device, from_the_end=args.from_the_end)
    seconds = time.perf_counter() - started
    data = save_decisions(relabelled, out / "benchmark.npz")
    listed = errors[relabelled.loss > 0]
    write_manifest(data, {
        "format": "bgtrain move-error benchmark, see bgtrain/benchmark/decisions.py",
        "data": data.name,
        "content_sha256": content_hash(relabelled),
        "seed": args.seed,
        "reference": {"program": "bgtrain rollouts (bgtrain.benchmark.rollout_reference)", "model": args.model,
                      "trials": args.trials, "truncate": settings.truncate, "variance_reduction": True,
                      **({"luck": "pruned"} if settings.pruned_luck else {}),
                      "evaluation": "cubeless money equity of the position after each play, for the side that played",
                      "mean_loss_standard_error": round(float(listed.mean()), 6) if listed.numel() else 0.0},
        "settings": {"class": args.position_class, "decisions": len(relabelled), "top": args.top,
                     "source": "the benchmark as built (GNU Backgammon 2-ply), its best-listed candidates",
                     "source_sha256": content_hash(shipped)},
        "decisions": len(relabelled),
        "candidates": int(relabelled.counts.sum()),
        "counts": relabelled.class_counts(),
    })
    crossed = cross_fitted_losses(relabelled, halves)
    print(f"{len(relabelled)} {args.position_class} decisions, {int(relabelled.counts.sum())} candidates, "
          f"{args.trials} trials each, truncate {settings.truncate}, model {args.model}: {seconds:.0f} s "
          f"this run; mean standard error of a rollout loss {float(listed.mean()) * 1000:.1f} x 1000")
    print(f"{'agent':<34} {'gnubg 2-ply':>16} {'rollout':>16} {'rollout, cross-fitted':>22}")
    losses = {}
    for name in args.agents.split(","):
        agent = make_agent(name, device=args.device, seed=args.seed)
        chosen = agent_choices(agent, sample.board, sample.dice, device=args.device)  # the same decisions, in order
        row = (losses_of_plays(sample, chosen)[0], losses_of_plays(relabelled, chosen)[0],
               losses_of_plays(relabelled, chosen, crossed)[0])
        losses[name] = row
        cells = [mean_interval(values * 1000) for values in row]
        print(f"{name:<34} " + " ".join(f"{f'{m:.2f} ± {h:.2f}':>{w}}" for (m, h), w in zip(cells, (16, 16, 22))))
    if "pubeval" in losses and "gnubg:0ply" in losses:
        for column, label in enumerate(("gnubg 2-ply", "rollout", "rollout, cross-fitted")):
            ratio, low, high = ratio_interval(losses["pubeval"][column], losses["gnubg:0ply"][column])
            print(f"pubeval / gnubg 0-ply, {label}: {ratio:.2f} (95% {low:.2f} to {high:.2f})")
    print(f"wrote {data} (score it: bgtrain benchmark AGENT... --data {data})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
