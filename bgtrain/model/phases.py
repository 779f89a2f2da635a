"""Phase networks: one model holding a network for each phase of the game, as GNU Backgammon does.

``PhaseNetwork`` routes every position to the network of its phase (``phase_index``): contact,
crashed (contact, but a side has about six checkers or fewer left in play: GNU Backgammon's
``CLASS_CRASHED``) or race (no contact; bear-offs too, though the evaluator answers those from its
bear-off database). It has the ``ValueNetwork`` evaluation interface (``evaluate``,
``evaluate_flipped``, ``forward``), so the ``Evaluator``, the agents, ``bgtrain eval``, ``bench`` and
``league`` take it like any network. A checkpoint of one has ``model = {"kind": "phases", "phases":
{name: ValueNetwork.model_args()}}`` and the sub-networks' weights under ``phases.<name>.`` prefixes
(``bgtrain.model.checkpoint``); ``bgtrain.model.combine.combine_checkpoints`` builds one from ordinary
checkpoints, and ``bgtrain.model.factory`` rebuilds one from its description.

``phase_index`` is written in exportable operations (reductions over points, comparisons), so an
exported phase model (``bgtrain.export``) computes every sub-network and picks each row's with
``torch.where`` on the same function.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.network import ValueNetwork
from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND
from engine.rules import STANDARD, Rules

PHASES = ("contact", "crashed", "race")
CONTACT, CRASHED, RACE = range(3)


def phase_index(board: torch.Tensor) -> torch.Tensor:
    """``int8[B, 28]`` -> ``int64[B]``: 0 contact, 1 crashed, 2 race (bear-offs included; a finished game
    counts as contact). The same classes as ``bgtrain.cube.efficiency.position_kinds``."""
    b = board.to(torch.float32)
    points = b[:, 1:25]
    numbers = torch.arange(1, 25, device=board.device, dtype=torch.float32)
    mover_waiting = (torch.relu(b[:, MOVER_BAR]) + torch.relu(b[:, MOVER_IN_HAND])) > 0
    opponent_waiting = (torch.relu(-b[:, OPPONENT_BAR]) + torch.relu(-b[:, OPPONENT_IN_HAND])) > 0
    mover_back = ((points > 0) * numbers).amax(1)
    opponent_front = 25.0 - ((points < 0) * (25.0 - numbers)).amax(1)
    race = (mover_back < opponent_front) & ~mover_waiting & ~opponent_waiting

    def crashed(total, ace, deuce):
        # GNU Backgammon's ClassifyPosition: at most 6 checkers in play, not counting a stacked ace point
        # (and a stacked deuce point behind it).
        stacked = (ace > 1) & ((total <= 6 + ace) | ((deuce > 1) & (1 + total - (ace + deuce) <= 6)))
        unstacked = (ace <= 1) & (total <= 6 + (deuce - 1))
        return (total <= 6) | stacked | unstacked

    mover_total = torch.relu(b[:, 1:26]).sum(1)
    opponent_total = torch.relu(-b[:, 0:25]).sum(1)
    crash = crashed(mover_total, torch.relu(b[:, 1]), torch.relu(b[:, 2]))
    crash = crash | crashed(opponent_total, torch.relu(-b[:, 24]), torch.relu(-b[:, 23]))
    over = (mover_total == 0) | (opponent_total == 0)
    phase = torch.where(race, RACE, torch.where(crash, CRASHED, CONTACT))
    return torch.where(over, CONTACT, phase).to(torch.int64)


class PhaseNetwork(nn.Module):
    """A network per phase (``PHASES``: a ``ValueNetwork`` or an ``EnsembleNetwork`` of several), each
    position evaluated by its phase's network."""

    def __init__(self, networks: dict[str, ValueNetwork | EnsembleNetwork]):
        super().__init__()
        if set(networks) != set(PHASES):
            raise ValueError(f"a phase model needs networks for {', '.join(PHASES)}, not {', '.join(networks)}")
        self.phases = nn.ModuleDict({name: networks[name] for name in PHASES})

    def model_args(self) -> dict[str, Any]:
        return {"kind": "phases", "phases": {name: network.model_args() for name, network in self.phases.items()}}

    @property
    def encoder(self):
        """The contact network's encoder (for tools that print one)."""
        return self.phases["contact"].encoder

    def _route(self, board: torch.Tensor, evaluate) -> torch.Tensor:
        phase = phase_index(board)
        out = torch.empty(board.shape[0], 5, dtype=torch.float32, device=board.device)
        for index, name in enumerate(PHASES):
            rows = (phase == index).nonzero(as_tuple=True)[0]
            if rows.numel():
                out[rows] = evaluate(self.phases[name], board.index_select(0, rows)).to(out.dtype)
        return out

    def forward(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        phase = phase_index(board)
        outputs = torch.stack([self.phases[name](board, rules) for name in PHASES], dim=1)  # [B, 3, 5]
        return outputs.gather(1, phase.view(-1, 1, 1).expand(-1, 1, outputs.shape[-1])).squeeze(1)

    @torch.no_grad()
    def evaluate(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        return self._route(board, lambda network, rows: network.evaluate(rows, rules))

    @torch.no_grad()
    def evaluate_flipped(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        # A position's phase is the same from both sides, so the afterstate's rows route as they are.
        return self._route(board, lambda network, rows: network.evaluate_flipped(rows, rules))
