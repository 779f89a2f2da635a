"""Self-describing checkpoints, written atomically.

A checkpoint is one ``torch.save`` file holding a dict (``checkpoint_payload`` builds it):

``format``       "bgtrain-checkpoint" and ``format_version``;
``model``        ``ValueNetwork.model_args()``: encoder name and version, hidden sizes, activation (or, for a
                 phase model, ``{"kind": "phases", "phases": {phase: those}}``, ``bgtrain.model.phases``; for
                 an ensemble, ``{"kind": "ensemble", "members": [those]}``, ``bgtrain.model.ensembles``);
``weights``      the network's state dict;
``config``       the resolved run config (``config_to_dict``);
``rules``        the name of the variant the network plays;
``counters``     games, turns, updates, training seconds;
``strength``     the latest evaluation results (may be empty);
``code_version`` ``git describe`` of the code that wrote it;
``training``     optional: optimizer state, generator states, the live self-play games, the return
                 buffer, the previous evaluation's weights and the TensorBoard points of the last step:
                 everything ``bgtrain train --resume`` needs to continue exactly.

Only a path is needed to evaluate or resume. Files are written by ``bgtrain.files.save_tagged``
(temporary file, fsync, rename), so a crash or SIGKILL never leaves a half-written checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from bgtrain.files import load_tagged, save_tagged
from bgtrain.model.encoding import get_encoder
from bgtrain.model.factory import model_from_args
from bgtrain.model.network import ValueNetwork

FORMAT = "bgtrain-checkpoint"
FORMAT_VERSION = 1
COUNTERS = ("games", "turns", "updates", "train_seconds")


def checkpoint_payload(
    network: ValueNetwork,
    config,
    rules: str | None = None,
    counters: dict[str, Any] | None = None,
    strength: dict[str, Any] | None = None,
    code_version: str = "unknown",
    training: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The one way to build a checkpoint's dict: training, scripts and tests all use it.
    ``config`` is the run's ``bgtrain.training.config.Config`` (anything with ``to_dict()``) or that
    plain dict; ``rules`` defaults to its variant."""
    config_data = config if isinstance(config, dict) else config.to_dict()
    payload: dict[str, Any] = {
        "model": network.model_args(),
        "weights": {name: value.detach().cpu() for name, value in network.state_dict().items()},
        "config": config_data,
        "rules": rules or config_data.get("run", {}).get("variant", "backgammon"),
        "counters": {"games": 0, "turns": 0, "updates": 0, "train_seconds": 0.0, **(counters or {})},
        "strength": strength or {},
        "code_version": code_version,
    }
    if training is not None:
        payload["training"] = training
    return payload


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (plus the format tag) to ``path`` atomically."""
    return save_tagged(path, FORMAT, FORMAT_VERSION, payload)


def _check_entries(path: Path, payload: dict[str, Any]) -> None:
    """Every entry has the shape a reader relies on; a ValueError names the first that does not."""
    for key, kind in (("model", dict), ("weights", dict), ("config", dict), ("counters", dict)):
        if key not in payload:
            raise ValueError(f"{path} is damaged: the '{key}' entry is missing")
        if not isinstance(payload[key], kind):  # a damaged file: a ValueError, as load_checkpoint promises
            raise ValueError(  # noqa: TRY004
                f"{path} is damaged: the '{key}' entry is a {type(payload[key]).__name__}, "
                             f"not a {kind.__name__}")
    for model in _network_descriptions(path, payload["model"]):
        for key in ("encoder", "hidden", "activation"):
            if key not in model:
                raise ValueError(f"{path} is damaged: the model description has no '{key}'")
        hidden = model["hidden"]
        if not isinstance(hidden, (list, tuple)) or not all(isinstance(size, int) and size > 0 for size in hidden):
            raise ValueError(f"{path} is damaged: the model's hidden sizes {hidden!r} are not a list of sizes")
    if not all(isinstance(name, str) and isinstance(value, torch.Tensor) for name, value in payload["weights"].items()):
        raise ValueError(f"{path} is damaged: the 'weights' entry holds something other than named tensors")
    for key, value in payload["counters"].items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{path} is damaged: counter '{key}' is {value!r}, not a count")
    # The config's meaning is the training room's (checked in full where a run resumes); a reader of the
    # model needs its shape: TOML tables, the variant a name.
    for section, values in payload["config"].items():
        if not isinstance(values, dict):  # a damaged file: a ValueError, as load_checkpoint promises
            raise ValueError(  # noqa: TRY004
                f"{path} is damaged: its config section [{section}] is a {type(values).__name__}, not a table")
    variant = payload["config"].get("run", {}).get("variant")
    if variant is not None and not isinstance(variant, str):
        raise ValueError(f"{path} is damaged: its config's run.variant is {variant!r}, not a name")
    for key in ("strength", "training"):
        if key in payload and payload[key] is not None and not isinstance(payload[key], dict):
            raise ValueError(f"{path} is damaged: the '{key}' entry is a {type(payload[key]).__name__}")


def _network_descriptions(path: Path, model: dict[str, Any]) -> list[dict[str, Any]]:
    """The single networks' descriptions in a model entry: itself, one per phase of a phase model
    (``bgtrain.model.phases``), one per member of an ensemble (``bgtrain.model.ensembles``)."""
    if model.get("kind") == "ensemble":
        members = model.get("members")
        if not isinstance(members, list) or not all(isinstance(member, dict) for member in members):
            raise ValueError(f"{path} is damaged: the ensemble's 'members' entry is not a list of networks")
        return members
    if model.get("kind") != "phases":
        return [model]
    phases = model.get("phases")
    if not isinstance(phases, dict) or not all(isinstance(value, dict) for value in phases.values()):
        raise ValueError(f"{path} is damaged: the phase model's 'phases' entry is not a table of networks")
    return [network for phase in phases.values() for network in _network_descriptions(path, phase)]


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read and check a checkpoint; every problem is a ValueError or FileNotFoundError naming the file."""
    path = Path(path)
    payload = load_tagged(path, FORMAT, FORMAT_VERSION, "bgtrain checkpoint", map_location=map_location)
    _check_entries(path, payload)
    for model in _network_descriptions(path, payload["model"]):
        try:
            encoder = get_encoder(model["encoder"])
        except (KeyError, ValueError, TypeError):
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


def network_from_checkpoint(payload: dict[str, Any], source: str = "checkpoint") -> ValueNetwork:
    """Rebuild the network a checkpoint describes (a ``ValueNetwork``, or a ``bgtrain.model.phases.PhaseNetwork``
    with the same evaluation interface) and load its weights."""
    try:
        network = model_from_args(payload["model"])
        network.load_state_dict(payload["weights"])
    except (RuntimeError, KeyError, TypeError, ValueError) as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        raise ValueError(f"{source}: weights do not fit the model it describes ({first_line})") from None
    network.eval()
    return network


def load_initial_weights(network: ValueNetwork, source: str, setting: str) -> None:
    """Start ``network`` from the weights of the checkpoint at ``source`` (``setting`` names the config
    field that asked, for the error): the shapes must match, since a different encoder or hidden layer
    cannot take them over."""
    loaded = network_from_checkpoint(load_checkpoint(source), source)
    if loaded.model_args() != network.model_args():
        raise ValueError(f"{setting} = {source!r} holds {loaded.model_args()}, the config asks "
                         f"for {network.model_args()}; set [model] to match")
    network.load_state_dict(loaded.state_dict())
