"""Distillation: one network a phase that evaluates like a phase model's ensembles.

An ensemble (``bgtrain.model.ensembles``) of three networks a phase costs three forward passes a position.
Its own outputs are a teacher that costs one 0-ply evaluation a label, so a single network can be
trained on as many of them as self-play finds positions for: the labels are the ensemble's 0-ply
outcome probabilities (``bgtrain dataset relabel SOURCE --model ENSEMBLE --labeller ply:0``; the
evaluator's 0-ply is the ensemble's mean with the sanity clamps of ``bgtrain.outcomes``, and the
datasets hold no bear-off that the database answers), and the student is trained on them by
``bgtrain.training.supervised`` like any network, one phase at a time, starting from one of the ensemble's
members (``write_member``) so that a short training reaches the ensemble, rather than a long one
from scratch. ``bgtrain.model.combine_checkpoints`` then makes the phase model of the students.

``agreement`` measures how closely a student follows its teacher on given positions, per phase: the
root mean square and the largest difference of their cubeless equities at 0-ply.
"""

from __future__ import annotations

from pathlib import Path

import torch

from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from bgtrain.outcomes import cubeless_equity
from engine.position_kinds import PHASE_NAMES, PHASES, position_phases


def phase_member(model: PhaseNetwork, phase: str, index: int) -> ValueNetwork:
    """Member ``index`` of ``phase``'s ensemble in ``model`` (index 0 of a phase with a single network is
    that network); a ValueError names a phase or member that is not there."""
    if phase not in PHASE_NAMES:
        raise ValueError(f"unknown phase {phase!r}; known: {', '.join(PHASE_NAMES)}")
    network = model.phases[phase]
    members = list(network.members) if isinstance(network, EnsembleNetwork) else [network]
    if not 0 <= index < len(members):
        raise ValueError(f"phase {phase!r} holds {len(members)} network(s); there is no member {index}")
    return members[index]


def write_member(model_path: str | Path, phase: str, index: int, path: str | Path) -> Path:
    """Write member ``index`` of ``phase`` of the phase model at ``model_path`` as a checkpoint of its
    own at ``path`` (the start of a student: ``[supervised] init_from``)."""
    loaded = load_model(model_path)
    model, payload = loaded.model, loaded.payload
    if not isinstance(model, PhaseNetwork):
        raise ValueError(f"{model_path} is not a phase model")  # noqa: TRY004 (a bad file, as load_model says)
    member = phase_member(model, phase, index)
    counters = payload.get("phase_counters", {}).get(phase)
    counters = counters[index] if isinstance(counters, list) else counters
    result = checkpoint_payload(member, payload["config"], payload.get("rules"), counters,
                                code_version=payload.get("code_version", "unknown"))
    result["source"] = {"model": str(model_path), "phase": phase, "member": index}
    return save_checkpoint(path, result)


@torch.no_grad()
def agreement(student, teacher, boards: torch.Tensor) -> dict[str, dict[str, float]]:
    """Per phase of ``boards`` (``int8[N, 28]``, side to move): ``{"positions", "equity_rms",
    "equity_max"}``, the differences of the two models' bare cubeless equities."""
    difference = cubeless_equity(student.evaluate(boards)) - cubeless_equity(teacher.evaluate(boards))
    phase = position_phases(boards)
    report = {}
    for kind, name in zip(PHASES, PHASE_NAMES):
        rows = difference[phase == kind].double()
        if rows.numel():
            report[name] = {"positions": int(rows.numel()), "equity_rms": float(rows.pow(2).mean().sqrt()),
                            "equity_max": float(rows.abs().max())}
    return report
