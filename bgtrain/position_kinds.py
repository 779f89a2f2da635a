"""Kinds of position for the cube: GNU Backgammon's classes (``eval.c`` ``ClassifyPosition``) and the
cube efficiency each gets. This is where the board meets the cube module, which itself knows only
probabilities."""

from __future__ import annotations

import torch

from bgtrain.cube import DEFAULT_EFFICIENCY, CubeEfficiency, PositionKind
from bgtrain.encoding import is_race
from engine.board import pip_counts


def position_kinds(board: torch.Tensor) -> torch.Tensor:
    """``board: int8[B, 28]`` -> ``int64[B]`` of ``PositionKind``.

    Crashed: a side has at most 6 checkers left in play, or at most 6 besides a stack (more than one
    checker) on its ace point and, if the deuce point also holds more than one, besides those too.
    """
    b = board.to(torch.int64)
    mover_total = b[:, 1:26].clamp(min=0).sum(-1)
    opponent_total = (-b[:, 0:25]).clamp(min=0).sum(-1)
    race = is_race(board)
    mover_home = b[:, 7:26].clamp(min=0).sum(-1) == 0
    opponent_home = (-b[:, 0:19]).clamp(min=0).sum(-1) == 0

    def crashed(total, ace, deuce):
        stacked = (ace > 1) & ((total <= 6 + ace) | ((deuce > 1) & (1 + total - (ace + deuce) <= 6)))
        unstacked = (ace <= 1) & (total <= 6 + (deuce - 1))
        return (total <= 6) | stacked | unstacked

    crash = crashed(mover_total, b[:, 1].clamp(min=0), b[:, 2].clamp(min=0))
    crash |= crashed(opponent_total, (-b[:, 24]).clamp(min=0), (-b[:, 23]).clamp(min=0))
    kinds = torch.full_like(mover_total, int(PositionKind.CONTACT))
    kinds = torch.where(crash, int(PositionKind.CRASHED), kinds)
    kinds = torch.where(race, int(PositionKind.RACE), kinds)
    kinds = torch.where(race & mover_home & opponent_home, int(PositionKind.BEAROFF), kinds)
    kinds = torch.where((mover_total == 0) | (opponent_total == 0), int(PositionKind.OVER), kinds)
    return kinds


def cube_efficiency(board: torch.Tensor, efficiency: CubeEfficiency = DEFAULT_EFFICIENCY) -> torch.Tensor:
    """Janowski's ``x`` for each position of ``board: int8[B, 28]``: ``float64[B]``."""
    return efficiency.of(position_kinds(board), pip_counts(board)[0])
