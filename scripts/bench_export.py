"""Exported-model benchmark: onnxruntime (``OnnxValueModel``) against the PyTorch evaluator
(``ValueNetwork.evaluate``) on the same positions, in one run.

    python scripts/bench_export.py [CKPT] [--positions 100000] [--repeats 7] [--threads 1]
                                   [--first-layers pairs,table,encode] [--batch 0] [--chunk 1024]

Without CKPT the network is a seeded, untrained ``--encoder``/``--hidden`` one (speed does not depend
on the weights). Each repeat times PyTorch and then every ONNX variant on the same reachable positions,
so load from other processes hits them alike; the figures are medians over the repeats, and the
ratio is the median of the per-repeat ratios (ONNX / PyTorch, > 1 means onnxruntime is faster).
One thread each by default (``torch.set_num_threads`` and onnxruntime's intra-op threads): on a
shared 2-core machine two threads mostly wait for each other. The signature line (sums of the
equities) is deterministic for a given model and position seed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

import bgtrain.model.onnx_model
from bgtrain.export import FIRST_LAYERS, export_model
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.onnx_model import OnnxValueModel
from bgtrain.outcomes import cubeless_equity
from engine.random_play import sample_positions
from engine.rules import STANDARD


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", nargs="?", help="a bgtrain checkpoint (default: a seeded untrained network)")
    parser.add_argument("--encoder", default="tesauro198")
    parser.add_argument("--hidden", default="80", help="hidden sizes of the untrained network, e.g. 80 or 128,64")
    parser.add_argument("--positions", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch and onnxruntime intra-op threads")
    parser.add_argument("--first-layers", default=",".join(FIRST_LAYERS),
                        help="ONNX first-layer variants to time (bgtrain/export.py)")
    parser.add_argument("--batch", type=int, default=0, help="positions per evaluate call (0: all at once)")
    parser.add_argument("--chunk", type=int, default=bgtrain.model.onnx_model.ONNX_CHUNK,
                        help="rows per onnxruntime call inside OnnxValueModel")
    parser.add_argument("--seed", type=int, default=3)
    return parser.parse_args()


def rate(evaluate, boards: torch.Tensor, batch: int) -> float:
    """Positions per second of one pass over ``boards`` in calls of ``batch`` rows."""
    start = time.perf_counter()
    for part in boards.split(batch):
        evaluate(part)
    return boards.shape[0] / (time.perf_counter() - start)


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    bgtrain.model.onnx_model.ONNX_CHUNK = args.chunk
    if args.checkpoint:
        loaded = load_model(args.checkpoint)
        network, payload = loaded.model, loaded.payload
        source = args.checkpoint
    else:
        torch.manual_seed(args.seed)
        hidden = [int(size) for size in args.hidden.split(",")]
        network, payload, source = ValueNetwork(args.encoder, hidden).eval(), {}, "untrained"
    boards, _ = sample_positions(args.positions, args.seed, STANDARD, "cpu")
    batch = args.batch or boards.shape[0]
    variants = [name.strip() for name in args.first_layers.split(",") if name.strip()]

    with tempfile.TemporaryDirectory() as directory:
        models = {}
        for first_layer in variants:
            path = Path(directory) / f"{first_layer}.onnx"
            export_model(network, payload, path, "onnx", first_layer=first_layer)
            models[first_layer] = OnnxValueModel(path, threads=args.threads)

        want = network.evaluate(boards)
        print(f"model: {source} {network.model_args()}; {boards.shape[0]:,} positions in calls of {batch:,}; "
              f"threads {args.threads}; onnxruntime chunk {args.chunk}")
        print(f"signature: equity sum {float(cubeless_equity(want).double().sum()):.4f} (pytorch)", end="")
        for name, model in models.items():
            got = model.evaluate(boards)
            difference = float((got - want).abs().max())
            print(f", {float(cubeless_equity(got).double().sum()):.4f} (onnx {name}, max diff {difference:.1e})", end="")
        print()

        rates: dict[str, list[float]] = {"pytorch": [], **{name: [] for name in models}}
        ratios: dict[str, list[float]] = {name: [] for name in models}
        for function in (network.evaluate, *(model.evaluate for model in models.values())):
            function(boards[:batch])  # warm-up: tables, sessions, caches
        for _ in range(args.repeats):
            pytorch = rate(network.evaluate, boards, batch)
            rates["pytorch"].append(pytorch)
            for name, model in models.items():
                onnx = rate(model.evaluate, boards, batch)
                rates[name].append(onnx)
                ratios[name].append(onnx / pytorch)

    print(f"{'evaluator':24s} {'positions/s (median)':>22s} {'ratio to pytorch':>17s}")
    print(f"{'pytorch evaluate':24s} {statistics.median(rates['pytorch']):>22,.0f} {'1.00':>17s}")
    for name in models:
        print(f"{'onnxruntime ' + name:24s} {statistics.median(rates[name]):>22,.0f} "
              f"{statistics.median(ratios[name]):>17.2f}")


if __name__ == "__main__":
    main()
