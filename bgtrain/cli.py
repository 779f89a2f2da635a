"""The ``bgtrain`` command line: one subcommand per job, each in ``bgtrain.commands``.

Errors a user can cause (a malformed position ID, a missing file, an unknown config key) end the
command with one line on standard error and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# name -> module in bgtrain.commands with add_arguments(parser) and run(args) -> int
COMMANDS = {
    "eval": "Evaluate a position: outcome probabilities, equity and ranked plays at any ply",
    "moves": "Every legal play for positions and dice, as JSON lines",
    "train": "Train a value network by TD(lambda) self-play",
    "export": "Export a checkpoint as a self-describing ONNX or TorchScript file",
    "bench": "Play agent A against agent B (seat-swapped pairs) and report points per game with a 95 percent interval",
    "dataset": "Generate labelled position datasets from self-play, or summarise one",
    "league": "Round robin between agents: a table of points per game, a rating per agent, JSON and a plot",
}


class UserError(Exception):
    """A problem with what the user gave us, reported as one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bgtrain", description="Train, benchmark and export backgammon bots.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, summary in COMMANDS.items():
        module = importlib.import_module(f"bgtrain.commands.{name}")
        sub = subparsers.add_parser(name, help=summary, description=module.__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    from bgtrain.commands.train import overrides_as_assignments

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:
        try:
            argv = overrides_as_assignments(argv)
        except ValueError as error:
            print(f"bgtrain train: error: {error}", file=sys.stderr)
            return 2
    args = build_parser().parse_args(argv)
    # The engine says when it stops to compile its kernels (a pause of seconds in a long run).
    kernel_log = logging.getLogger("engine.kernels")
    if not kernel_log.handlers:
        kernel_log.addHandler(logging.StreamHandler(sys.stderr))
        kernel_log.setLevel(logging.INFO)
    try:
        return args.run(args) or 0
    except (UserError, ValueError, FileNotFoundError, IsADirectoryError, PermissionError) as error:
        print(f"bgtrain {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bgtrain {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
