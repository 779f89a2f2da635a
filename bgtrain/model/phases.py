"""Phase networks: one model holding a network for each phase of the game, as GNU Backgammon does.

``PhaseNetwork`` routes every position to the network of its phase (``engine.position_kinds.position_phases``): contact,
crashed (contact, but a side has about six checkers or fewer left in play: GNU Backgammon's
``CLASS_CRASHED``) or race (no contact; bear-offs too, though the evaluator answers those from its
bear-off database). It has the ``ValueNetwork`` evaluation interface (``evaluate``,
``evaluate_flipped``, ``forward``), so the ``Evaluator``, the agents, ``bgtrain eval``, ``bench`` and
``league`` take it like any network. A checkpoint of one has ``model = {"kind": "phases", "phases":
{name: ValueNetwork.model_args()}}`` and the sub-networks' weights under ``phases.<name>.`` prefixes
(``bgtrain.model.checkpoint``); ``bgtrain.model.combine.combine_checkpoints`` builds one from ordinary
checkpoints, and ``bgtrain.model.factory`` rebuilds one from its description.

``position_phases`` is written in exportable operations (reductions over points, comparisons), so an
exported phase model (``bgtrain.export``) computes every sub-network and picks each row's with
``torch.where`` on the same function, as ``PhaseNetwork.forward`` does; evaluation on the CPU routes by
the native kernel's copy of it (``bgtrain.model.fast_encoders.position_phases``), tested equal.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from bgtrain.model import fast_encoders
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.network import ValueNetwork
from engine.position_kinds import PHASE_NAMES, PHASES, position_phases
from engine.rules import STANDARD, Rules


class PhaseNetwork(nn.Module):
    """A network per phase (``PHASE_NAMES``: a ``ValueNetwork`` or an ``EnsembleNetwork`` of several), each
    position evaluated by its phase's network."""

    def __init__(self, networks: dict[str, ValueNetwork | EnsembleNetwork]):
        super().__init__()
        if set(networks) != set(PHASE_NAMES):
            raise ValueError(f"a phase model needs networks for {', '.join(PHASE_NAMES)}, not {', '.join(networks)}")
        self.phases = nn.ModuleDict({name: networks[name] for name in PHASE_NAMES})

    def model_args(self) -> dict[str, Any]:
        return {"kind": "phases", "phases": {name: network.model_args() for name, network in self.phases.items()}}

    @property
    def encoder(self):
        """The contact network's encoder (for tools that print one)."""
        return self.phases["contact"].encoder

    def _route(self, board: torch.Tensor, evaluate) -> torch.Tensor:
        phase = fast_encoders.position_phases(board)
        if phase is None:
            phase = position_phases(board)
        out = torch.empty(board.shape[0], 5, dtype=torch.float32, device=board.device)
        for name, kind in zip(PHASE_NAMES, PHASES):
            rows = (phase == kind).nonzero(as_tuple=True)[0]
            if rows.numel():
                out[rows] = evaluate(self.phases[name], board.index_select(0, rows)).to(out.dtype)
        return out

    def forward(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        return pick_by_phase(position_phases(board), [self.phases[name](board, rules) for name in PHASE_NAMES])

    @torch.no_grad()
    def evaluate(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        return self._route(board, lambda network, rows: network.evaluate(rows, rules))

    @torch.no_grad()
    def evaluate_flipped(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        # A position's phase is the same from both sides, so the afterstate's rows route as they are.
        return self._route(board, lambda network, rows: network.evaluate_flipped(rows, rules))


def pick_by_phase(phase: torch.Tensor, outputs: list[torch.Tensor]) -> torch.Tensor:
    """Each row's output from its phase's network: ``phase: int64[B]`` (``position_phases``) and one
    ``[B, ...]`` output per phase in the order of ``PHASES`` -> ``[B, ...]``, by ``torch.where`` (exportable)."""
    chosen = outputs[0]
    for kind, output in zip(PHASES[1:], outputs[1:]):
        rows = (phase == kind).view(-1, *([1] * (output.dim() - 1)))
        chosen = torch.where(rows, output, chosen)
    return chosen
