"""Exact leaves: positions whose value is known without playing on, where a rollout trial stops.

A leaf source has ``covers(board) -> bool[B]`` (``int8[B, 28]`` positions before the roll) and
``outcomes(board) -> float32[N, 5]`` for covered rows, for their side to move (``bgtrain.outcomes``).
GNU Backgammon's rollouts stop a trial the same way once its bear-off databases hold the position.

Where the leaves come from (``exact_leaf``): an evaluator that defines ``exact_leaf`` (a future exact
two-sided bear-off database plugs in there, with the same two methods) gives that; otherwise its
one-sided bear-off database (``bgtrain.bearoff``), exact in the sense that module states: both sides
bearing off, each playing to minimise its expected number of rolls.
"""

from __future__ import annotations

from typing import Protocol

import torch

from bgtrain.bearoff import BearoffDatabase
from engine.rules import Rules


class ExactLeaf(Protocol):
    def covers(self, board: torch.Tensor) -> torch.Tensor:
        """``int8[B, 28]`` -> ``bool[B]``: the position's value is known exactly."""
        ...

    def outcomes(self, board: torch.Tensor) -> torch.Tensor:
        """``int8[N, 28]`` covered positions -> ``float32[N, 5]`` for their side to move."""
        ...


class BearoffLeaf:
    """The one-sided bear-off database as a leaf source."""

    def __init__(self, database: BearoffDatabase, rules: Rules) -> None:
        self.database = database
        self.rules = rules

    def covers(self, board: torch.Tensor) -> torch.Tensor:
        return self.database.covers(board)

    def outcomes(self, board: torch.Tensor) -> torch.Tensor:
        return self.database.outcomes(board, self.rules).to(torch.float32)


def exact_leaf(evaluator) -> ExactLeaf | None:
    """The evaluator's own leaf source (``evaluator.exact_leaf``) if it has one, else its bear-off
    database, else None."""
    own = getattr(evaluator, "exact_leaf", None)
    if own is not None:
        return own
    if evaluator.bearoff is not None:
        return BearoffLeaf(evaluator.bearoff, evaluator.rules)
    return None
