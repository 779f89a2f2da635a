"""Throughput and calibration of the benchmark harness (``bgtrain.arena.duel``).

    python scripts/bench_agents.py --checkpoint PATH [--games 20000] [--runs 3] [--threads 1]
                                   [--calibration-games 4000] [--no-calibration] [--json FILE]

1. Throughput: the checkpoint at 0-ply against pubeval, ``--games`` seat-swapped games, ``--runs``
   times; prints games/s of each run and their median, and a signature (points per game and the sum
   of A's points, which are deterministic for a given checkpoint and seed: a change in the rules,
   the dice or the harness shows up there).
2. Calibration, a check of the whole harness against figures measured independently:
   pubeval vs random (expected about +2.5 points per game), and, when ``gnubg-nn`` is installed,
   gnubg:0ply vs pubeval (about +0.63) and the checkpoint vs gnubg:0ply.

Threads default to 1: on a shared 2-core machine two torch threads collapse (see the project notes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bgtrain.arena.duel import play_duel
from bgtrain.arena.specs import make_agent
from engine.rules import STANDARD

CALIBRATION = {("pubeval", "random"): 2.5, ("gnubg:0ply", "pubeval"): 0.63}


def timed_match(spec_a: str, spec_b: str, games: int, seed: int, device: str, batch_pairs: int):
    agent_a = make_agent(spec_a, STANDARD, device, seed)
    agent_b = make_agent(spec_b, STANDARD, device, seed + 1)
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    result = play_duel(agent_a, agent_b, games, seed, STANDARD, device, batch_pairs)
    return result, time.perf_counter() - start_wall, time.process_time() - start_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="a bgtrain checkpoint (e.g. a 198-80 network)")
    parser.add_argument("--games", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-pairs", type=int, default=16384)
    parser.add_argument("--calibration-games", type=int, default=4000)
    parser.add_argument("--no-calibration", action="store_true")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report: dict = {"threads": args.threads, "device": args.device, "checkpoint": args.checkpoint}

    print(f"throughput: {args.checkpoint} (0-ply) vs pubeval, {args.games:,} games, {args.runs} runs, "
          f"{args.threads} thread(s)")
    rates, cpu_rates = [], []
    signature = None
    for run in range(args.runs):
        result, wall, cpu = timed_match(args.checkpoint, "pubeval", args.games, args.seed, args.device,
                                        args.batch_pairs)
        rates.append(result.games / wall)
        cpu_rates.append(result.games / cpu)
        run_signature = (round(result.points_per_game, 6), round(result.points_per_game * result.games))
        if signature is not None and run_signature != signature:
            print(f"  run {run + 1}: DIFFERENT RESULT {run_signature} (expected {signature})")
        signature = run_signature
        print(f"  run {run + 1}: {wall:6.2f} s wall, {cpu:6.2f} s CPU, {rates[-1]:7.0f} games/s  "
              f"({result.points_per_game:+.3f} ± {result.interval95:.3f})")
    median = statistics.median(rates)
    print(f"  median {median:,.0f} games/s ({args.games / median:.1f} s for {args.games:,} games); "
          f"median by CPU time {statistics.median(cpu_rates):,.0f} games/s")
    print(f"  signature: points per game {signature[0]:+.6f}, A's points {signature[1]:+d} (seed {args.seed})")
    report["throughput"] = {"games": args.games, "runs_games_per_second": [round(r, 1) for r in rates],
                            "median_games_per_second": round(median, 1),
                            "median_cpu_games_per_second": round(statistics.median(cpu_rates), 1),
                            "signature": {"points_per_game": signature[0], "points": signature[1]}}

    if not args.no_calibration:
        pairs = [("pubeval", "random")]
        try:
            import gnubg_nn  # noqa: F401

            pairs += [("gnubg:0ply", "pubeval"), (args.checkpoint, "gnubg:0ply")]
        except ImportError:
            print("gnubg-nn is not installed: gnubg calibration skipped (pip install gnubg-nn)")
        report["calibration"] = []
        for spec_a, spec_b in pairs:
            result, wall, _ = timed_match(spec_a, spec_b, args.calibration_games, args.seed, args.device,
                                          args.batch_pairs)
            expected = CALIBRATION.get((spec_a, spec_b))
            note = f" (expected about {expected:+.2f})" if expected is not None else ""
            print(f"calibration: {result.summary()}{note}; {result.games / wall:,.0f} games/s")
            report["calibration"].append({**result.as_dict(), "expected": expected, "seconds": round(wall, 2)})
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
