"""What gives a position its training target: the ``Labeller`` protocol and the n-ply labeller.

A labeller maps positions ``int8[N, 28]`` (side to move, before its roll) to targets ``float32[N, 5]``
(``bgtrain.outcomes``: cumulative outcome probabilities for the side to move) and their standard errors
``float32[N, 5]`` (0 for a deterministic evaluation; the rollout labeller of ``bgtrain.rollout`` gives
the standard error of its mean), and describes itself as plain data for the dataset's manifest.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from bgtrain.evaluator import Evaluator


class Labeller(Protocol):
    def label(self, boards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``int8[N, 28]`` -> ``(targets float32[N, 5], standard_errors float32[N, 5])``."""
        ...

    def describe(self) -> dict[str, Any]:
        """Plain data for the manifest: ``{"kind": ..., ...}``."""
        ...


class PlyLabeller:
    """``Evaluator.probabilities`` at a fixed ply (bear-offs exact from the database at every ply)."""

    def __init__(self, evaluator: Evaluator, ply: int, model: str = "") -> None:
        self.evaluator = evaluator
        self.ply = evaluator._check_ply(ply)
        self.model = model

    def label(self, boards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        targets = self.evaluator.probabilities(boards, self.ply)
        return targets, torch.zeros_like(targets)

    def describe(self) -> dict[str, Any]:
        return {"kind": "ply", "ply": self.ply, "model": self.model}


def labeller_from_spec(spec: str, model: str, device: str = "cpu") -> Labeller:
    """``"ply:N"`` -> a ``PlyLabeller`` on ``model`` at N plies; ``"rollout:TRIALS"`` once
    ``bgtrain.rollout`` provides one. A ValueError names an unknown spec."""
    kind, _, argument = spec.partition(":")
    if kind == "ply":
        if not argument.isdigit():
            raise ValueError(f"labeller {spec!r}: write ply:N with N a non-negative integer, e.g. ply:1")
        return PlyLabeller(Evaluator.from_path(model, device), int(argument), model)
    if kind == "rollout":
        try:
            from bgtrain.rollout import RolloutLabeller  # type: ignore[attr-defined]
        except ImportError:
            raise ValueError("labeller 'rollout:...' needs bgtrain.rollout, which this bgtrain does not have yet") from None
        return RolloutLabeller.from_spec(argument, model, device)
    raise ValueError(f"unknown labeller {spec!r}; known: ply:N, rollout:TRIALS")
