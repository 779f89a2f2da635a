"""Variance reduction: the luck of each roll, measured by the 0-ply evaluator and subtracted.

For a position P with side S to roll, and each of the 21 rolls r (weights 1/36 for doubles, 2/36 for
the others), let ``A(r)`` be the 0-ply value, for S, of the afterstate S plays with r at 0-ply (exact
where the play ends the game or reaches the bear-off database). Their weighted mean is S's 1-ply value
of P, ``V_1(P)``. The luck of the roll S actually got is

    luck(r) = A(r) - sum_r' w(r') A(r')

and its expectation over r is exactly zero whatever happened before, so subtracting the sum of every
roll's luck (both sides' rolls, each converted to the root side's view) from a trial's result leaves
the rollout's mean unbiased while removing most of the dice's noise. This is GNU Backgammon's variance
reduction (its rollout "luck adjustment"), here always measured at 0-ply, with five-vector outcomes so
that each probability and the equity are corrected alike. The trial's moves are unaffected: the luck
is bookkeeping, so a rollout with and without it plays the same games.

Batched: every live game's 21 rolls go through one ``legal_afterstates`` call and one evaluation pass.
The values are the value function's (module ``expand_rolls``), so the actual move is chosen apart, by
``Evaluator.choose``: variance reduction costs the 21-roll expansion, about 21 times a plain step.

Pruned luck (``expand_rolls(..., pruning=)``, a rollout's ``pruned_luck``): ``A(r)`` is instead the full
model's value of its best play among those the model's pruning networks rank highest, GNU Backgammon's
pruning of a search's replies (``bgtrain.values.pruning``). That too is a fixed function of (position,
roll), so the luck still has expectation exactly zero and the rollout stays unbiased; where the pruning
networks keep the model's best play, which is nearly everywhere, it is the same number. The full model then
values about 5 plays a roll in place of every one: measured with the shipped default on 64 contact positions
of its self-play, 36 whole-game trials each, 0.78 s a position in place of 1.40 for 1.05 times the variance,
1.71 times the precision a second (docs/rollouts.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bgtrain.outcomes import NUM_OUTCOMES, cubeless_equity, flip_outcomes, terminal_outcomes
from bgtrain.values.evaluator import ROLL_COUNT, Evaluator
from bgtrain.values.pruning import PlayPruning, pruned_best_plays
from engine.board import flip_board
from engine.dice import roll_tensor, roll_weights
from engine.game import winning_points
from engine.movegen import Afterstates, argmax_per_position, legal_afterstates


@dataclass(frozen=True)
class RollExpansion:
    """Every roll of B positions played at 0-ply.

    ``afterstates``: the legal afterstates of the B * 21 (position, roll) pairs, pair ``b * 21 + r``;
    ``choice: int64[B * 21]``: the 0-ply best of each pair; ``values: float32[B, 21, 5]``: its outcomes
    for the side that rolled (``A(r)`` in the module docstring).
    """

    afterstates: Afterstates
    choice: torch.Tensor
    values: torch.Tensor

    def best_afterstates(self) -> torch.Tensor:
        """The 0-ply best afterstate of every (position, roll) pair: ``int8[B * 21, 28]``."""
        return self.afterstates.select(self.choice)


def expand_rolls(evaluator: Evaluator, board: torch.Tensor, leaf=None,
                 pruning: PlayPruning | None = None) -> RollExpansion:
    """All 21 rolls of ``board: int8[B, 28]`` (positions before the roll), in one batch.

    The values are the evaluator's value function on every afterstate, exact where the play ends the
    game or reaches ``leaf`` (an ``ExactLeaf``), but without ``clamp_outcomes``: on the 21-roll
    expansion the clamps cost as much as the network (measured), and any fixed function of (position,
    roll) leaves the estimate unbiased; they change values only where a clamp binds.

    With ``pruning``, each roll's play is the best of those the evaluator's pruning networks keep, chosen
    by its ``static`` value (the model with its databases and clamps; the module docstring's pruned luck)
    and valued by it, or by ``leaf`` where the play reaches one, as a trial that made it would be.
    """
    batch = board.shape[0]
    rules = evaluator.rules
    rolls = roll_tensor(board.device)
    afterstates = legal_afterstates(board.repeat_interleave(ROLL_COUNT, 0), rolls.repeat(batch, 1), rules)
    if pruning is not None:
        check_pruned_luck(evaluator)
        choice, chosen = pruned_best_plays(afterstates, evaluator.static, evaluator.pruning_networks, pruning, rules)
        values = exact_where_known(chosen, afterstates.select(choice), leaf, rules)
        return RollExpansion(afterstates, choice, values.view(batch, ROLL_COUNT, NUM_OUTCOMES))
    boards = afterstates.boards
    outcomes = exact_where_known(flip_outcomes(evaluator.value.evaluate_flipped(boards).to(torch.float32)), boards,
                                 leaf, rules)
    choice = argmax_per_position(cubeless_equity(outcomes, rules), afterstates)
    values = outcomes[afterstates.offsets + choice].view(batch, ROLL_COUNT, NUM_OUTCOMES)
    return RollExpansion(afterstates, choice, values)


def check_pruned_luck(evaluator: Evaluator) -> None:
    """A ValueError in one line unless ``evaluator`` has the pruning networks pruned luck ranks plays with."""
    if evaluator.pruning_networks is None:
        raise ValueError("pruned luck needs the model's pruning networks, and it has none (bgtrain prune fits them)")


def exact_where_known(outcomes: torch.Tensor, afterstates: torch.Tensor, leaf, rules) -> torch.Tensor:
    """``outcomes`` (``float32[N, 5]`` for the side that played ``afterstates: int8[N, 28]``), in place,
    with the exact value where the play ends the game or reaches ``leaf`` (an ``ExactLeaf`` or None)."""
    if leaf is not None:
        next_side = flip_board(afterstates)
        covered = leaf.covers(next_side)
        if bool(covered.any()):
            outcomes[covered] = flip_outcomes(leaf.outcomes(next_side[covered])).to(outcomes.dtype)
    points = winning_points(afterstates, rules)
    finished = points != 0
    if bool(finished.any()):
        outcomes[finished] = terminal_outcomes(points[finished], rules=rules).to(outcomes.dtype)
    return outcomes


def luck(values: torch.Tensor, roll: torch.Tensor) -> torch.Tensor:
    """The value of the roll that came minus the mean over all rolls: ``values: float[B, 21, ...]``,
    ``roll: int64[B]`` -> ``float64[B, ...]``."""
    values = values.to(torch.float64)
    weights = roll_weights(torch.float64, values.device).view(1, ROLL_COUNT, *([1] * (values.dim() - 2)))
    came = values[torch.arange(values.shape[0], device=values.device), roll]
    return came - (values * weights).sum(1)


def flip_difference(difference: torch.Tensor) -> torch.Tensor:
    """A difference of two outcome vectors seen by the other side: ``flip_outcomes`` without its
    constant (its win is our loss: ``-d[WIN]``; gammons swap sides)."""
    return torch.stack([-difference[..., 0], difference[..., 3], difference[..., 4],
                        difference[..., 1], difference[..., 2]], -1)
