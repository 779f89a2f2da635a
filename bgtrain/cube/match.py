"""Match play: cubeful match winning chances from the match equity table (``Cl2CfMatch*``,
``matchequity.c`` ``GetPoints``), Joern Thyssen's generalisation of Janowski."""

from __future__ import annotations

import torch

from bgtrain.cube.state import CubeState, MatchGame
from bgtrain.outcomes import LOSE_BACKGAMMON, LOSE_GAMMON, WIN, WIN_BACKGAMMON, WIN_GAMMON

# ---------------------------------------------------------------------------------------------------
# Match play


def _gammon_ratios(probs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Shares of gammons-only and backgammons among the mover's wins and among its losses."""
    win = probs[:, WIN]
    safe_win = torch.where(win > 0.0, win, torch.ones_like(win))
    safe_loss = torch.where(win < 1.0, 1.0 - win, torch.ones_like(win))
    zero = torch.zeros_like(win)
    win_gammon = torch.where(win > 0.0, (probs[:, WIN_GAMMON] - probs[:, WIN_BACKGAMMON]) / safe_win, zero)
    win_backgammon = torch.where(win > 0.0, probs[:, WIN_BACKGAMMON] / safe_win, zero)
    lose_gammon = torch.where(
        win < 1.0, (probs[:, LOSE_GAMMON] - probs[:, LOSE_BACKGAMMON]) / safe_loss, zero
    )
    lose_backgammon = torch.where(win < 1.0, probs[:, LOSE_BACKGAMMON] / safe_loss, zero)
    return win_gammon, win_backgammon, lose_gammon, lose_backgammon


def _match_dead(probs: torch.Tensor, value: int, game: MatchGame) -> torch.Tensor:
    """Cubeless MWC: every outcome at the current stake, weighted by its probability."""
    m = game.mwc_after
    win, win_gammon, win_backgammon = probs[:, WIN], probs[:, WIN_GAMMON], probs[:, WIN_BACKGAMMON]
    lose_gammon, lose_backgammon = probs[:, LOSE_GAMMON], probs[:, LOSE_BACKGAMMON]
    return (
        (win - win_gammon) * m(value)
        + (win_gammon - win_backgammon) * m(2 * value)
        + win_backgammon * m(3 * value)
        + (1.0 - win - lose_gammon) * m(-value)
        + (lose_gammon - lose_backgammon) * m(-2 * value)
        + lose_backgammon * m(-3 * value)
    )


def _match_cube_alive(cube: CubeState, game: MatchGame) -> bool:
    """eval.c ``fDoCubeful``: whether the cube has any life left at this score."""
    if game.mover_away <= cube.value and game.opponent_away <= cube.value:
        return False  # either side cashing the current stake wins the match
    if game.mover_away == 2 and game.opponent_away == 2:
        return False  # GNU treats 2-away/2-away as dead at 0 ply (the double is automatic)
    return not game.crawford


def _match_cash_points(
    ratios: tuple[torch.Tensor, ...], value: int, game: MatchGame
) -> tuple[torch.Tensor, torch.Tensor]:
    """matchequity.c ``GetPoints``: live-cube cash points of the mover and of the opponent (each in its
    own winning chance) for a cube of ``value``, by recursion from the highest cube level that can
    still matter down to ``value``."""
    # Player 0 is the mover, player 1 the opponent; gammon shares of each player's wins.
    gammon = (ratios[0], ratios[2])
    backgammon = (ratios[1], ratios[3])
    single = (1.0 - gammon[0] - backgammon[0], 1.0 - gammon[1] - backgammon[1])
    mover_left = game.mover_away - 1  # GNU's normalised scores i, j
    opponent_left = game.opponent_away - 1

    def mwc(player: int, points: int) -> float:
        """Player's MWC when it wins ``points`` (negative: loses)."""
        return game.mwc_after(points) if player == 0 else 1.0 - game.mwc_after(-points)

    top = value
    while mover_left >= 2 * top and opponent_left >= 2 * top:
        top *= 2
    live: dict[tuple[int, int], torch.Tensor] = {}
    level = top
    while level >= value:
        for player in (0, 1):
            other = 1 - player
            if mover_left < 2 * level or opponent_left < 2 * level:
                # The doubled cube will be dead, but a free automatic redouble by the side that cannot
                # lose more is still counted (GNU's "cube prime" value).
                mine, theirs = (mover_left, opponent_left) if player == 0 else (opponent_left, mover_left)
                prime = 2 * level if (mine < 2 * level and theirs >= 2 * level) else level
                double_take_lose = (
                    single[other] * mwc(player, -2 * prime)
                    + gammon[other] * mwc(player, -4 * prime)
                    + backgammon[other] * mwc(player, -6 * prime)
                )
                double_pass = mwc(player, level)
                double_take_win = (
                    single[player] * mwc(player, 2 * prime)
                    + gammon[player] * mwc(player, 4 * prime)
                    + backgammon[player] * mwc(player, 6 * prime)
                )
                live[player, level] = (double_take_lose - double_pass) / _nonzero(
                    double_take_lose - double_take_win
                )
            else:
                redouble_pass = mwc(player, -2 * level)
                double_pass = mwc(player, level)
                double_take_win = (
                    single[player] * mwc(player, 2 * level)
                    + gammon[player] * mwc(player, 4 * level)
                    + backgammon[player] * mwc(player, 6 * level)
                )
                live[player, level] = 1.0 - live[other, 2 * level] * (
                    double_pass - double_take_win
                ) / _nonzero(redouble_pass - double_take_win)
        level //= 2
    return live[0, value], live[1, value]


def _nonzero(denominator: torch.Tensor) -> torch.Tensor:
    return torch.where(denominator == 0.0, torch.full_like(denominator, 1e-300), denominator)


def _match_cubeful(probs: torch.Tensor, cube: CubeState, game: MatchGame, x: torch.Tensor) -> torch.Tensor:
    """eval.c ``Cl2CfMatch``: the mover's cubeful MWC, ``(1 - x) MWC_dead + x MWC_live``."""
    dead = _match_dead(probs, cube.value, game)
    if not _match_cube_alive(cube, game):
        return dead
    ratios = _gammon_ratios(probs)
    win_gammon, win_backgammon, lose_gammon, lose_backgammon = ratios
    m, value = game.mwc_after, cube.value
    win = probs[:, WIN]
    mover_cash_point, opponent_cash_point = _match_cash_points(ratios, value, game)
    cash, opponent_cash = m(value), m(-value)
    # MWC at p = 1 and p = 0 once the cube is no longer turned: a win (or loss) of each kind.
    all_wins = (
        (1.0 - win_gammon - win_backgammon) * cash + win_gammon * m(2 * value) + win_backgammon * m(3 * value)
    )
    all_losses = (
        (1.0 - lose_gammon - lose_backgammon) * opponent_cash
        + lose_gammon * m(-2 * value)
        + lose_backgammon * m(-3 * value)
    )
    too_good = mover_cash_point  # the mover's winning chance from which it cashes
    opponent_too_good = 1.0 - opponent_cash_point  # below this the opponent cashes

    def towards(start, end, fraction):
        return start + (end - start) * fraction

    def safe(denominator):
        return torch.where(denominator != 0.0, denominator, torch.ones_like(denominator))

    # Between p = 0 and the opponent's cash point; between the mover's cash point and p = 1.
    below_opponent = torch.where(
        opponent_too_good > 0.0, towards(all_losses, opponent_cash, win / safe(opponent_too_good)), all_losses
    )
    above_mover = torch.where(
        too_good < 1.0, towards(cash, all_wins, (win - too_good) / safe(1.0 - too_good)), all_wins
    )
    if cube.owner == "centred":
        window = towards(opponent_cash, cash, (win - opponent_too_good) / safe(too_good - opponent_too_good))
        live = torch.where(
            win <= opponent_too_good, below_opponent, torch.where(win < too_good, window, above_mover)
        )
    elif cube.owner == "mover":
        below_mover = torch.where(too_good > 0.0, towards(all_losses, cash, win / safe(too_good)), all_losses)
        live = torch.where(win <= too_good, below_mover, above_mover)
    else:
        above_opponent = torch.where(
            win != opponent_too_good,
            towards(opponent_cash, all_wins, (win - opponent_too_good) / safe(1.0 - opponent_too_good)),
            all_wins,
        )
        live = torch.where(win <= opponent_too_good, below_opponent, above_opponent)
    return dead * (1.0 - x) + live * x
