"""The one contract for network outputs: five cumulative outcome probabilities.

``probs: float[..., 5]``, in GNU Backgammon's order (``eval.h``: OUTPUT_WIN, OUTPUT_WINGAMMON,
OUTPUT_WINBACKGAMMON, OUTPUT_LOSEGAMMON, OUTPUT_LOSEBACKGAMMON):

=====  ===============  ==================================================
index  name             meaning
=====  ===============  ==================================================
0      WIN              P(win)                      (any kind of win)
1      WIN_GAMMON       P(win a gammon or a backgammon)
2      WIN_BACKGAMMON   P(win a backgammon)
3      LOSE_GAMMON      P(lose a gammon or a backgammon)
4      LOSE_BACKGAMMON  P(lose a backgammon)
=====  ===============  ==================================================

Always for the SIDE TO MOVE in the evaluated position, before it rolls. An afterstate (the position
just after the mover played) has the other side to move: evaluate ``flip_board(afterstate)`` and
``flip_outcomes`` the result to get the mover's view.

Cumulative, so a consistent vector has ``WIN_BACKGAMMON <= WIN_GAMMON <= WIN`` and
``LOSE_BACKGAMMON <= LOSE_GAMMON <= 1 - WIN``; ``clamp_outcomes`` enforces that. Cube logic
consumes these probabilities only; nothing here knows about the cube.

Games paid by checkers left (``Rules.scoring == "checkers_left"``, acey-deucey: a game is worth n = 1
to N points, N the checkers a side) use the same five slots: WIN_GAMMON holds
E[(n - 1) 1{win}] / (N - 1), which is the mean over m = 2..N of P(win at least m points), so still a
cumulative probability no larger than P(win); LOSE_GAMMON likewise for losses; the backgammon slots
are 0. Equity is then ``2 P(win) - 1 + (N - 1) (WIN_GAMMON - LOSE_GAMMON)``, exact in expected
points, and ``flip_outcomes`` is unchanged, so TD targets and traces need nothing else.
``point_weights`` gives the two weights, and every function that values outcomes takes ``rules``.
"""

from __future__ import annotations

import torch

from engine.board import borne_off
from engine.position_facts import checkers_back, has_borne_off, is_race
from engine.rules import Rules

WIN, WIN_GAMMON, WIN_BACKGAMMON, LOSE_GAMMON, LOSE_BACKGAMMON = range(5)
NUM_OUTCOMES = 5

# Outcome vectors of finished games, by points won (-3..3 -> row points + 3); row 3 (a draw) does not exist.
_TERMINAL_TABLE = (
    (0.0, 0.0, 0.0, 1.0, 1.0),  # lost a backgammon
    (0.0, 0.0, 0.0, 1.0, 0.0),  # lost a gammon
    (0.0, 0.0, 0.0, 0.0, 0.0),  # lost a single game
    (float("nan"),) * 5,  # no game ends with 0 points; guarded below
    (1.0, 0.0, 0.0, 0.0, 0.0),  # won a single game
    (1.0, 1.0, 0.0, 0.0, 0.0),  # won a gammon
    (1.0, 1.0, 1.0, 0.0, 0.0),  # won a backgammon
)


def point_weights(rules: Rules | None = None) -> tuple[float, float]:
    """Points the gammon slots and the backgammon slots add to a game's value, per unit of
    probability: ``(1, 1)`` for standard scoring (a gammon counts once more, a backgammon once more
    again); ``(N - 1, 0)`` for games paid by checkers left (see the module docstring)."""
    if rules is not None and rules.scoring == "checkers_left":
        return float(max(rules.checkers_per_side - 1, 1)), 0.0
    return 1.0, 1.0


def cubeless_equity(probs: torch.Tensor, rules: Rules | None = None) -> torch.Tensor:
    """Expected points per game, without a cube: ``float[..., 5]`` -> ``float[...]``.

    ``2 P(win) - 1 + P(wg) - P(lg) + P(wbg) - P(lbg)`` for standard scoring (in [-3, 3]): a single
    game is worth 1, a gammon counts once more and a backgammon once more again, as the
    probabilities are cumulative. ``rules`` paid by checkers left weigh the slots by ``point_weights``.
    """
    gammon, backgammon = point_weights(rules)
    equity = 2.0 * probs[..., WIN] - 1.0 + gammon * (probs[..., WIN_GAMMON] - probs[..., LOSE_GAMMON])
    if backgammon:
        equity = equity + backgammon * (probs[..., WIN_BACKGAMMON] - probs[..., LOSE_BACKGAMMON])
    return equity


def flip_outcomes(probs: torch.Tensor) -> torch.Tensor:
    """The same game seen by the other side: ``float[..., 5]`` -> ``float[..., 5]``.

    Its win is our loss (``1 - P(win)``), its gammons are our gammon losses and the other way round.
    Applying it twice gives back ``probs``.
    """
    return torch.stack(
        (
            1.0 - probs[..., WIN],
            probs[..., LOSE_GAMMON],
            probs[..., LOSE_BACKGAMMON],
            probs[..., WIN_GAMMON],
            probs[..., WIN_BACKGAMMON],
        ),
        dim=-1,
    )


def terminal_outcomes(
    points_won: torch.Tensor, dtype: torch.dtype = torch.float32, rules: Rules | None = None
) -> torch.Tensor:
    """Exact outcome vectors of finished games: ``int[...]`` -> ``float[..., 5]``.

    ``points_won`` is signed (1, 2, 3 for a single win, gammon, backgammon; negative for losses) from
    whichever side the caller wants the vector for. 0 is rejected: an unfinished or truncated game has
    no exact outcome and must not be scored as a loss. ``rules`` paid by checkers left take 1 to N
    points, held as (n - 1) / (N - 1) in the gammon slot of the winning side (module docstring).
    """
    points = points_won.to(torch.long)
    if rules is not None and rules.scoring == "checkers_left":
        most = rules.checkers_per_side
        if bool(((points == 0) | (points.abs() > most)).any()):
            raise ValueError(f"terminal_outcomes: points_won must be between 1 and {most} either way")
        extra = (points.abs() - 1).to(dtype) / point_weights(rules)[0]
        won = points > 0
        zero = torch.zeros_like(extra)
        return torch.stack(
            (won.to(dtype), torch.where(won, extra, zero), zero, torch.where(won, zero, extra), zero), dim=-1
        )
    if bool(((points == 0) | (points.abs() > 3)).any()):
        raise ValueError("terminal_outcomes: points_won must be one of +-1, +-2, +-3")
    table = torch.tensor(_TERMINAL_TABLE, dtype=dtype, device=points_won.device)
    return table[points + 3]


def clamp_outcomes(probs: torch.Tensor, board: torch.Tensor, rules: Rules) -> torch.Tensor:
    """Outcome vectors made consistent with what the position makes certain: ``float[B, 5]``.

    ``probs: float[B, 5]`` for the side to move in ``board: int8[B, 28]``. Applied in order:

    1. every probability into [0, 1];
    2. rules without gammons (backgammons) have none;
    3. a side that has borne off a checker cannot lose a gammon (nor a backgammon);
    4. in a race (no checker can meet an opposing one again, so none can be hit back), a side with no
       checker in the other side's home board cannot be backgammoned: checkers only move homewards;
    5. cumulative order: ``wbg <= wg <= win`` and ``lbg <= lg <= 1 - win``.

    Games paid by checkers left: a side wins more than one point only while the other has at least
    two checkers to bear off, and the backgammon slots are 0.
    """
    probs = probs.clamp(0.0, 1.0)
    win = probs[..., WIN]
    if rules.scoring == "checkers_left":
        mover_off, opponent_off = borne_off(board, rules.checkers_per_side)
        # More than one point needs at least two of the loser's checkers still to bear off.
        can_win_gammon = opponent_off <= rules.checkers_per_side - 2
        can_lose_gammon = mover_off <= rules.checkers_per_side - 2
        return torch.stack(
            (
                win,
                torch.minimum(probs[..., WIN_GAMMON] * can_win_gammon, win),
                torch.zeros_like(win),
                torch.minimum(probs[..., LOSE_GAMMON] * can_lose_gammon, 1.0 - win),
                torch.zeros_like(win),
            ),
            dim=-1,
        )
    mover_has_off, opponent_has_off = has_borne_off(board, rules.checkers_per_side)
    can_win_gammon = ~opponent_has_off & rules.gammons
    can_lose_gammon = ~mover_has_off & rules.gammons

    race = is_race(board)
    # A backgammon needs a checker of the loser on the bar, in hand or in the winner's home board.
    mover_back, opponent_back = checkers_back(board)
    can_win_backgammon = can_win_gammon & (opponent_back | ~race) & rules.backgammons
    can_lose_backgammon = can_lose_gammon & (mover_back | ~race) & rules.backgammons

    win_gammon = torch.minimum(probs[..., WIN_GAMMON] * can_win_gammon, win)
    win_backgammon = torch.minimum(probs[..., WIN_BACKGAMMON] * can_win_backgammon, win_gammon)
    lose_gammon = torch.minimum(probs[..., LOSE_GAMMON] * can_lose_gammon, 1.0 - win)
    lose_backgammon = torch.minimum(probs[..., LOSE_BACKGAMMON] * can_lose_backgammon, lose_gammon)
    return torch.stack((win, win_gammon, win_backgammon, lose_gammon, lose_backgammon), dim=-1)
