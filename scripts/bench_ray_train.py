"""Supervised training throughput in one process and on Ray Train workers, in positions (samples) per second.

    python scripts/bench_ray_train.py [--workers 1 2] [--positions 20000] [--epochs 2] [--batch-size 256]
                                      [--repeats 3] [--address HOST:PORT] [--dataset DIR] [section.field=value ...]

Each run is ``bgtrain train`` of ``configs/supervised_gen1.toml`` (gnubg_contact inputs, 128 hidden units)
on one dataset: ``--dataset DIR``, or else ``--positions`` positions made of the 2,000 self-play positions
of ``tests/data/selfplay_positions.npy`` repeated, with random labels (the rate does not depend on the
labels). The rate is the run's own count, positions trained over the seconds spent in its epochs
(``counters.train_seconds``: the training steps and the all-reduces, not the start of the workers, the
encoding or the checkpoints); the wall time of the whole command is printed beside it. The executors
alternate within each repeat (the order reversed every other repeat), so that the load of other programs
falls on them alike; medians of ``--repeats``. One process runs with one torch thread, each Ray worker
with one CPU (``executor.worker_cpus = 1``). Without ``--address`` the Ray workers run on a private
cluster of this machine. The signature is the final weights' sum of absolute values, the same for every
executor up to float rounding.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bgtrain.commands.train import train
from bgtrain.datasets.shards import FORMAT_VERSION, MANIFEST_FORMAT, write_manifest, write_shard
from bgtrain.model.loading import load_model
from bgtrain.training.config import load_config
from engine.position_kinds import position_kinds

ROOT = Path(__file__).resolve().parent.parent
SHARD_POSITIONS = 10_000


def make_dataset(directory: Path, positions: int) -> Path:
    """``positions`` self-play positions (the 2,000 of the test data, repeated) with random labels."""
    boards = torch.from_numpy(np.load(ROOT / "tests" / "data" / "selfplay_positions.npy"))
    boards = boards.repeat(-(-positions // boards.shape[0]), 1)[:positions]
    targets = torch.rand(positions, 5, generator=torch.Generator().manual_seed(0)).sort(dim=1, descending=True).values
    directory.mkdir(parents=True)
    entries = []
    for index, start in enumerate(range(0, positions, SHARD_POSITIONS)):
        rows = slice(start, start + SHARD_POSITIONS)
        entries.append(write_shard(directory, index, {
            "positions": boards[rows], "targets": targets[rows], "standard_errors": torch.zeros_like(targets[rows]),
            "zero_ply": targets[rows], "kinds": position_kinds(boards[rows]).to(torch.int8)}))
    write_manifest(directory, {"format": MANIFEST_FORMAT, "format_version": FORMAT_VERSION,
                               "labeller": {"kind": "random"}, "source_model": "", "shards": entries})
    return directory


def run_once(dataset: Path, out: Path, workers: int, args) -> tuple[float, float, float]:
    """(positions per second in the epochs, wall seconds, signature) of one training run; 0 workers: one process."""
    executor = ["executor.mode=local"] if workers == 0 else ["executor.mode=ray", f"executor.workers={workers}",
                                                            "executor.worker_cpus=1"]
    config = load_config(ROOT / "configs" / "supervised_gen1.toml", [
        f"supervised.datasets=['{dataset}']", f"run.out_dir={out.parent}", f"run.name={out.name}",
        f"supervised.epochs={args.epochs}", f"supervised.batch_size={args.batch_size}",
        "supervised.kinds=['contact','crashed','race','bearoff']", "supervised.heldout_fraction=0.0",
        "evaluation.games=2", "evaluation.benchmark=false", "checkpoint.keep_last=1",
        *([f"executor.address={args.address}"] if args.address else []), *executor, *args.overrides])
    started = time.perf_counter()
    final = train(config, progress=False, overwrite=True)
    wall = time.perf_counter() - started
    loaded = load_model(final)
    counters = loaded.payload["counters"]
    signature = sum(float(tensor.abs().sum()) for tensor in loaded.model.state_dict().values())
    return counters["positions"] / counters["train_seconds"], wall, signature


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="Ray worker counts to measure")
    parser.add_argument("--positions", type=int, default=20_000)
    parser.add_argument("--dataset", help="a dataset directory instead of the made-up one")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256, help="the global batch (split among the workers)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--address", help="a Ray cluster to join (default: a private one on this machine)")
    parser.add_argument("overrides", nargs="*", help="config overrides, section.field=value")
    args = parser.parse_args()
    torch.set_num_threads(1)
    executors = [0, *args.workers]
    names = {0: "one process", **{n: f"Ray Train, {n} worker{'s' if n != 1 else ''}" for n in args.workers}}
    rates: dict[int, list[float]] = {n: [] for n in executors}
    walls: dict[int, list[float]] = {n: [] for n in executors}
    with tempfile.TemporaryDirectory(prefix="bench-ray-train-") as scratch:
        dataset = Path(args.dataset) if args.dataset else make_dataset(Path(scratch) / "data", args.positions)
        if args.workers:
            from bgtrain.distributed.ray_executor import connect

            print(connect(args.address)[1])  # one cluster for every run (each run then keeps it open)
        for repeat in range(args.repeats):
            for workers in executors if repeat % 2 == 0 else executors[::-1]:
                rate, wall, signature = run_once(dataset, Path(scratch) / f"run_{workers}", workers, args)
                rates[workers].append(rate)
                walls[workers].append(wall)
                print(f"  repeat {repeat + 1}, {names[workers]}: {rate:,.0f} positions/s in the epochs, "
                      f"{wall:.1f} s wall, signature {signature:.6f}", flush=True)
    print(f"{args.positions if not args.dataset else args.dataset} positions, {args.epochs} epochs, global batch "
          f"{args.batch_size}, torch {torch.__version__}")
    for workers in executors:
        line = f"{names[workers]:>22}: {statistics.median(rates[workers]):>9,.0f} positions/s (median of {args.repeats}; "
        line += f"wall {statistics.median(walls[workers]):.1f} s)"
        if workers and 1 in args.workers and workers != 1:
            line += f", x{statistics.median(rates[workers]) / statistics.median(rates[1]):.2f} of 1 worker"
        print(line)


if __name__ == "__main__":
    main()
