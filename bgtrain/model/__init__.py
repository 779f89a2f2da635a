"""The model: what the network sees, what it is, and the files that hold it.

Modules, from the board up: ``encoding`` (encoders: a board row to input units; ``tesauro198``,
``tesauro_plus``, ``gnubg_contact``, ``gnubg_race``), ``gnubg_inputs`` (GNU Backgammon's hand-crafted
contact inputs), ``network`` (``ValueNetwork``: encoder, hidden layers, five sigmoid outputs),
``ensembles`` (several networks averaged), ``phases`` (a network per phase of the game, routed by
``engine.position_kinds``), ``factory`` (the one builder of every model kind from its description),
``checkpoint`` (self-describing checkpoint files), ``combine`` (phase models and ensembles from
checkpoints), ``onnx_model`` and ``export_format`` (exported ONNX files read back) and ``loading``
(``load_model``: the one way from a model file to a model, with its variant checked).

The room imports ``engine``, ``bgtrain.outcomes`` and ``bgtrain.files`` only.
"""

from __future__ import annotations

from bgtrain.model.checkpoint import checkpoint_payload, load_checkpoint, save_checkpoint, trained_variant
from bgtrain.model.combine import combine_checkpoints
from bgtrain.model.encoding import get_encoder
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.factory import model_from_args
from bgtrain.model.loading import LoadedModel, load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork

__all__ = [
    "EnsembleNetwork",
    "LoadedModel",
    "PhaseNetwork",
    "ValueNetwork",
    "checkpoint_payload",
    "combine_checkpoints",
    "get_encoder",
    "load_checkpoint",
    "load_model",
    "model_from_args",
    "save_checkpoint",
    "trained_variant",
]
