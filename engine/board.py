"""The board row: one small integer vector per position, always seen from the side to move.

Layout of ``board: int8[..., 28]`` (``BOARD_WIDTH``):

====================  =====================================================================
index                 meaning
====================  =====================================================================
0 (OPPONENT_BAR)      the opponent's checkers on the bar, as a count <= 0
1 .. 24               the points, numbered from the mover's side: the mover travels from 24
                      towards 1 and bears off below 1; the opponent travels from 1 towards 24.
                      A value > 0 counts the mover's checkers, < 0 the opponent's.
25 (MOVER_BAR)        the mover's checkers on the bar, as a count >= 0. Entering from the bar
                      is an ordinary move from "point 25": with die d it lands on point 25 - d.
26 (MOVER_IN_HAND)    the mover's checkers not yet entered (variants whose checkers start off
                      the board), as a count >= 0; they enter like checkers on the bar.
27 (OPPONENT_IN_HAND) the opponent's checkers not yet entered, as a count <= 0.
====================  =====================================================================

Borne-off counts are derived: ``checkers_per_side`` minus every checker of that side on the row.

Invariant: the opponent's bar sits at "point 0" because the opponent enters into the mover's home
board (points 1..6) and moves upwards, so flipping to the other side's view is a pure permutation
and negation of the row (``flip_board``): index i <-> 25 - i for 0..25, and 26 <-> 27.
"""

from __future__ import annotations

import torch

BOARD_WIDTH = 28
OPPONENT_BAR = 0
MOVER_BAR = 25
MOVER_IN_HAND = 26
OPPONENT_IN_HAND = 27
POINTS = slice(1, 25)
HOME_POINTS = slice(1, 7)  # the mover's home board, points 1..6

# flipped[i] = -board[FLIP_PERMUTATION[i]]
FLIP_PERMUTATION = tuple([25 - i for i in range(26)] + [OPPONENT_IN_HAND, MOVER_IN_HAND])

def flip_board(board: torch.Tensor) -> torch.Tensor:
    """The same positions seen by the other side. ``board: int8[..., 28]`` -> ``int8[..., 28]``.

    ``FLIP_PERMUTATION`` reverses columns 0..25 and swaps 26 and 27: that is the reversed row turned
    two places, which ``flip`` and ``roll`` do several times faster than a gather of int8 columns."""
    return -torch.roll(board.flip(-1), -2, -1)


def mover_checkers_on_board(board: torch.Tensor) -> torch.Tensor:
    """Checkers of the mover on points, bar and in hand: ``int[...]``."""
    return board[..., 1:27].clamp(min=0).sum(-1)


def opponent_checkers_on_board(board: torch.Tensor) -> torch.Tensor:
    """Checkers of the opponent on points, bar and in hand: ``int[...]`` (positive)."""
    return (-board[..., 0:25].clamp(max=0)).sum(-1) - board[..., OPPONENT_IN_HAND]


def borne_off(board: torch.Tensor, checkers_per_side: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(mover's, opponent's) borne-off counts, each ``int[...]``."""
    return (
        checkers_per_side - mover_checkers_on_board(board),
        checkers_per_side - opponent_checkers_on_board(board),
    )


def pip_counts(board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mover's, opponent's) pip counts: the pips each side must still travel to bear everything off.

    A checker on the mover's point p needs p pips; the opponent's checker on the mover's point p
    needs 25 - p. Checkers on the bar or in hand need 25.
    """
    weights = torch.arange(28, device=board.device, dtype=torch.int32)
    b = board.to(torch.int32)
    mover = (b[..., 1:26].clamp(min=0) * weights[1:26]).sum(-1) + 25 * b[..., MOVER_IN_HAND]
    opponent = ((-b[..., 0:25]).clamp(min=0) * (25 - weights[0:25])).sum(-1) - 25 * b[..., OPPONENT_IN_HAND]
    return mover, opponent
