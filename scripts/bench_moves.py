"""`bgtrain moves` throughput: JSON lines per second over random reachable positions, end to end.

    python scripts/bench_moves.py [--lines 200000] [--repeats 3] [--variant backgammon] [--threads 1]
                                  [--compare OTHER_CHECKOUT]

Writes ``--lines`` input lines (``<position-id> <dice>`` of seeded random-play positions, all
different) to a file, runs ``python -m bgtrain.cli moves`` on it ``--repeats`` times in a fresh process
(output to /dev/null) and prints the median lines per second, the time to the first output line, the
peak memory of the process, and a checksum of the output (it changes if and only if the moves or
their notation change). It also times the command on empty input (starting Python and importing torch,
about 1.5 s here) and prints the rate without that start-up, the rate a long stream runs at, and the same
in CPU seconds (which other jobs on a shared machine do not inflate). The default of 200,000 lines is the
size of the probe in issue 18 (writing them takes about half a minute: random play, scalar encoder).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.position_id import encode_position_id
from engine.random_play import sample_positions
from engine.variants import get_rules


def input_lines(count: int, variant: str, seed: int = 7) -> str:
    rules = get_rules(variant)
    boards, dice = sample_positions(count, seed, rules)
    return "".join(f"{encode_position_id(board)} {a}{b}\n" for board, (a, b) in zip(boards.tolist(), dice.tolist()))


def run_once(source: Path, variant: str, threads: int, root: Path = ROOT) -> tuple[float, float, str, float, float]:
    """(seconds for all lines, seconds to the first line, sha256 of the output, peak memory in MiB, CPU
    seconds) of the bgtrain in ``root``."""
    environment = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": str(threads)}
    command = [sys.executable, "-m", "bgtrain.cli", "moves", "--variant", variant]
    digest = hashlib.sha256()
    with open(source, "rb") as stdin:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, cwd=root, env=environment)
        first = process.stdout.readline()
        first_seconds = time.perf_counter() - start
        digest.update(first)
        for chunk in iter(lambda: process.stdout.read(1 << 20), b""):
            digest.update(chunk)
        _, status, usage = os.wait4(process.pid, 0)  # this process's own peak memory, not all children's
        seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"bgtrain moves failed with status {os.waitstatus_to_exitcode(status)}")
    return seconds, first_seconds, digest.hexdigest()[:16], usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=200000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variant", default="backgammon")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--compare", metavar="CHECKOUT", help="also time the bgtrain of another checkout, "
                        "alternating runs, and print the ratio")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "lines.txt"
        source.write_text(input_lines(args.lines, args.variant))
        empty = Path(directory) / "empty.txt"
        empty.write_text("")
        runs, others, starts = [], [], []
        for _ in range(args.repeats):
            runs.append(run_once(source, args.variant, args.threads))
            starts.append(run_once(empty, args.variant, args.threads))
            if args.compare:
                others.append(run_once(source, args.variant, args.threads, Path(args.compare).resolve()))
    seconds = statistics.median(run[0] for run in runs)
    first = statistics.median(run[1] for run in runs)
    checksums = {run[2] for run in runs}
    peak = max(run[3] for run in runs)
    print(f"bgtrain moves, {args.variant}, {args.lines:,} lines, {args.repeats} runs, {args.threads} thread(s):")
    print(f"  {args.lines / seconds:,.0f} lines/s (median {seconds:.2f} s); first line after {first:.2f} s; "
          f"peak memory {peak:,.0f} MiB")
    start = statistics.median(run[0] for run in starts)
    print(f"  start-up (empty input) {start:.2f} s; without it {args.lines / max(seconds - start, 1e-9):,.0f} lines/s")
    # CPU seconds do not grow when other jobs share the cores, as wall-clock seconds do.
    cpu, start_cpu = statistics.median(run[4] for run in runs), statistics.median(run[4] for run in starts)
    print(f"  CPU time {cpu:.2f} s, start-up {start_cpu:.2f} s: {args.lines / max(cpu - start_cpu, 1e-9):,.0f} lines "
          "per CPU second without start-up")
    print(f"  output checksum {' '.join(sorted(checksums))}")
    if others:
        other = statistics.median(run[0] for run in others)
        print(f"  {args.compare}: {args.lines / other:,.0f} lines/s (median {other:.2f} s), checksum "
              f"{' '.join(sorted({run[2] for run in others}))}, peak memory {max(run[3] for run in others):,.0f} MiB; "
              f"this checkout is {other / seconds:.2f} times as fast")


if __name__ == "__main__":
    main()
