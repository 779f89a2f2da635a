"""What compiling the engine's kernels costs a process, with an empty cache and with the cache that an
earlier process left (``engine.kernels.cache_directory``): the time to the first compiled move generation.

    python scripts/bench_compile_cache.py [--processes 3] [--batch 2048]

Each process is new (``python -c``), sets ``BGTRAIN_COMPILE=always`` and generates the moves of
``--batch`` positions twice; the first call compiles (or loads from the cache) every kernel. The first
process runs on an empty cache directory, the others on what it left. Printed: seconds to the end of the
first call for each process, and the ratio of the cold start to the median warm one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = """
import time, torch
start = time.perf_counter()
from engine.movegen import legal_afterstates
from engine.random_play import sample_positions
torch.set_num_threads(1)
boards, dice = sample_positions({batch}, seed=1)
legal_afterstates(boards, dice)
first = time.perf_counter() - start
legal_afterstates(boards, dice)
from engine import kernels
print(first, kernels.describe())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=3, help="processes, the first on an empty cache")
    parser.add_argument("--batch", type=int, default=2048, help="positions per move generation")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        environment = {**os.environ, "BGTRAIN_COMPILE": "always", "TORCHINDUCTOR_CACHE_DIR": cache}
        seconds = []
        for index in range(args.processes):
            done = subprocess.run([sys.executable, "-c", CHILD.format(batch=args.batch)], env=environment,
                                  capture_output=True, text=True, check=True)
            first, state = done.stdout.split(maxsplit=1)
            seconds.append(float(first))
            print(f"process {index + 1} ({'empty cache' if index == 0 else 'warm cache'}): first move generation "
                  f"after {float(first):.1f} s; {state.strip()}")
    warm = statistics.median(seconds[1:]) if len(seconds) > 1 else float("nan")
    print(f"cold {seconds[0]:.1f} s, warm {warm:.1f} s (median): the cache saves {seconds[0] / warm:.1f}x")


if __name__ == "__main__":
    main()
