"""The command-line layer: one module per command with ``add_arguments(parser)`` and ``run(args)``.

The flags several commands share are declared here once (``add_device``, ``add_threads``,
``add_seed``, ``add_variant``, ``add_json_file``), with argument types that refuse bad values with one
line naming the flag (``argparse.ArgumentTypeError``).
"""

from __future__ import annotations

import argparse

from bgtrain.training.config import resolve_device
from bgtrain.training.config_sections import SEED_LIMIT
from engine.variants import VARIANTS


def device_type(text: str) -> str:
    try:
        resolve_device(text, "")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).strip()) from None
    return text


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def seed_type(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{value} is out of range: seeds are 0 .. 2**63 - 1")
    return value


def variant_type(text: str) -> str:
    if text not in VARIANTS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a variant; known variants: {', '.join(VARIANTS)}")
    return text


def add_device(parser: argparse.ArgumentParser, default: str | None = "cpu", help: str | None = None) -> None:
    parser.add_argument("--device", type=device_type, default=default,
                        help=help or f"torch device: cpu, cuda or cuda:N (default {default})")


def add_threads(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=positive_int,
                        help="torch CPU threads (default: torch's own choice; 1 is fastest on a shared machine)")


def add_seed(parser: argparse.ArgumentParser, default: int | None = 0, help: str | None = None) -> None:
    parser.add_argument("--seed", type=seed_type, default=default, help=help or f"seed (default {default})")


def add_variant(parser: argparse.ArgumentParser, default: str | None = "backgammon", help: str | None = None) -> None:
    parser.add_argument("--variant", type=variant_type, default=default, metavar="NAME",
                        help=help or f"rules variant (default {default}): {', '.join(VARIANTS)}")


def add_json_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="FILE", help="also write the result as one JSON object to FILE")


def apply_threads(args: argparse.Namespace) -> None:
    """Set torch's CPU threads when ``--threads`` was given."""
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
