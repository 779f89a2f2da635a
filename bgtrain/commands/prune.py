"""Attach pruning networks to a phase model: small networks that rank a roll's plays inside the search.

    bgtrain prune MODEL --positions DIR [DIR ...] --out PATH [--keep PHASE=CHECKPOINT ...]
                  [--encoder tesauro198] [--hidden 16] [--epochs 4] [--batch-size 256]
                  [--learning-rate 0.003] [--seed 1] [--threads 1]

Fits one small network a phase (``bgtrain.training.pruning``) to MODEL's own 0-ply outputs on the
positions of the datasets (``DIR@N`` takes the first N shards; the positions after plays of ``bgtrain
dataset plays`` are what the networks must rank; their labels are not used), and writes MODEL again at
PATH with the networks as its ``pruning`` entry (``bgtrain.model.pruning``). Every command that loads
PATH then prunes its searches' inner move choices as GNU Backgammon does: of a roll with more than 16
plays, only the pruning networks' best 5 are valued by the full model (``bgtrain.values.pruning``;
``bgtrain eval --no-pruning`` turns it off). MODEL itself is not changed. Prints each phase's held-out
figures: the loss and the root mean square of the equity's difference from MODEL's.

``--keep race=START.pt`` copies START's race pruning network instead of fitting one, where MODEL's race
network is START's own (checked weight for weight): a model that retrained its contact and crashed networks
and kept its start's race network then needs no race positions.
"""

from __future__ import annotations

import argparse
import json
import time

from bgtrain.commands import add_seed, add_threads, apply_threads, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="phase model checkpoint (.pt) to attach pruning networks to")
    parser.add_argument("--positions", nargs="+", metavar="DIR",
                        help="datasets whose positions the networks are fitted on (DIR@N: its first N shards)")
    parser.add_argument("--keep", action="append", default=[], metavar="PHASE=CHECKPOINT",
                        help="copy CHECKPOINT's pruning network of PHASE, whose network MODEL shares, rather than "
                             "fit one (repeatable)")
    parser.add_argument("--out", required=True, help="where to write the model with its pruning networks (.pt)")
    parser.add_argument("--encoder", default="tesauro198", help="the networks' inputs (default tesauro198)")
    parser.add_argument("--hidden", type=positive_int, default=16, help="hidden units a phase (default 16)")
    parser.add_argument("--epochs", type=positive_int, default=4, help="passes over the positions (default 4)")
    parser.add_argument("--batch-size", type=positive_int, default=256, help="minibatch size (default 256)")
    parser.add_argument("--learning-rate", type=float, default=0.003, help="Adam's initial rate (default 0.003)")
    parser.add_argument("--min-positions", type=positive_int, default=None,
                        help="fewest positions of a phase to fit its network on (default "
                             "bgtrain.training.pruning.MIN_POSITIONS, 10,000)")
    add_seed(parser, default=1)
    add_threads(parser)


def run(args: argparse.Namespace) -> int:
    from bgtrain.datasets.shards import load_datasets
    from bgtrain.model.loading import load_model
    from bgtrain.model.phases import PhaseNetwork
    from bgtrain.training.pruning import (
        PruningTraining,
        attach_pruning,
        fit_pruning_networks,
        training_record,
    )
    from engine.position_kinds import PHASE_NAMES

    apply_threads(args)
    kept = kept_phases(args.keep)
    if not args.out.endswith(".pt"):
        raise ValueError(f"--out {args.out}: a model with pruning networks is a checkpoint, named .pt")
    settings = PruningTraining(encoder=args.encoder, hidden=args.hidden, epochs=args.epochs,
                               batch_size=args.batch_size, learning_rate=args.learning_rate, seed=args.seed,
                               **({} if args.min_positions is None else {"min_positions": args.min_positions}))
    loaded = load_model(args.model)
    if loaded.payload is None or not isinstance(loaded.model, PhaseNetwork):
        raise ValueError(f"{args.model}: pruning networks attach to a phase model checkpoint (.pt)")
    if len(kept) < len(PHASE_NAMES) and not args.positions:
        raise ValueError("--positions: name the datasets the pruning networks are fitted on "
                         "(or --keep every phase's)")
    positions = load_datasets(args.positions).positions if args.positions else None
    start = time.perf_counter()
    networks, report = fit_pruning_networks(loaded.model, positions, settings, loaded.rules, kept)
    seconds = time.perf_counter() - start
    record = training_record(settings, args.model, args.positions or [], report, seconds)
    path = attach_pruning(args.model, networks, record, args.out)
    for phase, figures in report.items():
        if "kept_from" in figures:
            print(f"{phase:8} kept from {figures['kept_from']}")
        else:
            print(f"{phase:8} {figures['positions']:>9,} positions  held-out loss {figures['heldout_loss']:.5f}  "
                  f"equity rms {figures['equity_rms']:.4f}")
    print(f"wrote {path} ({seconds:.1f} s of training); its pruning entry: {json.dumps(record['settings'])}")
    return 0


def kept_phases(words: list[str]) -> dict[str, str]:
    """``--keep PHASE=CHECKPOINT`` words as {phase: checkpoint}; a ValueError in one line for a bad one."""
    from engine.position_kinds import PHASE_NAMES

    kept: dict[str, str] = {}
    for word in words:
        phase, sign, source = word.partition("=")
        if not sign or phase not in PHASE_NAMES or not source:
            raise ValueError(f"--keep {word}: write PHASE=CHECKPOINT, PHASE one of {', '.join(PHASE_NAMES)}")
        if phase in kept:
            raise ValueError(f"--keep {word}: the {phase} pruning network is already kept from {kept[phase]}")
        kept[phase] = source
    return kept
