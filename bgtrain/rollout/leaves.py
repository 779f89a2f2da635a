"""Exact leaves: positions whose value is known without playing on, where a rollout trial stops.

A leaf source has ``covers(board) -> bool[B]`` (``int8[B, 28]`` positions before the roll) and
``outcomes(board) -> float32[N, 5]`` for covered rows, for their side to move (``bgtrain.outcomes``).
GNU Backgammon's rollouts stop a trial the same way once its bear-off databases hold the position.

Where the leaves come from (``exact_leaf``): an evaluator that defines ``exact_leaf`` (any object with
the same two methods) gives that; otherwise its bear-off databases: the two-sided one
(``bgtrain.values.bearoff_two_sided``, exact: both sides playing to win) where it covers the position, else the
one-sided one (``bgtrain.values.bearoff``, exact in the sense that module states: both sides bearing off, each
playing to minimise its expected number of rolls).
"""

from __future__ import annotations

from typing import Protocol

import torch

from bgtrain.values.bearoff import BearoffDatabase
from bgtrain.values.bearoff_two_sided import TwoSidedBearoffDatabase, bearoff_outcomes
from engine.rules import Rules


class ExactLeaf(Protocol):
    def covers(self, board: torch.Tensor) -> torch.Tensor:
        """``int8[B, 28]`` -> ``bool[B]``: the position's value is known exactly."""
        ...

    def outcomes(self, board: torch.Tensor) -> torch.Tensor:
        """``int8[N, 28]`` covered positions -> ``float32[N, 5]`` for their side to move."""
        ...


class BearoffLeaf:
    """The bear-off databases as a leaf source: the two-sided one's values where it covers a position,
    the one-sided one's elsewhere in its range (``bearoff_outcomes``)."""

    def __init__(self, database: BearoffDatabase, rules: Rules,
                 two_sided: TwoSidedBearoffDatabase | None = None) -> None:
        self.database = database
        self.two_sided = two_sided
        self.rules = rules

    def covers(self, board: torch.Tensor) -> torch.Tensor:
        # The two-sided database's positions are a subset of the one-sided one's (both sides bearing off).
        return self.database.covers(board)

    def outcomes(self, board: torch.Tensor) -> torch.Tensor:
        index, values = bearoff_outcomes(board, self.rules, self.database, self.two_sided)
        if index.numel() != board.shape[0]:
            raise ValueError("bear-off leaf asked for positions its databases do not cover")
        return values


def exact_leaf(evaluator) -> ExactLeaf | None:
    """The evaluator's own leaf source (``evaluator.exact_leaf``) if it has one, else its bear-off
    database, else None."""
    own = getattr(evaluator, "exact_leaf", None)
    if own is not None:
        return own
    if evaluator.bearoff is not None:
        return BearoffLeaf(evaluator.bearoff, evaluator.rules, getattr(evaluator, "two_sided", None))
    return None
