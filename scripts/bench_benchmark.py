"""Speed of the move-error benchmark: seconds to score every decision, median of several runs.

    python scripts/bench_benchmark.py [--agent checkpoints/bgtrain-default.pt] [--agent pubeval]
                                      [--data PATH] [--runs 3] [--threads 1]

Each run scores all decisions of all classes (``bgtrain.benchmark.scorer.score_agents``: batched move
generation and one ``choose`` call per batch). A warm-up run comes first (the engine compiles its
kernels once per process), then ``--runs`` timed ones. The signature is the error rates, which do
not change from run to run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from bgtrain.arena.specs import make_agent
from bgtrain.benchmark.decisions import load_decisions
from bgtrain.benchmark.scorer import score_agents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", action="append", help="agent spec (repeatable; default: the default checkpoint)")
    parser.add_argument("--data", help="decisions (default: the shipped benchmark)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    decisions = load_decisions(args.data)
    print(f"{len(decisions):,} decisions {decisions.class_counts()}, {decisions.candidate.shape[0]:,} candidates, "
          f"{args.threads} thread(s)")
    for spec in args.agent or ["checkpoints/bgtrain-default.pt"]:
        agent = make_agent(spec)
        report = score_agents([agent], decisions)  # warm-up: kernels compiled, caches filled
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            report = score_agents([agent], decisions)
            times.append(time.perf_counter() - start)
        signature = ", ".join(f"{rate.position_class} {rate.error_rate:.3f}" for rate in report.rates)
        print(f"{spec}: {statistics.median(times):.2f} s median of {args.runs} "
              f"({', '.join(f'{t:.2f}' for t in times)}); {len(decisions) / statistics.median(times):,.0f} "
              f"decisions/s; error rates {signature}")


if __name__ == "__main__":
    main()
