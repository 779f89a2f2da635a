"""Train a value network: TD(lambda) self-play, or supervised on datasets (``train.method``).

    bgtrain train --config configs/default.toml [--out DIR] [--overwrite] [section.field=value ...]
    bgtrain train --resume DIR/latest.pt [--out DIR] [section.field=value ...]
    bgtrain train ... [--executor local|process|ray] [--address HOST:PORT] [--workers N]

Overrides name any config field: ``--train.learning_rate 3e-4`` or ``train.total_games=20000``.
The run directory (``run.out_dir/run.name``, or ``--out``) receives the resolved config, the command
line (``command.txt``, a block per start), TensorBoard logs (``tensorboard --logdir DIR/tensorboard``),
checkpoints under ``checkpoints/`` plus ``latest.pt`` (with the full training state) and, at the end,
``final.pt``. A directory that already holds a run is refused: resume it, give another ``--out``, or
pass ``--overwrite`` to delete that run first. Only one process at a time trains in a directory.

``--resume CKPT`` continues a run exactly where its checkpoint left it, in the run directory the
checkpoint is in (``DIR`` for ``DIR/latest.pt`` and ``DIR/checkpoints/games_N.pt``) unless ``--out``
names another, with the config stored in the checkpoint. Overrides that can apply take effect (e.g. a
larger ``train.total_games``, the learning rate, evaluation and checkpoint settings); those that cannot
(``run.variant``, ``run.seed``, ``model.*``, ``train.method``, ``train.optimizer``,
``selfplay.games_in_parallel``) are refused by name.

``--executor``, ``--address`` and ``--workers`` are ``executor.mode``, ``executor.address`` and
``executor.workers``: TD self-play on actors, or a supervised run data-parallel on Ray Train's workers
(``bgtrain.distributed.ray_train``; a run may be resumed on either executor).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bgtrain.commands import add_device, add_seed, add_threads, add_variant, apply_threads
from bgtrain.files import check_output_directory
from bgtrain.training.config import apply_overrides, config_from_dict, config_to_dict, load_config

# Config overrides (section.field=value, --section.field value) are taken out of the command line by
# bgtrain.cli with bgtrain.training.config.split_overrides and arrive as args.config_overrides.
CONFIG_OVERRIDES = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML config file (e.g. configs/default.toml)")
    parser.add_argument("--out", help="run directory (default: run.out_dir/run.name from the config; "
                        "on resume, the checkpoint's run directory)")
    parser.add_argument("--resume", metavar="CKPT", help="continue the run saved in this checkpoint")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the run already in the run directory (its checkpoints and logs are deleted)")
    add_device(parser, default=None, help="shorthand for run.device=... (cpu, cuda, cuda:N)")
    add_seed(parser, default=None, help="shorthand for run.seed=...")
    add_variant(parser, default=None, help="shorthand for run.variant=... (engine.variants)")
    add_threads(parser)
    parser.add_argument("--executor", choices=("local", "process", "ray"), default=None,
                        help="shorthand for executor.mode=... (ray: self-play actors, or, with train.method = "
                        "'supervised', data-parallel training on Ray Train workers)")
    parser.add_argument("--address", default=None, help="shorthand for executor.address=... (a Ray cluster)")
    parser.add_argument("--workers", type=int, default=None, help="shorthand for executor.workers=...")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def resolve_config(args: argparse.Namespace):
    """The run's Config: the file's (or the checkpoint's on resume) with the overrides and shorthands."""
    from bgtrain.training.run_directory import load_resume_checkpoint, resume_directory

    overrides = list(getattr(args, "config_overrides", []))
    for flag, key in ((args.device, "device"), (args.seed, "seed"), (args.variant, "variant")):
        if flag is not None:
            overrides.append(("run", key, str(flag)))
    for flag, key in ((args.executor, "mode"), (args.address, "address"), (args.workers, "workers")):
        if flag is not None:
            overrides.append(("executor", key, str(flag)))
    out = Path(args.out) if args.out else (resume_directory(args.resume) if args.resume else None)
    if out is not None:
        check_output_directory(out, "--out")
        overrides += [("run", "out_dir", out.parent.as_posix() or "."), ("run", "name", out.name)]
    if args.resume:
        if args.config:
            raise ValueError("--resume continues with the config stored in the checkpoint; leave out --config "
                             "and change fields with overrides")
        if args.overwrite:
            raise ValueError("--overwrite starts a new run; a resume continues one (leave out one of them)")
        stored = config_to_dict(config_from_dict(load_resume_checkpoint(args.resume)["config"]))
        return config_from_dict(apply_overrides(stored, overrides))
    if not args.config:
        raise ValueError("name a config with --config (e.g. configs/default.toml) or a run to --resume")
    return load_config(args.config, overrides)


def train(config, resume: str | Path | None = None, progress: bool = True, argv: list[str] | None = None,
          overwrite: bool = False) -> Path:
    """Run (or resume) training to the end of ``config`` in ``config.run_dir``; returns the final
    checkpoint's path. The method (TD self-play or supervised, ``train.method``) and the executor
    (``executor.mode``: self-play in this process or on actors; supervised in this process or on Ray
    Train's workers) are chosen here; a new run, or a resume
    elsewhere, refuses a directory holding a run unless ``overwrite``."""
    import torch

    from bgtrain.training import run_directory as runs
    from bgtrain.training.config import to_toml_text
    from bgtrain.training.stop_signals import StopSignals

    in_place = resume is not None and runs.resume_directory(resume).resolve() == config.run_dir.resolve()
    directory = runs.RunDirectory(config.run_dir).acquire(resuming=in_place, overwrite=overwrite)
    stop = StopSignals().install()  # Ctrl-C or SIGTERM: latest.pt is written at the next step, then the run stops
    try:
        if config.train.method == "supervised":  # on datasets instead of self-play
            from bgtrain.training.supervised import train_supervised

            directory.start(to_toml_text(config), argv, overwrite and not resume, torch.__version__)
            if config.executor.mode == "ray":  # one model on Ray Train's workers, data-parallel
                from bgtrain.distributed.ray_train import train_supervised_ray

                return train_supervised_ray(config, directory, resume, progress, stop)
            return train_supervised(config, directory, resume, progress, stop)
        from bgtrain.training.td import Run, train_td

        run_class = Run
        if config.executor.mode != "local":
            from bgtrain.distributed.selfplay import DistributedRun  # self-play actors and this learner

            run_class = DistributedRun
        run = run_class.resume(resume, config) if resume else run_class(config)
        directory.start(to_toml_text(config), argv, overwrite and not resume, torch.__version__)
        return train_td(run, config, directory, progress, resumed=resume is not None, stop=stop)
    finally:
        stop.restore()
        directory.release()


def run(args: argparse.Namespace) -> int:
    config = resolve_config(args)
    apply_threads(args)
    final = train(config, resume=args.resume, progress=not args.no_progress, argv=getattr(args, "argv", ["bgtrain", *sys.argv[1:]]),
                  overwrite=args.overwrite)
    from bgtrain.model.checkpoint import load_checkpoint

    if Path(final).is_file():  # always, but for a stand-in for train()
        print(training_summary(load_checkpoint(final)))
    print(f"final model: {final}")
    print(f"TensorBoard: tensorboard --logdir {config.run_dir / 'tensorboard'}")
    return 0


def training_summary(payload: dict) -> str:
    """One line on what a finished run reached: its games or epochs, its training time, the held-out loss of
    a supervised run and the final strength check (``[evaluation]``), as TD and supervised runs alike end."""
    counters, strength = payload.get("counters", {}), payload.get("strength", {})
    minutes, seconds = divmod(round(counters.get("train_seconds", 0.0)), 60)
    if counters.get("epochs"):
        reached = f"{counters['epochs']:,} epochs ({counters.get('positions', 0):,} positions)"
    else:
        reached = f"{counters.get('games', 0):,} games"
    parts = [f"trained {reached} in {minutes}:{seconds:02d}"]
    if "heldout_loss" in strength:
        parts.append(f"held-out loss {strength['heldout_loss']:.4f}")
    for name, result in strength.items():
        if isinstance(result, dict) and "points_per_game" in result:
            parts.append(f"vs {name} {result['points_per_game']:+.3f} ± {result['interval95']:.3f} points per game "
                         f"(95%, {result.get('games', 0):,} games)")
    return "; ".join(parts)
