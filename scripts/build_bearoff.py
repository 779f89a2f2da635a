"""Build the one-sided bear-off database (``bgtrain.values.bearoff``), or the two-sided one
(``bgtrain.values.bearoff_two_sided``, ``--two-sided``), and cache it.

    python scripts/build_bearoff.py [--out PATH] [--max-checkers 15] [--threads 1] [--force]
    python scripts/build_bearoff.py --two-sided [--max-checkers 6] [--out PATH] [--threads 1] [--force]

Every position of up to 15 checkers on the six home points (54,264), solved by dynamic programming
over the project's own move generator: for each number of rolls, the probability of having borne off
everything (and, for gammons, the first checker). Seconds to a minute on one CPU core. The evaluator
builds the same file on first use when it is missing; this script does it ahead of time and prints
a signature of the tables (mean rolls summed over all positions), which changes only if the rules or
the strategy change.

``--two-sided``: every pair of positions of up to 6 checkers a side (853,776 pairs), P(win) and the
cubeful money equities, in seconds; its signature is the sum of P(win) and of the centred-cube
equities over all pairs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from bgtrain.values import bearoff_two_sided
from bgtrain.values.bearoff import MAX_CHECKERS, all_positions, build_bearoff_database, default_path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help=f"where to write it (default {default_path()})")
    parser.add_argument("--max-checkers", type=int, help="checkers per side (default 15; two-sided: 6)")
    parser.add_argument("--two-sided", action="store_true",
                        help="build the two-sided database (exact P(win) and cubeful money equities)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--force", action="store_true", help="rebuild even if the file exists")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.two_sided:
        return build_two_sided(args)
    args.max_checkers = MAX_CHECKERS if args.max_checkers is None else args.max_checkers
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


def build_two_sided(args: argparse.Namespace) -> int:
    checkers = bearoff_two_sided.DEFAULT_CHECKERS if args.max_checkers is None else args.max_checkers
    out = bearoff_two_sided.default_path(checkers) if args.out is None else args.out
    if not args.force and Path(out).exists():
        print(f"{out} exists (pass --force to rebuild)", file=sys.stderr)
        return 0
    start = time.perf_counter()
    database = bearoff_two_sided.build_two_sided_database(checkers, verbose=True)
    seconds = time.perf_counter() - start
    path = database.save(out)
    pairs = database.win.numel()
    print(f"{pairs:,} pairs of positions of up to {checkers} checkers in {seconds:.1f} s -> {path} "
          f"({Path(path).stat().st_size / 1e6:.1f} MB)")
    centred = database.no_double[bearoff_two_sided.CENTRED]
    print(f"signature: sum of P(win) {float(database.win.double().sum()):.4f}; "
          f"sum of no-double centred-cube equities {float(centred.double().sum()):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
