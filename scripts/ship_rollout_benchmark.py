"""Make the rollout relabelling of whole classes the shipped benchmark's reference.

    python scripts/rollout_benchmark.py --class contact --decisions 4000 --out runs/benchmark-rollout-contact-all
    python scripts/rollout_benchmark.py --class crashed --decisions 1200 --out runs/benchmark-rollout-crashed-all
    python scripts/ship_rollout_benchmark.py runs/benchmark-rollout-contact-all runs/benchmark-rollout-crashed-all

Each argument is the ``--out`` directory of a ``scripts/rollout_benchmark.py`` run that relabelled a
whole class of the GNU Backgammon 2-ply set (``bgtrain/data/benchmark/gnubg-2ply/``). Those classes'
decisions get the rollout losses (their top candidates only: a play not kept is charged the worst kept
loss); the other classes keep their GNU 2-ply losses (race, where GNU 2-ply is close to exact). The
result is written to ``--out`` (the shipped set, ``bgtrain/data/benchmark/``) with a manifest that
gives the reference of each class, the rollout settings and the hash of the set it was made from.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bgtrain.benchmark.decisions import (
    CLASSES,
    DATA_DIRECTORY,
    GNUBG_2PLY_DATA,
    content_hash,
    load_decisions,
    read_manifest,
    save_decisions,
    write_manifest,
)
from bgtrain.benchmark.rollout_reference import replace_classes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("relabellings", nargs="+", type=Path, help="rollout_benchmark.py --out directories")
    parser.add_argument("--base", type=Path, default=GNUBG_2PLY_DATA)
    parser.add_argument("--out", type=Path, default=DATA_DIRECTORY)
    args = parser.parse_args()

    base, base_manifest = load_decisions(args.base), read_manifest(args.base)
    relabelled, references = {}, {}
    for directory in args.relabellings:
        manifest = read_manifest(directory / "benchmark.npz")
        name = manifest["settings"]["class"]
        if manifest["settings"]["source_sha256"] != content_hash(base):
            raise SystemExit(f"{directory} relabelled another base set than {args.base}")
        relabelled[name] = load_decisions(directory / "benchmark.npz")
        references[name] = {**manifest["reference"], "top": manifest["settings"]["top"]}
    try:
        decisions = replace_classes(base, relabelled)
    except ValueError as error:
        raise SystemExit(f"ship_rollout_benchmark: {error}") from None
    gnubg_reference = base_manifest["reference"]
    data = save_decisions(decisions, args.out / "benchmark.npz")
    write_manifest(data, {
        "format": base_manifest["format"],
        "data": data.name,
        "content_sha256": content_hash(decisions),
        "seed": base_manifest["seed"],
        "reference": {name: references.get(name, gnubg_reference) for name in CLASSES},
        "relabelled_from": {"data": os.path.relpath(args.base, args.out),
                            "content_sha256": base_manifest["content_sha256"]},
        "settings": base_manifest["settings"],
        "decisions": len(decisions),
        "candidates": int(decisions.candidate.shape[0]),
        "counts": decisions.class_counts(),
        "sources": base_manifest["sources"],
    })
    print(f"wrote {data}: {decisions.class_counts()}, references "
          + ", ".join(f"{name} {references[name]['program'] if name in references else 'GNU 2-ply'}" for name in CLASSES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
