"""Ensembles: several networks for the same positions, their outcome probabilities averaged.

Networks trained alike from different seeds or data make partly independent errors, so their mean
is a better estimate than any one of them: on the move-error benchmark three contact networks
averaged lose 0.39 ± 0.34 (× 1000) less per contact decision than the best of them alone, and three
race networks 0.13 ± 0.11 less per race decision, for three times the evaluation.

``EnsembleNetwork`` has the ``ValueNetwork`` evaluation interface (``evaluate``, ``evaluate_flipped``,
``forward``), so it can stand wherever a network does, on its own or as one phase's network of a
``bgtrain.model.phases.PhaseNetwork``. The mean of cumulative outcome probabilities (``bgtrain.outcomes``)
is itself one (every member satisfies the order ``win >= win gammon >= win backgammon``, and so does
their mean), and since cubeless equity is linear in them, the ensemble's equity is its members' mean
equity. A checkpoint of one has ``model = {"kind": "ensemble", "members": [ValueNetwork.model_args()
...]}`` and the members' weights under ``members.<i>.`` prefixes.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from bgtrain.model.network import ValueNetwork
from engine.rules import STANDARD, Rules

KIND = "ensemble"


class EnsembleNetwork(nn.Module):
    """The mean of ``members``' outcome probabilities (at least two ``ValueNetwork``s)."""

    def __init__(self, members: list[ValueNetwork]):
        super().__init__()
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least two networks, not {len(members)}")
        if any(not isinstance(member, ValueNetwork) for member in members):
            raise ValueError("an ensemble's members are single networks (no phase models or ensembles)")
        self.members = nn.ModuleList(members)

    def model_args(self) -> dict[str, Any]:
        return {"kind": KIND, "members": [member.model_args() for member in self.members]}

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> EnsembleNetwork:
        return cls([ValueNetwork.from_args(member) for member in args["members"]])

    @property
    def encoder(self):
        """The first member's encoder (for tools that print one)."""
        return self.members[0].encoder

    def _mean(self, outputs) -> torch.Tensor:
        total = None
        for output in outputs:
            output = output.to(torch.float32)
            total = output if total is None else total + output
        return total / len(self.members)

    def forward(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        return self._mean(member(board, rules) for member in self.members)

    @torch.no_grad()
    def evaluate(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        return self._mean(member.evaluate(board, rules) for member in self.members)

    @torch.no_grad()
    def evaluate_flipped(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        return self._mean(member.evaluate_flipped(board, rules) for member in self.members)
