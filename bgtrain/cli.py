"""The ``bgtrain`` command line: one subcommand per job, each in ``bgtrain.commands``.

Errors a user can cause (a malformed position ID, a missing file, an unknown config key) end the
command with one line on standard error and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from bgtrain.distributed.executor import ClusterError  # a job a Ray cluster cannot finish

# name -> module in bgtrain.commands with add_arguments(parser) and run(args) -> int
COMMANDS = {
    "eval": "Evaluate a position: outcome probabilities, equity and ranked plays at any ply",
    "moves": "Every legal play for positions and dice, as JSON lines",
    "train": "Train a value network by TD(lambda) self-play",
    "export": "Export a checkpoint as a self-describing ONNX or TorchScript file",
    "bench": "Play agent A against agent B (seat-swapped pairs) and report points per game with a 95 percent interval",
    "play": "Play the bot in the browser: a local game server with hints, the cube, a clock and .mat records",
    "rollout": "Roll out positions (or the plays of a roll): lock-step trials, luck-corrected, with standard errors",
    "dataset": "Generate labelled position datasets from self-play, or summarise one",
    "league": "Round robin between agents: a table of points per game, a rating per agent, JSON and a plot",
    "benchmark": "Error rates of agents' checker play on the move-error benchmark (equity lost per decision x 1000)",
    "analyse": "Analyse played games in .mat files: error rates, PR, marked plays, cube errors, luck (text, JSON, HTML)",
    "combine": "Make a phase model from networks, one a phase: a model with one phase retrained, or ensembles",
    "prune": "Attach pruning networks to a phase model: small networks that let its searches value few plays per roll",
    "serve": "An HTTP API for other programs: wildbg's /move and /eval, plus position IDs, XGIDs, cube and variants",
}


class Parser(argparse.ArgumentParser):
    """argparse with its usage errors in one line naming the flag, like every other error, exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone (which imports one command module, not all:
    a tenth of a second less to start ``bgtrain moves``)."""
    parser = Parser(prog="bgtrain", description="Train, benchmark and export backgammon bots.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, summary in COMMANDS.items():
        if command is not None and name != command:
            continue
        module = importlib.import_module(f"bgtrain.commands.{name}")
        sub = subparsers.add_parser(name, help=summary, description=module.__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run, config_overrides=[])
    return parser


def _describe(error: BaseException) -> str:
    """One line for an error the user can act on; an OSError names the file it concerns."""
    if isinstance(error, OSError) and error.filename:
        return f"{error.filename}: {error.strerror or error}"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def main(argv: list[str] | None = None) -> int:
    # A Ctrl-C while the command's modules load (seconds on a busy machine) is as quiet as one later.
    try:
        return _main(argv)
    except KeyboardInterrupt:
        words = list(sys.argv[1:] if argv is None else argv)
        name = words[0] if words and words[0] in COMMANDS else ""
        print(f"bgtrain{' ' + name if name else ''}: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None) -> int:
    from bgtrain.training.config import split_overrides

    argv = list(sys.argv[1:] if argv is None else argv)
    original = list(argv)
    name = argv[0] if argv else ""
    overrides = []
    if name in COMMANDS and getattr(importlib.import_module(f"bgtrain.commands.{name}"), "CONFIG_OVERRIDES", False):
        # Config overrides (section.key=value, --section.key value) are read by bgtrain.training.config alone.
        try:
            rest, overrides = split_overrides(argv[1:])
        except ValueError as error:
            print(f"bgtrain {name}: error: {error}", file=sys.stderr)
            return 2
        argv = [name, *rest]
    try:
        args = build_parser(name if name in COMMANDS else None).parse_args(argv)
    except SystemExit as stop:  # --help, or a usage error already printed in one line
        return stop.code if isinstance(stop.code, int) else 2
    args.config_overrides = overrides
    args.argv = ["bgtrain", *original]  # as typed, for the run's command.txt
    # The engine says when it stops to compile its kernels (a pause of seconds in a long run).
    kernel_log = logging.getLogger("engine.kernels")
    if not kernel_log.handlers:
        kernel_log.addHandler(logging.StreamHandler(sys.stderr))
        kernel_log.setLevel(logging.INFO)
    try:
        return args.run(args) or 0
    except BrokenPipeError:
        # The reader went away (``bgtrain moves ... | head``): stop quietly, as Unix tools do, with
        # SIGPIPE's status; stdout is pointed at /dev/null so that flushing it at exit cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (ValueError, OSError, ClusterError) as error:
        print(f"bgtrain {args.command}: error: {_describe(error)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"bgtrain {args.command}: error: out of memory", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:  # a run stopped on a signal says what it saved
        detail = f" ({interrupt})" if str(interrupt) else ""
        print(f"bgtrain {args.command}: interrupted{detail}", file=sys.stderr)
        return getattr(interrupt, "exit_status", 130)


if __name__ == "__main__":
    sys.exit(main())
