"""What each model's move choices lose by a teacher's equities, on the plays of rolls it never trained on.

    python scripts/within_roll_error.py MODEL [MODEL ...] --datasets DIR [DIR ...] [--kinds contact]
                                        [--threads 1] [--json FILE]
    python scripts/within_roll_error.py MODEL [MODEL ...] --heldout CONFIG [--kinds contact] ...

The datasets are plays datasets (``bgtrain dataset plays``; their rows carry the position and roll they
are plays of, ``bgtrain.datasets.plays``). Datasets that hold the same positions row for row (a plays
dataset and its relabellings by other teachers, ``bgtrain dataset relabel``) are one reference whose
teacher is the mean of their labels. In every group of rows of ``--kinds`` (the plays of one roll) each
model chooses the play of its lowest equity for the side then on roll, and the teacher's equity of that
play less the teacher's best is what the choice loses (``bgtrain.training.move_choices``).

``--heldout CONFIG`` scores the held-out groups of a supervised training instead (its config, a TOML file
such as a run directory's ``config.toml``: its datasets, ``run.seed`` and ``heldout_by`` give the split,
``bgtrain.training.heldout``), each group's own labels the teacher: students of one config compared on the
move choices none of them trained on. Only a config with ``heldout_by = "position"`` promises that when its
datasets hold a position twice (a dataset listed twice, or beside its relabelling); drawn by row, the split
warns where many of its held-out positions train.

A MODEL is a checkpoint (``PATH``, at 0-ply; ``PATH:1ply`` searches), or ``gnubg:0ply`` / ``gnubg:1ply``
(GNU Backgammon's net through ``gnubg-nn``). Printed for each model: the loss a decision x 1000 with its
95% interval over the groups, and, paired over the same groups, its difference from the first model.
It takes seconds at 0-ply, where games take hundreds of thousands to separate two close students:
attempt 17 of generation 9 (checkpoints/README.md) was ahead of the default by what this error
predicted. ``--json`` writes the same (atomically).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from bgtrain.benchmark.scorer import mean_interval
from bgtrain.datasets import load_datasets
from bgtrain.files import atomic_write
from bgtrain.outcomes import cubeless_equity
from bgtrain.training.move_choices import choice_losses
from engine.position_kinds import PositionKind

PLY_SUFFIXES = {"0ply": 0, "1ply": 1, "2ply": 2}


def reference(directories: list[str], kinds: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The positions, the teachers' mean cubeless equity and the groups of the rows of ``kinds``: the
    datasets must hold the same positions row for row, and at least one group."""
    datasets = [load_datasets([directory]) for directory in directories]
    first = datasets[0]
    for directory, data in zip(directories[1:], datasets[1:]):
        if not torch.equal(data.positions, first.positions) or not torch.equal(data.groups, first.groups):
            raise ValueError(f"{directory} does not hold {directories[0]}'s positions row for row: give the datasets of "
                             "one reference (a plays dataset and its relabellings)")
    if not bool((first.groups >= 0).any()):
        raise ValueError(f"{directories[0]} holds no move choice's group: give a plays dataset (bgtrain dataset plays)")
    wanted = torch.tensor([int(PositionKind[kind.upper()]) for kind in kinds])
    rows = torch.isin(first.kinds.long(), wanted)
    teacher = torch.stack([cubeless_equity(data.targets[rows].double()) for data in datasets]).mean(0)
    return first.positions[rows], teacher, first.groups[rows]


def heldout_reference(config_path: str, kinds: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The positions, labels' cubeless equity and groups of the held-out rows of ``kinds`` of the training
    ``config_path`` configures, and at least one group."""
    from bgtrain.training.config import load_config
    from bgtrain.training.heldout import split_dataset

    config = load_config(config_path)
    _, held = split_dataset(load_datasets(list(config.supervised.datasets)), config)
    wanted = torch.tensor([int(PositionKind[kind.upper()]) for kind in kinds])
    held = held.where(torch.isin(held.kinds.long(), wanted) & (held.groups >= 0))
    if not len(held):
        raise ValueError(f"{config_path}: no held-out move choice of the kinds {kinds} (a plays dataset, "
                         "[supervised] heldout_fraction above 0)")
    return held.positions, cubeless_equity(held.targets.double()), held.groups


def model_equities(spec: str, positions: torch.Tensor) -> torch.Tensor:
    """``spec``'s cubeless equities of ``positions`` for the side on roll."""
    name, _, suffix = spec.rpartition(":")
    if not name or suffix not in PLY_SUFFIXES:
        name, suffix = spec, "0ply"
    ply = PLY_SUFFIXES[suffix]
    if name == "gnubg":
        from bgtrain.datasets.labellers import GnubgEvaluation

        probabilities = GnubgEvaluation().probabilities(positions, ply)
    else:
        from bgtrain.values.evaluator import Evaluator

        if not Path(name).is_file():
            raise ValueError(f"{spec}: no checkpoint at {name} (or gnubg:0ply, gnubg:1ply)")
        probabilities = Evaluator.from_path(name).probabilities(positions, ply)
    return cubeless_equity(probabilities.double())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="checkpoints (PATH, PATH:1ply) or gnubg:0ply, gnubg:1ply")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--datasets", nargs="+",
                        help="a plays dataset and its relabellings (the same positions, row for row)")
    source.add_argument("--heldout", metavar="CONFIG",
                        help="a supervised training's config: score its held-out move choices")
    parser.add_argument("--kinds", default="contact", help="position kinds scored (contact, crashed, race)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    try:
        for kind in kinds:
            if kind.upper() not in PositionKind.__members__:
                raise ValueError(f"--kinds: {kind!r} is not a kind of position (contact, crashed, race)")
        positions, teacher, groups = (heldout_reference(args.heldout, kinds) if args.heldout
                                      else reference(args.datasets, kinds))
        results, first_losses = [], None
        for spec in args.models:
            started = time.perf_counter()
            losses = 1000 * choice_losses(model_equities(spec, positions), teacher, groups)
            mean, half = mean_interval(losses)
            row = {"model": spec, "error": mean, "interval": half, "decisions": int(losses.numel()),
                   "seconds": round(time.perf_counter() - started, 1)}
            if first_losses is None:
                first_losses = losses
            else:
                row["paired"], row["paired_interval"] = mean_interval(losses - first_losses)
            results.append(row)
            paired = f"   against {args.models[0]}: {row['paired']:+.3f} ± {row['paired_interval']:.3f}" if "paired" in row else ""
            print(f"{spec}: {mean:.3f} ± {half:.3f} x 1000 a decision ({row['decisions']:,} decisions, "
                  f"{row['seconds']} s){paired}", flush=True)
    except (ValueError, FileNotFoundError) as error:
        print(f"within_roll_error: {error}", file=sys.stderr)
        return 2
    if args.json:
        source = {"heldout": args.heldout} if args.heldout else {"datasets": args.datasets}
        atomic_write(Path(args.json), json.dumps({**source, "kinds": kinds, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
