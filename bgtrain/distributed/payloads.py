"""Model files and databases as bytes for the workers: nothing a work unit needs is opened by a
worker at a path, so a cluster needs no shared disk and a relative path means the driver's directory.

A checkpoint (``.pt``: a single network, a phase model, an ensemble; all self-contained files) is read
by the driver, and its architecture and weights travel as numpy arrays; an ONNX export travels as its
file's bytes and the worker opens an onnxruntime session on them. The bear-off databases (one- and
two-sided, about 23 MB together) are read (built first, if need be) by the driver and travel as their
files' bytes once per job; a worker writes them into its node's cache (``$XDG_CACHE_HOME/bgtrain``,
atomically, only when that node's copy is missing or differs), where the evaluator and the agents
load them, so a node never builds them itself (minutes for a cold node, and a second copy of the
same table).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch

from bgtrain.files import atomic_write


def network_arrays(network) -> dict[str, np.ndarray]:
    """A network's weights as host numpy arrays: what goes through the object store (never CUDA tensors)."""
    return {name: value.detach().cpu().numpy().copy() for name, value in network.state_dict().items()}


def network_from_arrays(model: dict, weights: dict[str, np.ndarray], device: str = "cpu"):
    """The model (a ``ValueNetwork`` or a ``PhaseNetwork``) that ``model`` describes, with ``weights``."""
    from bgtrain.model.factory import model_from_args

    network = model_from_args(model)
    # torch.tensor copies: arrays from the object store are read-only views of shared memory.
    network.load_state_dict({name: torch.tensor(value) for name, value in weights.items()})
    return network.to(device).eval()


def model_file_recipe(path: str | Path, rules=None, in_process: bool = False) -> dict:
    """What a worker needs to rebuild the model of the file ``path``, read here (``load_model``: the file
    checked, and its variant against ``rules`` when given): ``{"model", "weights", "variant"}`` for a
    checkpoint, ``{"onnx": bytes, "name", "variant"}`` for an ONNX export. ``in_process``: the work runs
    in this process, so a checkpoint's network itself is handed on (``{"network", "variant"}``), not
    rebuilt from copies of its weights. A checkpoint's pruning networks travel beside its network
    (``"pruning"``), so a worker's search prunes as this process's would."""
    from bgtrain.model.loading import load_model

    loaded = load_model(path, rules)
    pruning = loaded.pruning
    if in_process and loaded.payload is not None:
        return {"network": loaded.model, "variant": loaded.rules.name,
                **({"pruning": {"network": pruning}} if pruning is not None else {})}
    if loaded.payload is None:  # an ONNX export: its bytes travel, the worker opens a session on them
        return {"onnx": Path(path).read_bytes(), "name": str(path), "variant": loaded.rules.name}
    network = loaded.model
    recipe = {"model": network.model_args(), "weights": network_arrays(network), "variant": loaded.rules.name}
    if pruning is not None:
        recipe["pruning"] = {"model": pruning.model_args(), "weights": network_arrays(pruning)}
    return recipe


def model_from_recipe(recipe: dict, device: str):
    """The model ``model_file_recipe`` described: a network on ``device``, or an ``OnnxValueModel``."""
    if "network" in recipe:
        return recipe["network"].to(device)
    if "onnx" in recipe:
        from bgtrain.model.onnx_model import OnnxValueModel

        return OnnxValueModel(recipe["name"], device, data=recipe["onnx"])
    return network_from_arrays(recipe["model"], recipe["weights"], device)


def pruning_from_recipe(recipe: dict, device: str):
    """The pruning networks ``model_file_recipe`` described, on ``device``, or None."""
    pruning = recipe.get("pruning")
    if pruning is None:
        return None
    if "network" in pruning:
        return pruning["network"].to(device)
    return network_from_arrays(pruning["model"], pruning["weights"], device)


def database_files() -> dict[str, bytes]:
    """The bear-off databases' files by name, as this process's evaluators use them (built first here
    when missing)."""
    from bgtrain.values import bearoff, bearoff_two_sided

    for path, load in ((bearoff.default_path(), bearoff.load_bearoff_database),
                       (bearoff_two_sided.default_path(), bearoff_two_sided.load_two_sided_database)):
        if not path.is_file():
            load(device="cpu")  # builds and caches it, as any evaluator here would
    paths = (bearoff.default_path(), bearoff_two_sided.default_path())
    return {path.name: path.read_bytes() for path in paths}


_INSTALLED: set[tuple[str, str]] = set()  # (file name, digest of the bytes) already in place on this node


def install_databases(files: dict[str, bytes] | None) -> None:
    """Make this node's cached databases the driver's ``files`` (see the module docstring)."""
    from bgtrain.values import bearoff

    directory = bearoff.default_path().parent
    for name, data in (files or {}).items():
        key = (name, hashlib.sha1(data).hexdigest())
        if key in _INSTALLED:
            continue
        path = directory / name
        if not (path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data):
            directory.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data)
        _INSTALLED.add(key)
