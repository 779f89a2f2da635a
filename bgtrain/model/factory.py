"""The one factory of models: a checkpoint's ``model`` description -> the module it describes.

Every kind of model a checkpoint can hold is known here and nowhere else: a single ``ValueNetwork``
(``{"encoder": ..., "hidden": [...], "activation": ...}``), an ``EnsembleNetwork`` (``{"kind":
"ensemble", "members": [...]}``) and a ``PhaseNetwork`` (``{"kind": "phases", "phases": {phase: ...}}``,
each phase a single network or an ensemble).
"""

from __future__ import annotations

from typing import Any

from bgtrain.model.ensembles import KIND as ENSEMBLE
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from engine.position_kinds import PHASE_NAMES

PHASE_MODEL = "phases"


def network_from_args(args: dict[str, Any]) -> ValueNetwork | EnsembleNetwork:
    """The network of one phase (or of a whole model without phases): a ``ValueNetwork``, or an
    ``EnsembleNetwork`` of several."""
    if args.get("kind") == ENSEMBLE:
        return EnsembleNetwork.from_args(args)
    return ValueNetwork.from_args(args)


def model_from_args(args: dict[str, Any]) -> ValueNetwork | EnsembleNetwork | PhaseNetwork:
    """The model a checkpoint's ``model`` entry describes, with fresh weights."""
    if args.get("kind") == PHASE_MODEL:
        return PhaseNetwork({name: network_from_args(args["phases"][name]) for name in PHASE_NAMES})
    return network_from_args(args)
