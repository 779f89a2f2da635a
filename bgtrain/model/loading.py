"""The one way to turn a model file into something that evaluates: ``load_model``.

Every command, agent, worker and the evaluator load models here, so the checks are made once: the file
type (a bgtrain checkpoint ``.pt`` or an ONNX export ``.onnx``), the file's integrity
(``bgtrain.model.checkpoint.load_checkpoint``) and the variant the model was trained for against the
variant asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bgtrain.model.checkpoint import load_checkpoint, network_from_checkpoint, trained_variant
from bgtrain.model.onnx_model import OnnxValueModel
from bgtrain.model.pruning import pruning_networks
from engine.rules import Rules
from engine.variants import get_rules


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to evaluate, with what it was made for."""

    model: Any  # ValueNetwork, EnsembleNetwork, PhaseNetwork or OnnxValueModel: the evaluation interface
    rules: Rules  # the variant the model was trained (or exported) for
    payload: dict[str, Any] | None  # the checkpoint's entries; None for an ONNX export
    source: str  # the path as given, for messages
    pruning: Any = None  # the checkpoint's pruning networks (``bgtrain.model.pruning``), or None


def check_variant(trained: Rules, wanted: Rules | None, source: str) -> None:
    """A model plays the variant it was trained for; anything else is refused, naming both."""
    if wanted is not None and trained.name != wanted.name:
        raise ValueError(f"{source} was trained for {trained.name!r}, not for {wanted.name!r} "
                         f"(pass --variant {trained.name})")


def load_model(path: str | Path, rules: Rules | None = None, device: str | torch.device = "cpu") -> LoadedModel:
    """The model in ``path`` on ``device``: a checkpoint's network (single, ensemble or phases) or an
    ONNX export, with the checkpoint's pruning networks when it has them (``bgtrain.model.pruning``).
    With ``rules``, a model trained for another variant is refused. Problems are
    ValueErrors or FileNotFoundErrors in one line naming the file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        model = OnnxValueModel(path, device)
        check_variant(model.rules, rules, str(path))
        return LoadedModel(model, model.rules, None, str(path))
    if suffix != ".pt":
        raise ValueError(f"{path}: a model is a bgtrain checkpoint (.pt) or an ONNX export (.onnx), not "
                         f"{suffix or 'a file without an extension'!r}; TorchScript exports load with torch.jit.load")
    payload = load_checkpoint(path)
    trained = get_rules(trained_variant(payload))
    check_variant(trained, rules, str(path))
    network = network_from_checkpoint(payload, str(path)).to(device)
    pruning = pruning_networks(payload, str(path))
    return LoadedModel(network, trained, payload, str(path), pruning.to(device) if pruning is not None else None)
