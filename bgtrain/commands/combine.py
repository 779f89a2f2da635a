"""Make a phase model from networks: one a phase, each from a checkpoint of a single network or from
a phase model.

    bgtrain combine --contact A.pt --crashed B.pt --race C.pt --out MODEL.pt
    bgtrain combine --contact X.pt Y.pt Z.pt --crashed B.pt --race C.pt --out MODEL.pt [--average]

A phase model given for a phase gives its network of that phase, so a model with one phase retrained is
``--contact OLD.pt --crashed OLD.pt --race runs/race/final.pt``. Several checkpoints for a phase become an
ensemble there (their outputs averaged, at the cost of all of them), or with ``--average`` one network
whose weights are the mean of theirs (one network's cost; for networks of one shape fine-tuned from one
start, such as a generation's successive steps: generation 9's attempt 21 averaged attempts 18, 19 and 20
so). The new file records each phase's source and training counters (``bgtrain.model.combine``); pruning
networks are not carried over (``bgtrain prune`` fits new ones).
"""

from __future__ import annotations

import argparse

from bgtrain.files import check_output_file
from engine.position_kinds import PHASE_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for phase in PHASE_NAMES:
        parser.add_argument(f"--{phase}", nargs="+", required=True, metavar="CKPT",
                            help=f"the {phase} network: a checkpoint of one network or a phase model "
                                 "(several: an ensemble of single networks)")
    parser.add_argument("--average", action="store_true",
                        help="a phase given several checkpoints gets one network of their mean weights (one "
                             "shape, fine-tuned from one start) instead of an ensemble")
    parser.add_argument("--out", required=True, help="the phase model to write (.pt)")


def run(args: argparse.Namespace) -> int:
    from bgtrain.model.combine import combine_checkpoints
    from bgtrain.model.loading import load_model

    if not args.out.endswith(".pt"):
        raise ValueError(f"--out {args.out}: a phase model is a checkpoint, named .pt")
    check_output_file(args.out, "--out")
    sources = [given[0] if len(given) == 1 else given for given in (getattr(args, phase) for phase in PHASE_NAMES)]
    path = combine_checkpoints(*sources, args.out, average=args.average)
    payload = load_model(path).payload
    for phase in PHASE_NAMES:
        network = payload["model"]["phases"][phase]
        shape = "ensemble of " + str(len(network["members"])) if network.get("kind") == "ensemble" else (
            f"{network['encoder']} {'-'.join(str(size) for size in network['hidden'])}")
        if phase in payload.get("averaged", []):
            shape += f" (mean of {len(payload['sources'][phase])})"
        source = payload["sources"][phase]
        print(f"{phase:8} {shape:28} from {', '.join(source) if isinstance(source, list) else source}")
    print(f"wrote {path} ({payload['rules']})")
    return 0
