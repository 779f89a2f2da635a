"""The luck of each roll, as GNU Backgammon defines it: the equity the roll gives the side that rolled
it (its best play's equity) minus what an average roll gives (the best play's equity averaged over
the 21 rolls, weighted 1/36 for a double, 2/36 otherwise). A roll above the average is lucky, below
it unlucky; over a game each side's luck adds up.

Valued at 0-ply, cubeless, per unit cube, from the roller's side: every roll of every position of a
game is one batch (positions x 21 rolls -> their legal plays -> one static evaluation), so a whole
game costs one forward pass of a few tens of thousands of plays, not a Python loop over rolls. (GNU
Backgammon values luck with its own evaluation settings and cubeful equity; the 0-ply average over
the rolls is the 1-ply value of the position before the roll, so the two are one search apart.)

GNU Backgammon's marks for a single roll: lucky from +0.3, very lucky from +0.6, unlucky from -0.3,
very unlucky from -0.6.
"""

from __future__ import annotations

import torch

from bgtrain.outcomes import cubeless_equity
from engine.dice import ALL_ROLLS, roll_index, roll_tensor, roll_weights
from engine.movegen import legal_afterstates

LUCKY, VERY_LUCKY = 0.3, 0.6
# Positions per batch: a double's plays run to a few hundred, so 64 positions x 21 rolls stay within
# some tens of MB of afterstates.
CHUNK = 64


def luck_mark(luck: float) -> str:
    """GNU Backgammon's mark for a roll's luck: "" between -0.3 and +0.3."""
    if luck >= VERY_LUCKY:
        return "very lucky"
    if luck >= LUCKY:
        return "lucky"
    if luck <= -VERY_LUCKY:
        return "very unlucky"
    if luck <= -LUCKY:
        return "unlucky"
    return ""


def roll_equities(evaluator, boards: torch.Tensor) -> torch.Tensor:
    """The best play's 0-ply cubeless equity for each of the 21 rolls of each position (before the
    roll, from the side to roll): ``int8[B, 28]`` -> ``float32[B, 21]`` in ``ALL_ROLLS`` order."""
    batch = boards.shape[0]
    rolls = roll_tensor(boards.device)
    afterstates = legal_afterstates(boards.repeat_interleave(len(ALL_ROLLS), 0), rolls.repeat(batch, 1),
                                    evaluator.rules)
    equity = cubeless_equity(evaluator.static.plays(afterstates), evaluator.rules)
    best = torch.full((batch * len(ALL_ROLLS),), float("-inf"), dtype=equity.dtype, device=equity.device)
    best = best.scatter_reduce(0, afterstates.position, equity, "amax")
    return best.view(batch, len(ALL_ROLLS))


def roll_luck(evaluator, boards, dice) -> list[float]:
    """Each roll's luck: ``boards`` the positions before the rolls (mover's side, 28 ints each),
    ``dice`` the rolls (two dice each, either order)."""
    if not len(boards):
        return []
    board = torch.tensor([list(b) for b in boards], dtype=torch.int8)
    rolled = torch.tensor([[max(d), min(d)] for d in dice], dtype=torch.int64)
    weights = roll_weights()
    luck = []
    for start in range(0, board.shape[0], CHUNK):
        values = roll_equities(evaluator, board[start:start + CHUNK])
        average = values @ weights
        index = roll_index(rolled[start:start + CHUNK])
        luck += (values.gather(1, index.view(-1, 1)).squeeze(1) - average).tolist()
    return luck
