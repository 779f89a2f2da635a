"""Self-describing checkpoints, written atomically.

A checkpoint is one ``torch.save`` file holding a dict:

``format``       "bgtrain-checkpoint" and ``format_version``;
``model``        ``ValueNetwork.model_args()``: encoder name and version, hidden sizes, activation (or, for a
                 phase model, ``{"kind": "phases", "phases": {phase: those}}``, ``bgtrain.phases``);
``weights``      the network's state dict;
``config``       the resolved run config (``config_to_dict``);
``counters``     games, turns, updates, training seconds;
``strength``     the latest evaluation results (may be empty);
``training``     optional: optimizer state, generator states, the live self-play games and the
                 return buffer, everything ``bgtrain train --resume`` needs to continue exactly.

Only a path is needed to evaluate or resume. A file is first written beside its destination and
then renamed over it, so a crash or SIGKILL never leaves a half-written checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from bgtrain.encoding import get_encoder
from bgtrain.network import ValueNetwork

FORMAT = "bgtrain-checkpoint"
FORMAT_VERSION = 1


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (plus the format tag) to ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save({"format": FORMAT, "format_version": FORMAT_VERSION, **payload}, temporary)
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return path


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read and check a checkpoint; every problem is a ValueError or FileNotFoundError naming the file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.is_dir():
        raise ValueError(f"{path} is a directory, not a checkpoint file")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as error:  # noqa: BLE001 -- torch raises many types for a corrupt or foreign file
        raise ValueError(f"{path} is not a readable bgtrain checkpoint ({type(error).__name__}: {error})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a bgtrain checkpoint (no '{FORMAT}' format tag)")
    if payload.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path} has checkpoint format version {payload.get('format_version')}, this bgtrain reads {FORMAT_VERSION}"
        )
    for key in ("model", "weights", "config", "counters"):
        if key not in payload:
            raise ValueError(f"{path} is damaged: the '{key}' entry is missing")
    model = payload["model"]
    # A phase model (``bgtrain.phases``) holds one network description per phase.
    models = model.get("phases", {}).values() if model.get("kind") == "phases" else [model]
    for model in models:
        try:
            encoder = get_encoder(model["encoder"])
        except (KeyError, ValueError):
            raise ValueError(f"{path} was trained with encoder {model.get('encoder')!r}, which this bgtrain does not know")
        if model.get("encoder_version") != encoder.version:
            raise ValueError(
                f"{path} was trained with encoder {encoder.name!r} version {model.get('encoder_version')}, "
                f"this bgtrain has version {encoder.version}"
            )
    return payload


def trained_variant(payload: dict[str, Any]) -> str:
    """The name of the variant a checkpoint's model was trained for."""
    return payload.get("rules") or payload.get("config", {}).get("run", {}).get("variant") or "backgammon"


def check_variant(payload: dict[str, Any], rules, source: str = "checkpoint") -> None:
    """A model plays the variant it was trained on; anything else is refused, naming both."""
    trained = trained_variant(payload)
    if trained != rules.name:
        raise ValueError(f"{source} was trained for {trained!r}, not for {rules.name!r} (pass --variant {trained})")


def network_from_checkpoint(payload: dict[str, Any], source: str = "checkpoint") -> ValueNetwork:
    """Rebuild the network a checkpoint describes (a ``ValueNetwork``, or a ``bgtrain.phases.PhaseNetwork``
    with the same evaluation interface) and load its weights."""
    from bgtrain.phases import model_from_args

    network = model_from_args(payload["model"])
    try:
        network.load_state_dict(payload["weights"])
    except RuntimeError as error:
        first_line = str(error).strip().splitlines()[0]
        raise ValueError(f"{source}: weights do not fit the model it describes ({first_line})") from None
    network.eval()
    return network


def load_network(path: str | Path, device: str | torch.device = "cpu") -> tuple[ValueNetwork, dict[str, Any]]:
    """(network on ``device``, checkpoint payload) from a checkpoint path."""
    payload = load_checkpoint(path)
    return network_from_checkpoint(payload, str(path)).to(device), payload
