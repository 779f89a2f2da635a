"""Several cubeless duels of the same two agents on different dice, as one result.

    python scripts/pool_duels.py DIR [DIR ...] [--json FILE]
    python scripts/pool_duels.py A_DIR [A_DIR ...] --minus B_DIR [B_DIR ...]

Each DIR is the ``--work-dir`` of a finished ``bgtrain bench A B --games N --seed S`` (its ``job.json``
and shards). The pooled figure is over every seat-swapped pair of all of them, with the 95% interval
over all their pair means: what one duel of all those games would report, and the figure to quote for
"over 100,000 games" made of runs on several seeds. Each duel's own line is printed first. Duels of
other agents, or two on the same seed (the same dice: those games would count twice), are refused.

With ``--minus``, the first directories are agent A's duels against an opponent and the ones after
``--minus`` agent B's against the same opponent on the same seeds: each side is pooled, then A's points
less B's pair for pair on the same dice, with a paired interval
(``bgtrain.distributed.duels.paired_duel_difference``). Two models' results against GNU Backgammon 0-ply
correlate about 0.7 pair by pair, so the paired difference is about twice as tight as comparing the two
pooled figures, and tighter than a head-to-head of as many games for the question "which of the two
beats this opponent by more".
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
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
    parser.add_argument("--minus", nargs="+", metavar="DIR", default=None,
                        help="another agent's duels against the same opponent on the same seeds: print the first "
                             "agent's points less its, pair for pair")
    args = parser.parse_args(argv)
    from bgtrain.distributed.duels import paired_duel_difference, pool_duel_work_directories

    try:
        pooled, duels = pool_duel_work_directories(args.directories)
        paired = None if args.minus is None else paired_duel_difference(args.directories, args.minus)
        pooled_minus = None if args.minus is None else pool_duel_work_directories(args.minus)
    except ValueError as error:
        print(f"pool_duels: {error}", file=sys.stderr)
        return 2
    print(f"{pooled.agent_a} vs {pooled.agent_b}")
    for directory, duel in zip(args.directories, duels):
        print("  " + _line(duel, directory))
    print("  " + _line(pooled, "pooled"))
    if paired is not None:
        print(f"{pooled_minus[0].agent_a} vs {pooled_minus[0].agent_b}")
        for directory, duel in zip(args.minus, pooled_minus[1]):
            print("  " + _line(duel, directory))
        print("  " + _line(pooled_minus[0], "pooled"))
        print(paired.line())
    if args.json:
        report = {"pooled": pooled.as_dict(),
                  "duels": [{"work_dir": str(d), **duel.as_dict()} for d, duel in zip(args.directories, duels)]}
        if paired is not None:
            report["minus"] = {"pooled": pooled_minus[0].as_dict(), "paired": asdict(paired)}
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
