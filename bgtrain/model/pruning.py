"""Pruning networks: a small, cheap network a phase that ranks a roll's plays for the search.

Inside an n-ply search every position below the root needs each roll's best play, and valuing all of
a roll's 20-40 plays with the full model is most of a 1- and 2-ply search's network work. GNU
Backgammon first scores all plays with a tiny "pruning" network and values only the few best of them
with the full one. Here the pruning networks are a ``PhaseNetwork`` of small ``ValueNetwork``s (by
default Tesauro's 198 inputs, whose first layer is one table lookup a column, and a few dozen hidden
units), trained to mimic the full model's 0-ply (``bgtrain.training.pruning``); the search that uses
them is ``bgtrain.values.pruning``.

They travel inside the full model's checkpoint as its optional ``pruning`` entry::

    "pruning": {"model": PhaseNetwork.model_args(), "weights": its state dict, "trained": {...}}

so ``bgtrain.model.loading.load_model`` hands them to every evaluator with no extra flag, while the
checkpoint's ``model`` and ``weights`` (what exports and combinations read) are untouched.
"""

from __future__ import annotations

from typing import Any

from bgtrain.model.checkpoint import network_from_checkpoint
from bgtrain.model.factory import PHASE_MODEL
from bgtrain.model.phases import PhaseNetwork

PRUNING = "pruning"  # the checkpoint entry


def pruning_entry(networks: PhaseNetwork, trained: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint entry of ``networks``; ``trained`` records how they were made (plain data)."""
    return {
        "model": networks.model_args(),
        "weights": {name: value.detach().cpu() for name, value in networks.state_dict().items()},
        "trained": trained,
    }


def pruning_networks(payload: dict[str, Any], source: str = "checkpoint") -> PhaseNetwork | None:
    """The pruning networks of a checkpoint's ``payload`` (evaluation mode), or None when it has none;
    a damaged entry is a ValueError in one line naming ``source``."""
    entry = payload.get(PRUNING)
    if entry is None:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("model"), dict) or not isinstance(
            entry.get("weights"), dict):
        # A damaged file: a ValueError, as load_checkpoint promises.
        raise ValueError(f"{source} is damaged: its '{PRUNING}' entry is not a model with weights")  # noqa: TRY004
    if entry["model"].get("kind") != PHASE_MODEL:
        raise ValueError(f"{source} is damaged: its pruning networks are not a phase model")
    return network_from_checkpoint(entry, f"{source}'s pruning networks")
