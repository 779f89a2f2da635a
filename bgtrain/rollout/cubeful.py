"""The doubling cube inside a rollout: per-trial cube states, decisions and money points.

Each trial carries its cube value and its owner, kept from the ROOT side's view (the side to move in
the rolled-out position): 0 centred, 1 the root side's, 2 the other side's. Before every roll the side
to move makes its cube decision from its 0-ply probabilities with ``bgtrain.cube.cube_decision``
(Janowski's interpolation, cube efficiency from ``bgtrain.cube.efficiency.cube_efficiency``): a double
the other side passes ends the trial (the doubler wins the cube's value); a double it takes doubles the
cube and gives it to the taker; "too good" plays on. A finished game pays its points times the cube,
gammons and backgammons counting only once the cube has been turned under the Jacoby rule.

Decisions are batched per distinct cube state (a handful), never per trial.
"""

from __future__ import annotations

import torch

from bgtrain.cube import (
    OWNERS,
    CubeAction,
    CubeState,
    MoneyGame,
    TakeAction,
    cube_decision,
    cubeful_equity,
    is_double,
)
from bgtrain.cube.efficiency import cube_efficiency
from bgtrain.outcomes import flip_outcomes
from engine.board import flip_board
from engine.game import winning_points

CENTRED, ROOT_OWNS, OTHER_OWNS = 0, 1, 2
_DOUBLE_CODES = [int(action) for action in CubeAction if is_double(action)]


def owner_code(cube: CubeState) -> int:
    """A root position's cube owner as a code from the root side's view."""
    return OWNERS.index(cube.owner)  # centred 0, mover (the root side) 1, opponent 2


def owner_seen_by_mover(owner: torch.Tensor, root_to_move: bool) -> torch.Tensor:
    """Root-view owner codes -> codes from the side to move (0 centred, 1 the mover, 2 its opponent)."""
    if root_to_move:
        return owner
    return torch.where(owner == CENTRED, owner, 3 - owner)


def _groups(value: torch.Tensor, owner: torch.Tensor):
    """(CubeState, row index) per distinct (value, owner from the mover's view)."""
    keys = value.to(torch.int64) * 3 + owner.to(torch.int64)
    for key in torch.unique(keys).tolist():
        yield CubeState(int(key // 3), OWNERS[int(key % 3)]), (keys == key).nonzero(as_tuple=True)[0]


def decide(probs: torch.Tensor, board: torch.Tensor, value: torch.Tensor, owner: torch.Tensor,
           game: MoneyGame) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The side to move's cube action: ``(doubles, passes, optimal)``, ``bool[B]``, ``bool[B]`` and its
    cubeful equity ``float64[B]`` in points (normalised equity times the cube). ``owner`` from the mover."""
    doubles = torch.zeros(board.shape[0], dtype=torch.bool, device=board.device)
    passes = torch.zeros_like(doubles)
    optimal = torch.zeros(board.shape[0], dtype=torch.float64, device=board.device)
    codes = torch.tensor(_DOUBLE_CODES, device=board.device)
    for cube, rows in _groups(value, owner):
        decision = cube_decision(probs[rows].to(torch.float64), cube, game, cube_efficiency(board[rows]))
        doubling = torch.isin(decision.action, codes)
        doubles[rows] = doubling
        passes[rows] = doubling & (decision.take == int(TakeAction.PASS))
        optimal[rows] = decision.optimal * cube.value
    return doubles, passes, optimal


def cubeful_points(probs: torch.Tensor, board: torch.Tensor, value: torch.Tensor, owner: torch.Tensor,
                   game: MoneyGame) -> torch.Tensor:
    """The side to move's 0-ply cubeful equity before its cube action, in points: ``float64[B]``."""
    points = torch.zeros(board.shape[0], dtype=torch.float64, device=board.device)
    for cube, rows in _groups(value, owner):
        equity = cubeful_equity(probs[rows].to(torch.float64), cube, game, cube_efficiency(board[rows]))
        points[rows] = equity * cube.value
    return points


def money_points(points: torch.Tensor, value: torch.Tensor, owner: torch.Tensor, game: MoneyGame) -> torch.Tensor:
    """What a finished game pays the side that scored ``points`` (1, 2, 3, signed), times the cube:
    ``float64[B]``. Jacoby: with the cube never turned (centred), gammons count single."""
    points = points.to(torch.float64)
    if game.jacoby:
        points = torch.where(owner == CENTRED, points.sign(), points)
    return points * value.to(torch.float64)


def after_roll_points(best: torch.Tensor, mover_probs: torch.Tensor, value: torch.Tensor, owner: torch.Tensor,
                      game: MoneyGame, rules) -> torch.Tensor:
    """The mover's cubeful value, in points, of each afterstate it played (its luck measure with the
    cube): a finished game's money points, else minus the next side's 0-ply cubeful equity.

    ``best: int8[N, 28]`` afterstates (mover's view), ``mover_probs: float[N, 5]`` their 0-ply outcomes
    for the mover, ``value`` and ``owner`` (from the mover's view) the cube of each: ``float64[N]``.
    """
    points = winning_points(best, rules)
    finished = points != 0
    result = torch.zeros(best.shape[0], dtype=torch.float64, device=best.device)
    if bool(finished.any()):
        result[finished] = money_points(points[finished], value[finished], owner[finished], game)
    going_on = (~finished).nonzero(as_tuple=True)[0]
    if going_on.numel():
        next_owner = torch.where(owner == CENTRED, owner, 3 - owner)[going_on]
        next_side = flip_outcomes(mover_probs[going_on])
        result[going_on] = -cubeful_points(next_side, flip_board(best[going_on]), value[going_on], next_owner, game)
    return result
