"""Throughput of ``bgtrain analyse``: decisions analysed per second over a folder of match files.

    bgtrain bench checkpoints/bgtrain-distilled.pt pubeval --match 5 --games 100 --save-games /tmp/matches
    python scripts/bench_analyse.py /tmp/matches [--model M] [--ply 0] [--runs 3] [--threads 1]

Each run reads and analyses every file of the folder (``bgtrain.analysis.summary.analyse_files``: all
decisions of all files in shared batches), once with each luck method (``none``, ``static``, ``rolls``),
alternating, and the medians are printed with the signature: the decisions analysed and the total
equity lost, which a change to the rules, the reader or the analysis would change.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from bgtrain.analysis.summary import analyse_files
from bgtrain.values.evaluator import Evaluator

LUCK = ("none", "static", "rolls")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="a folder of .mat files (bgtrain bench --save-games DIR)")
    parser.add_argument("--model", default="checkpoints/bgtrain-distilled.pt")
    parser.add_argument("--ply", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--luck", nargs="+", choices=LUCK, default=list(LUCK))
    parser.add_argument("--cubeless", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    paths = sorted(Path(args.folder).glob("*.mat"))
    if not paths:
        raise SystemExit(f"{args.folder}: no .mat files")
    evaluator = Evaluator.from_path(args.model)
    analyse_files(evaluator, paths[:1], args.ply, args.cubeless, "rolls")  # warm-up: kernels, databases
    rates: dict[str, list[float]] = {luck: [] for luck in args.luck}
    signature = None
    for run in range(args.runs):
        for luck in args.luck:
            started = time.perf_counter()
            report = analyse_files(evaluator, paths, args.ply, args.cubeless, luck)
            seconds = time.perf_counter() - started
            rates[luck].append(report["decisions"] / seconds)
            loss = sum(side["overall"]["total_loss"] for file in report["files"] for side in file["summary"])
            signature = (report["decisions"], round(loss, 3), len(report["errors"]))
            print(f"run {run + 1} luck={luck}: {report['decisions']} decisions in {seconds:.1f} s "
                  f"({report['decisions'] / seconds:.0f}/s; reading {report['read_seconds']:.1f} s)", flush=True)
    print(f"{len(paths)} files, {args.model} at {args.ply}-ply, {args.threads} thread(s):")
    for luck, values in rates.items():
        print(f"  luck={luck:<6} median {statistics.median(values):.0f} decisions/s over {len(values)} runs")
    print(f"signature: {signature[0]} decisions, total equity lost {signature[1]}, {signature[2]} errors")


if __name__ == "__main__":
    main()
