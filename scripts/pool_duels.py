"""Several cubeless duels of the same two agents on different dice, as one result.

    python scripts/pool_duels.py DIR [DIR ...] [--json FILE]

Each DIR is the ``--work-dir`` of a finished ``bgtrain bench A B --games N --seed S`` (its ``job.json``
and shards). The pooled figure is over every seat-swapped pair of all of them, with the 95% interval
over all their pair means: what one duel of all those games would report, and the figure to quote for
"over 100,000 games" made of runs on several seeds. Each duel's own line is printed first. Duels of
other agents, or two on the same seed (the same dice: those games would count twice), are refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bgtrain.arena.duel import DuelResult
from bgtrain.files import atomic_write


def _line(result: DuelResult, label: str) -> str:
    return f"{label}: {result.points_per_game:+.4f} ± {result.interval95:.4f} points per game (95%) over {result.games:,} games"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directories", nargs="+", metavar="DIR", help="work directories of finished bench runs")
    parser.add_argument("--json", help="also write the pooled and each duel's result here")
    args = parser.parse_args(argv)
    from bgtrain.distributed.duels import pool_duel_work_directories

    try:
        pooled, duels = pool_duel_work_directories(args.directories)
    except ValueError as error:
        print(f"pool_duels: {error}", file=sys.stderr)
        return 2
    print(f"{pooled.agent_a} vs {pooled.agent_b}")
    for directory, duel in zip(args.directories, duels):
        print("  " + _line(duel, directory))
    print("  " + _line(pooled, "pooled"))
    if args.json:
        report = {"pooled": pooled.as_dict(),
                  "duels": [{"work_dir": str(d), **duel.as_dict()} for d, duel in zip(args.directories, duels)]}
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
