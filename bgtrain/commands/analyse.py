"""Analyse played games from Jellyfish ``.mat`` files (GNU Backgammon, eXtreme Gammon and bgtrain write them)
and GNU Backgammon's ``.sgf`` files: every checker play and cube decision, at any ply, as GNU Backgammon's
``analyse match`` does.

    bgtrain analyse FILE_OR_FOLDER... [--ply N] [--model PATH] [--json] [--html FILE] [--cubeless]

A folder stands for every ``.mat`` and ``.sgf`` file in it. Printed per file: both players' error rate (thousandths of
equity lost per decision, GNU Backgammon's count), an XG-style PR, doubtful / bad / very bad plays (GNU's
thresholds 0.04 / 0.08 / 0.16), cube errors (missed and wrong doubles, wrong takes and passes), luck in total
and per roll, the result and the luck-adjusted result; then every marked decision with the play made and the
best play, with their equities (``--all`` lists every decision). With several files, a table of every player
over all of them. ``--json`` prints the whole report (every decision) as one JSON object; ``--html FILE``
also writes a page with the board at each marked decision and an equity graph per game.

Equities are cubeful (Janowski, ``bgtrain.cube``; EMG in matches) and normalised to the cube; ``--cubeless``
analyses the plays of cubeless money sessions (``bgtrain bench`` without ``--cube``) by cubeless equity and
skips the cube. Money games are scored without the Jacoby rule (as bgtrain plays them); ``--jacoby`` for
files played with it. ``--luck rolls`` (default: the best play's equity minus the average over the 21
rolls), ``static`` (minus the 0-ply value: about 20 times faster) or ``none``.

All decisions of all files are evaluated together in large batches. A file that cannot be read, or a game
with a play that is not legal, gets one line on standard error naming the file and line; the other games
are still analysed, and the exit status is then 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from bgtrain.commands import add_device, add_threads, apply_threads
from bgtrain.values.evaluator import MAX_PLY, Evaluator


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help=".mat or .sgf files, or folders of them")
    parser.add_argument("--ply", type=int, default=0, help=f"search depth, GNU numbering, 0 to {MAX_PLY} (default 0)")
    parser.add_argument("--model", help="checkpoint (.pt) or export (.onnx) (default checkpoints/bgtrain-gen9-deep.pt)")
    parser.add_argument("--json", action="store_true", help="print the whole report as one JSON object")
    parser.add_argument("--html", metavar="FILE", help="also write the report as an HTML page")
    parser.add_argument("--all", action="store_true", help="list every decision, not only the marked ones")
    parser.add_argument("--cubeless", action="store_true",
                        help="cubeless equities and no cube analysis (cubeless money sessions)")
    parser.add_argument("--jacoby", action="store_true", help="money games were played with the Jacoby rule")
    parser.add_argument("--luck", choices=("rolls", "static", "none"), default="rolls",
                        help="how luck is measured (default rolls: against the average of the 21 rolls)")
    add_device(parser)
    add_threads(parser)


def match_files(names: list[str]) -> list[Path]:
    """The files named, folders replaced by their ``.mat`` and ``.sgf`` files (sorted); a missing name is an error."""
    paths = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            found = sorted(child for child in path.iterdir() if child.suffix.lower() in (".mat", ".sgf"))
            if not found:
                raise ValueError(f"{name}: no .mat or .sgf files in this folder")
            paths.extend(found)
        elif path.exists():
            paths.append(path)
        else:
            raise FileNotFoundError(2, "no such file or folder", name)
    return paths


def run(args: argparse.Namespace) -> int:
    from bgtrain.analysis.html import render_html
    from bgtrain.analysis.report import render_text
    from bgtrain.analysis.summary import analyse_files
    from bgtrain.files import atomic_write
    from bgtrain.model.shipped import shipped_model

    if not 0 <= args.ply <= MAX_PLY:
        raise ValueError(f"--ply {args.ply}: the search depth must be 0 to {MAX_PLY}")
    apply_threads(args)
    paths = match_files(args.files)
    model = Path(args.model) if args.model else shipped_model()
    evaluator = Evaluator.from_path(model, torch.device(args.device))
    if evaluator.rules.name != "backgammon":
        raise ValueError(f"--model {model} plays {evaluator.rules.name}; match files hold standard backgammon")
    report = analyse_files(evaluator, paths, args.ply, args.cubeless, args.luck, args.jacoby)
    report["model"] = str(model)
    if args.html:
        atomic_write(args.html, render_html(report))
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        sys.stdout.write(render_text(report, args.all))
    for error in report["errors"]:
        print(f"bgtrain analyse: error: {error}", file=sys.stderr)
    return 2 if report["errors"] else 0
