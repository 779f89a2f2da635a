"""One generation, from self-play to a shipped model, from one plan (docs/training.md, "The generation
pipeline"):

    python scripts/generation.py --config configs/generation/gen9.toml [--threads N]
        [--executor ray [--address auto|HOST:PORT] [--workers N]] [--stop-after STAGE] [--in-process]

The stages (``bgtrain.generation.stages``): every ``[[datasets]]`` generated, every ``[[relabel]]``,
``[[select]]`` and ``[[plays]]`` (each after its source), the students' starting networks, one
supervised training a phase, the phase model, its pruning networks (``[pruning]``), the move-error
benchmark, every ``[[head_to_head]]`` bench, then the model copied to ``[generation] model`` and the
lineage JSON written. Each command is printed before it runs. The generation's directory holds a state
file of the finished stages with their outputs' sha256: run the same command again after a stop or a
kill, and it skips what finished and resumes the stage that was running. Edit the plan after some stages
ran, and the same command keeps the finished stages the edit left as they were and runs the rest (a plan
that would make a finished dataset again, or another generation's, is refused in one line). ``--executor
ray`` goes to the commands that take it (dataset generate, relabel and plays, bench: a shard or a chunk of
games a work unit); selection, training and the benchmark run in their own process. ``--in-process`` runs each command in this process (no interpreter start and no
compile per stage: seconds saved on tiny plans; tests).
"""

from __future__ import annotations

import argparse
import shlex
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from bgtrain.generation.reading import load_plan
from bgtrain.generation.runner import run_generation
from bgtrain.generation.stages import RunOptions, StageFailed


def in_subprocess(words: list[str]) -> int:
    """Run ``bgtrain WORDS`` in a child process and return its status. The child shares this process's
    group, so a Ctrl-C reaches it directly: this process ignores SIGINT while it waits, so that a training
    can save its state and exit 130 (``subprocess.run`` would kill it 0.25 s later), and passes a SIGTERM
    sent to it alone on to the child."""
    child = subprocess.Popen([sys.executable, "-m", "bgtrain.cli", *words])
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
                signal.SIGTERM: signal.signal(signal.SIGTERM, lambda number, frame: child.send_signal(number))}
    try:
        return child.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def in_this_process(words: list[str]) -> int:
    from bgtrain.cli import main

    try:
        return main(words)
    except SystemExit as stop:  # argparse's --help and usage errors
        return stop.code if isinstance(stop.code, int) else 2


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="generation.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="the generation's plan (configs/generation/NAME.toml)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads of every command")
    parser.add_argument("--executor", choices=("process", "ray"), default="process",
                        help="where dataset generation and bench run their work units (default: this machine)")
    parser.add_argument("--address", default=None, help="Ray cluster to join (with --executor ray)")
    parser.add_argument("--workers", type=int, default=None, help="Ray worker actors (with --executor ray)")
    parser.add_argument("--stop-after", metavar="STAGE", default=None,
                        help="stop once this stage has finished (e.g. dataset:NAME, train:contact, combine)")
    parser.add_argument("--in-process", action="store_true", help="run every command in this process")
    arguments = parser.parse_args(argv)
    if arguments.threads is not None and arguments.threads < 1:
        parser.error(f"--threads must be at least 1, not {arguments.threads}")
    if arguments.executor != "ray" and (arguments.address or arguments.workers):
        parser.error("--address and --workers go with --executor ray")
    return arguments


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    executor: list[str] = []
    if arguments.executor == "ray":
        executor = ["--executor", "ray"]
        executor += ["--address", arguments.address] if arguments.address else []
        executor += ["--workers", str(arguments.workers)] if arguments.workers else []
    if arguments.threads is not None:
        import torch

        torch.set_num_threads(arguments.threads)  # the stages run in this process (member, combine)
    command_line = shlex.join(["python", "scripts/generation.py", *(sys.argv[1:] if argv is None else argv)])
    try:
        plan = load_plan(arguments.config)
        run_generation(plan, arguments.config, in_this_process if arguments.in_process else in_subprocess,
                       RunOptions(arguments.threads, tuple(executor)), arguments.stop_after,
                       command_line=command_line)
    except StageFailed as failed:
        print(f"generation.py: {failed}", file=sys.stderr)
        return failed.status
    except (ValueError, OSError) as error:
        where = f"{error.filename}: " if isinstance(error, OSError) and error.filename else ""
        message = (error.strerror if isinstance(error, OSError) and error.strerror else str(error)).strip()
        print(f"generation.py: {where}{message.splitlines()[0] if message else type(error).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("generation.py: interrupted; the same command resumes", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
