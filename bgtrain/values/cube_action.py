"""The cube action of positions, the one place ``bgtrain eval``, ``bgtrain play``'s advice and analysis
decide it: exact from the two-sided bear-off database where it covers every position (money play
without a cube limit, ``bgtrain.values.bearoff_two_sided``), else Janowski's cubeful equity on the
given outcome probabilities with each position's cube efficiency (``bgtrain.cube``)."""

from __future__ import annotations

import torch

from bgtrain.cube import CubeDecision, CubeState, cube_decision
from bgtrain.cube.efficiency import cube_efficiency
from bgtrain.values.bearoff_two_sided import TwoSidedBearoffDatabase, exact_money_decision
from engine.rules import STANDARD, Rules

JANOWSKI = "janowski"
EXACT = "two-sided bear-off database"


def cube_action(probabilities: torch.Tensor, board: torch.Tensor, cube: CubeState, game,
                two_sided: TwoSidedBearoffDatabase | None = None,
                rules: Rules = STANDARD) -> tuple[CubeDecision, str]:
    """The cube decision of the side to move in each position (``board: int8[B, 28]``, its outcome
    probabilities ``float[B, 5]``) and the method that decided it (``EXACT`` or ``JANOWSKI``)."""
    exact = exact_money_decision(two_sided, board, cube, game, rules)
    if exact is not None:
        return exact, EXACT
    board = board.cpu()
    return cube_decision(probabilities.double().cpu(), cube, game, cube_efficiency(board)), JANOWSKI
