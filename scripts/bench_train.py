"""Training throughput: self-play alone and self-play with learning, in games per second.

    python scripts/bench_train.py [--config configs/default.toml] [--seconds 30] [--repeats 3]
                                  [--threads N] [--device cpu|cuda] [section.field=value ...]

Each measurement warms up (the first games are long: an untrained network plays slowly towards
the end), then counts games finished over ``--seconds`` of wall time; medians of ``--repeats``.
"Self-play only" runs the same lock-step turns (move generation, one forward pass over all
afterstates, play, restarts) without the learning update.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from bgtrain.training.config import load_config
from bgtrain.training.td import Run, selfplay_step
from engine import kernels


def selfplay_only(run: Run, seconds: float) -> float:
    config = run.config
    state, games, start = run.state, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, state, finished = selfplay_step(run.network, state, run.rules, config.selfplay, run.dice, run.explore)
        games += int(finished.sum())
    if run.device.type == "cuda":
        torch.cuda.synchronize()
    run.state = state
    return games / (time.perf_counter() - start)


def with_learning(run: Run, seconds: float) -> float:
    games, start = run.games, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run.step()
    if run.device.type == "cuda":
        torch.cuda.synchronize()
    return (run.games - games) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/default.toml")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = list(args.overrides) + ([f"run.device={args.device}"] if args.device else [])
    config = load_config(args.config, overrides)
    run = Run(config)
    with_learning(run, args.warmup)  # past the long first games of an untrained network
    print(f"{config.model.encoder} {list(config.model.hidden)}, {config.selfplay.games_in_parallel} games in lock step, "
          f"{config.run.device}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
          f"engine kernels: {kernels.describe()}")
    learning = [with_learning(run, args.seconds) for _ in range(args.repeats)]
    alone = [selfplay_only(run, args.seconds) for _ in range(args.repeats)]
    print(f"self-play only:      {statistics.median(alone):>9,.0f} games/s (runs: {', '.join(f'{x:,.0f}' for x in alone)})")
    print(f"with learning:       {statistics.median(learning):>9,.0f} games/s (runs: {', '.join(f'{x:,.0f}' for x in learning)})")


if __name__ == "__main__":
    main()
