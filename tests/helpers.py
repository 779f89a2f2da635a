"""Shared test helpers: random valid positions built batched, the engine's compile mode for a block,
value functions from plain functions."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import torch

from engine import kernels
from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND, flip_board
from engine.rules import STANDARD, Rules


def _place(generator: torch.Generator, weights: torch.Tensor, checkers: int) -> torch.Tensor:
    """Counts per location after dropping ``checkers`` checkers independently with ``weights: float[B, L]``."""
    picks = torch.multinomial(weights, checkers, replacement=True, generator=generator)
    counts = torch.zeros_like(weights, dtype=torch.long)
    return counts.scatter_add_(1, picks, torch.ones_like(picks))


def random_boards(
    count: int, seed: int = 0, rules: Rules = STANDARD, in_hand: bool = False, race: bool = False
) -> torch.Tensor:
    """``int8[count, 28]`` valid positions: ``rules.checkers_per_side`` checkers a side, no point holding both
    colours, some checkers on the bar and some borne off (and in hand when ``in_hand``), the mover's
    checkers spread more or less towards home from row to row so that bear-offs occur too.
    With ``race`` every position is a race: each side only on its own points 1..12, none on the bar.
    """
    generator = torch.Generator().manual_seed(seed)
    checkers = rules.checkers_per_side

    def side_weights(occupied: torch.Tensor | None) -> torch.Tensor:
        # locations: 0 borne off, 1..24 the side's own points, 25 bar, 26 in hand
        weights = torch.zeros(count, 27)
        skew = torch.rand(count, 1, generator=generator) * 3.0  # > 0 leans towards the side's home
        points = torch.arange(1, 25, dtype=torch.float32)
        weights[:, 1:25] = torch.exp(-skew * points / 24.0) * (
            torch.rand(count, 24, generator=generator) < 0.6
        )
        weights[:, 0] = torch.rand(count, generator=generator) * (
            torch.rand(count, generator=generator) < 0.4
        )
        weights[:, 25] = 0.15 * (torch.rand(count, generator=generator) < 0.3)
        if in_hand:
            weights[:, 26] = 0.5 * (torch.rand(count, generator=generator) < 0.3)
        if race:
            weights[:, 13:] = 0.0
        if occupied is not None:
            weights[:, 1:25] *= ~occupied
        weights[:, 1] += 1e-3 * (weights.sum(-1) == 0)
        return weights

    mover = _place(generator, side_weights(None), checkers)
    # The opponent's point j is the mover's point 25 - j.
    occupied_by_mover = (mover[:, 1:25] > 0).flip(-1)
    opponent = _place(generator, side_weights(occupied_by_mover), checkers)

    board = torch.zeros(count, 28, dtype=torch.long)
    board[:, 1:25] = mover[:, 1:25] - opponent[:, 1:25].flip(-1)
    board[:, MOVER_BAR] = mover[:, 25]
    board[:, OPPONENT_BAR] = -opponent[:, 25]
    board[:, MOVER_IN_HAND] = mover[:, 26]
    board[:, OPPONENT_IN_HAND] = -opponent[:, 26]
    return board.to(torch.int8)


@contextmanager
def compile_mode(mode: str):
    """Run the block with ``engine.kernels`` in ``mode`` ("always" compiles every large call, "never"
    runs op by op), so a test can check both paths whatever the environment says."""
    previous = kernels.set_mode(mode)
    try:
        yield
    finally:
        kernels.set_mode(previous)
    if mode == "always" and kernels.compile_failed():
        # Without a working compiler the "compiled" results were op by op: nothing was checked.
        pytest.skip("torch.compile does not work here, so the compiled kernels cannot be tested")


class FunctionValue:
    """A ``bgtrain.static_value.ValueFunction`` from ``evaluate(board int8[N, 28]) -> float[N, 5]``
    (for the side to move) alone."""

    def __init__(self, evaluate) -> None:
        self.evaluate = evaluate

    def evaluate_flipped(self, afterstates: torch.Tensor) -> torch.Tensor:
        return self.evaluate(flip_board(afterstates))
