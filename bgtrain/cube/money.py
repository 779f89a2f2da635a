"""Money play: the dead-cube and live-cube equities and Janowski's interpolation (``Cl2CfMoney``,
``MoneyLive``), with an optional cube limit."""

from __future__ import annotations

import math

import torch

from bgtrain.cube.state import CubeState, MoneyGame
from bgtrain.outcomes import LOSE_BACKGAMMON, LOSE_GAMMON, WIN, WIN_BACKGAMMON, WIN_GAMMON

# eval.c Cl2CfMoney: below this winning chance (or above 1 minus it) the cube is treated as dead.
DEGENERATE_WIN = 1e-7

# ---------------------------------------------------------------------------------------------------
# Money play


def _money_dead(probs: torch.Tensor, gammon_price: float) -> torch.Tensor:
    """Cubeless money equity with gammons and backgammons each worth ``gammon_price`` extra."""
    return (
        2.0 * probs[:, WIN]
        - 1.0
        + gammon_price * (probs[:, WIN_GAMMON] - probs[:, LOSE_GAMMON])
        + gammon_price * (probs[:, WIN_BACKGAMMON] - probs[:, LOSE_BACKGAMMON])
    )


def _money_cube_alive(cube: CubeState, game: MoneyGame) -> bool:
    # Whoever holds access to the cube may double unless the limit stops the cube at its value.
    return game.can_double(cube)


def _money_cubeful(probs: torch.Tensor, cube: CubeState, game: MoneyGame, x: torch.Tensor) -> torch.Tensor:
    """eval.c ``Cl2CfMoney``: ``(1 - x) E_dead + x E_live``, normalised to the cube value."""
    win = probs[:, WIN]
    jacoby_centred = game.jacoby and cube.owner == "centred"
    dead = _money_dead(probs, gammon_price=0.0 if jacoby_centred else 1.0)
    if not _money_cube_alive(cube, game):
        return dead
    safe_win = torch.where(win > DEGENERATE_WIN, win, torch.ones_like(win))
    safe_loss = torch.where(win < 1.0 - DEGENERATE_WIN, 1.0 - win, torch.ones_like(win))
    # Average value of a win and of a loss (cumulative probabilities: a backgammon is in both terms).
    average_win = 1.0 + (probs[:, WIN_GAMMON] + probs[:, WIN_BACKGAMMON]) / safe_win
    average_loss = 1.0 + (probs[:, LOSE_GAMMON] + probs[:, LOSE_BACKGAMMON]) / safe_loss
    mover_cash, opponent_cash = _money_cash_points(average_win, average_loss, cube.value, game.cube_limit)
    live = _money_live(win, average_win, average_loss, mover_cash, opponent_cash, cube.owner, game.jacoby)
    cubeful = dead * (1.0 - x) + live * x
    degenerate = (win <= DEGENERATE_WIN) | (win >= 1.0 - DEGENERATE_WIN)
    return torch.where(degenerate, dead, cubeful)


def _money_cash_points(
    average_win: torch.Tensor, average_loss: torch.Tensor, value: int, limit: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Live-cube cash points of the mover (in its winning chance) and of the opponent (in its own).

    Without a limit, Janowski's closed form: ``(L + 1) / (W + L + 1/2)`` and ``(W + 1) / (W + L + 1/2)``.
    With one, GNU's match recursion (``GetPoints``) in money units: the top cube level whose redouble
    the limit forbids has the dead-cube cash point ``(L + 1/2) / (W + L)``, and each level below it
    ``CP(v) = 1 - CP_other(2v) (W - 1/2) / (W + 1)``; the closed form is its fixed point.
    """
    if limit is None:
        denominator = average_win + average_loss + 0.5
        return (average_loss + 1.0) / denominator, (average_win + 1.0) / denominator
    levels = int(math.log2(limit // value))  # doubles still allowed from this cube: v -> ... -> limit
    mover = (average_loss + 0.5) / (average_win + average_loss)
    opponent = (average_win + 0.5) / (average_win + average_loss)
    for _ in range(levels - 1):
        mover, opponent = (
            1.0 - opponent * (average_win - 0.5) / (average_win + 1.0),
            1.0 - mover * (average_loss - 0.5) / (average_loss + 1.0),
        )
    return mover, opponent


def _money_live(
    win: torch.Tensor,
    average_win: torch.Tensor,
    average_loss: torch.Tensor,
    mover_cash: torch.Tensor,
    opponent_cash: torch.Tensor,
    owner: str,
    jacoby: bool,
) -> torch.Tensor:
    """eval.c ``MoneyLive``: the fully live cube's equity, piecewise linear in the winning chance."""
    take_point = 1.0 - opponent_cash  # below it the opponent cashes (the mover passes)
    cash_point = mover_cash
    W, L = average_win, average_loss
    if owner == "centred":
        lose_side = torch.full_like(win, -1.0) if jacoby else -L + (L - 1.0) * win / take_point
        window = -1.0 + 2.0 * (win - take_point) / (cash_point - take_point)
        win_side = (
            torch.ones_like(win) if jacoby else 1.0 + (W - 1.0) * (win - cash_point) / (1.0 - cash_point)
        )
        return torch.where(win < take_point, lose_side, torch.where(win < cash_point, window, win_side))
    if owner == "mover":
        below = -L + (1.0 + L) * win / cash_point
        above = 1.0 + (W - 1.0) * (win - cash_point) / (1.0 - cash_point)
        return torch.where(win < cash_point, below, above)
    below = -L + (L - 1.0) * win / take_point
    above = -1.0 + (W + 1.0) * (win - take_point) / (1.0 - take_point)
    return torch.where(win < take_point, below, above)
