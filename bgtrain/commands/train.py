"""Train a value network by TD(lambda) self-play.

    bgtrain train --config configs/default.toml [--out DIR] [--resume CKPT] [section.field=value ...]

Overrides name any config field: ``--train.learning_rate 3e-4`` or ``train.total_games=20000``.
The run directory (``run.out_dir/run.name``, or ``--out``) receives the resolved config, the command
line, TensorBoard logs (``tensorboard --logdir DIR/tensorboard``), checkpoints under
``checkpoints/`` plus ``latest.pt`` (with the full training state) and, at the end, ``final.pt``.

``--resume DIR/latest.pt`` continues a run exactly where its checkpoint left it, with the config
stored in the checkpoint (overrides still apply, e.g. a larger ``train.total_games``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bgtrain.checkpoint import load_checkpoint
from bgtrain.config import config_from_dict, config_to_dict, load_config, parse_overrides


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_flags(parser)
    parser.add_argument("overrides", nargs=argparse.REMAINDER, help="section.field=value or --section.field value")


def _add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML config file (e.g. configs/default.toml)")
    parser.add_argument("--out", help="run directory (default: run.out_dir/run.name from the config)")
    parser.add_argument("--resume", metavar="CKPT", help="continue the run saved in this checkpoint")
    parser.add_argument("--device", help="shorthand for run.device=...")
    parser.add_argument("--seed", type=int, help="shorthand for run.seed=...")
    parser.add_argument("--variant", help="shorthand for run.variant=... (engine.variants)")
    parser.add_argument("--threads", type=int, help="CPU threads for torch (1 is fastest on a shared machine)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def overrides_as_assignments(argv: list[str]) -> list[str]:
    """``--section.field value`` and ``--section.field=value`` become ``section.field=value``: config
    overrides are the only dotted options, and as assignments argparse never takes them for flags."""
    out, index = [], 0
    while index < len(argv):
        token = argv[index]
        name = token[2:].split("=", 1)[0]
        if token.startswith("--") and "." in name:
            if "=" in token:
                out.append(token[2:])
            elif index + 1 < len(argv):
                out.append(f"{name}={argv[index + 1]}")
                index += 1
            else:
                raise ValueError(f"override {token} has no value")
        else:
            out.append(token)
        index += 1
    return out


def _flags_among_overrides(args: argparse.Namespace) -> argparse.Namespace:
    """``argparse.REMAINDER`` also takes this command's own flags when they follow an override
    (``bgtrain train --config X train.total_games=5 --no-progress``): read them back out of the
    overrides, so that they work anywhere on the line."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, argument_default=argparse.SUPPRESS)
    _add_flags(parser)
    found, rest = parser.parse_known_args(args.overrides)
    return argparse.Namespace(**{**vars(args), **vars(found), "overrides": rest})


def resolve_config(args: argparse.Namespace):
    overrides = list(args.overrides)
    if args.device:
        overrides.append(f"run.device={args.device}")
    if args.seed is not None:
        overrides.append(f"run.seed={args.seed}")
    if args.variant:
        overrides.append(f"run.variant={args.variant}")
    if args.out:
        out = Path(args.out)
        overrides += [f"run.out_dir={out.parent.as_posix() or '.'}", f"run.name={out.name}"]
    if args.resume:
        if args.config:
            raise ValueError("--resume continues with the config stored in the checkpoint; leave out --config "
                             "and change fields with overrides")
        stored = config_to_dict(config_from_dict(load_checkpoint(args.resume)["config"]))
        for section, key, text in parse_overrides(overrides):
            from bgtrain.config import _override_value

            stored.setdefault(section, {})[key] = _override_value(section, key, text)
        return config_from_dict(stored)
    if not args.config:
        raise ValueError("name a config with --config (e.g. configs/default.toml) or a run to --resume")
    return load_config(args.config, overrides)


def run(args: argparse.Namespace) -> int:
    import torch

    from bgtrain.train import train

    args = _flags_among_overrides(args)
    config = resolve_config(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    final = train(config, resume=args.resume, progress=not args.no_progress, argv=["bgtrain", *sys.argv[1:]])
    print(f"final model: {final}")
    print(f"TensorBoard: tensorboard --logdir {config.run_dir / 'tensorboard'}")
    return 0
