"""Build the one-sided bear-off database (``bgtrain.bearoff``) and cache it.

    python scripts/build_bearoff.py [--out PATH] [--max-checkers 15] [--threads 1] [--force]

Every position of up to 15 checkers on the six home points (54,264), solved by dynamic programming
over the project's own move generator: for each number of rolls, the probability of having borne off
everything (and, for gammons, the first checker). Seconds to a minute on one CPU core. The evaluator
builds the same file on first use when it is missing; this script does it ahead of time and prints
a signature of the tables (mean rolls summed over all positions), which changes only if the rules or
the strategy change.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from bgtrain.bearoff import MAX_CHECKERS, all_positions, build_bearoff_database, default_path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help=f"where to write it (default {default_path()})")
    parser.add_argument("--max-checkers", type=int, default=MAX_CHECKERS, help="checkers per side (default 15)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--force", action="store_true", help="rebuild even if the file exists")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = default_path() if args.out is None else args.out
    if not args.force and Path(out).exists():
        print(f"{out} exists (pass --force to rebuild)", file=sys.stderr)
        return 0
    start = time.perf_counter()
    database = build_bearoff_database(args.max_checkers, verbose=True)
    seconds = time.perf_counter() - start
    path = database.save(out)
    home = all_positions(args.max_checkers)
    mean_rolls = database.expected_rolls(home)
    print(f"{home.shape[0]:,} positions in {seconds:.1f} s -> {path}")
    print(f"longest bear-off {database.rolls_off.shape[1] - 1} rolls, longest wait for the first checker "
          f"{database.rolls_first_off.shape[1] - 1} rolls")
    print(f"signature: sum of mean rolls {float(mean_rolls.sum()):.6f}; "
          f"15 checkers on the 6-point {float(database.expected_rolls(torch.tensor([0, 0, 0, 0, 0, 15]))):.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
