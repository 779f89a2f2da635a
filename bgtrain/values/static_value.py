"""The one 0-ply valuation of positions and plays, used by self-play training, the greedy agents and
the ``Evaluator``.

A value function (``ValueFunction``: ``evaluate(board)`` for the side to move, ``evaluate_flipped
(afterstates)`` for the side to move next) gives outcome probabilities (``bgtrain.outcomes``).
``StaticValue`` turns it into values that know the rules, for whole batches:

* ``positions(board)``, ``V_0`` of positions before the roll, for the side to move: a finished game
  (the opponent has borne off every checker) is its exact loss; a bear-off inside the databases is
  their exact value (``bgtrain.values.bearoff_two_sided.bearoff_outcomes``: the two-sided database's where it
  covers the position, else the one-sided one's); otherwise the value function's, clamped
  (``clamp_outcomes``) when ``clamps``.
* ``afterstates(boards)``, ``A_0`` of positions just after a play, for the side that played: exact
  when the play bore off the last checker (1, 2 or 3 points, acey-deucey's checkers left, the loss of
  play-to-lose); otherwise ``flip_outcomes`` of the next side's value (database, clamps as above).
* ``plays(afterstates)``: ``A_0`` of each legal play. A play that earns an extra roll (acey-deucey)
  leaves the mover on roll, so its position is valued by ``positions``, not flipped; a play that ends
  the game is exact even then.

The options are named: ``bearoff`` (a ``BearoffDatabase`` or None), ``two_sided`` (a
``TwoSidedBearoffDatabase`` or None) and ``clamps``. ``once_each`` values the distinct rows of a batch
only: the evaluator's search reaches the same position through many plays and rolls. Self-play uses the bare network (none of them);
``Evaluator`` and the agents of ``bgtrain.arena.specs`` (``bgtrain bench PATH.pt``) use all three by
default. With the same options, an agent's 0-ply play and ``Evaluator.agent(0)`` are the same.
"""

from __future__ import annotations

from typing import Protocol

import torch

from bgtrain.outcomes import clamp_outcomes, flip_outcomes, terminal_outcomes
from bgtrain.values.bearoff import BearoffDatabase
from bgtrain.values.bearoff_two_sided import TwoSidedBearoffDatabase, bearoff_outcomes
from engine.board import flip_board
from engine.deduplicate import board_hash
from engine.game import winning_points
from engine.movegen import Afterstates
from engine.position_facts import mover_finished, opponent_finished
from engine.rules import STANDARD, Rules

STATIC_CHUNK = 16384  # rows per 0-ply evaluation pass on a CPU


class ValueFunction(Protocol):
    """What a valuation needs of a model: outcome probabilities (``bgtrain.outcomes``) of boards."""

    def evaluate(self, board: torch.Tensor) -> torch.Tensor:
        """``int8[N, 28]`` positions -> ``float[N, 5]`` for their side to move."""
        ...

    def evaluate_flipped(self, afterstates: torch.Tensor) -> torch.Tensor:
        """``int8[N, 28]`` afterstates (mover's side) -> ``float[N, 5]`` for the side to move next,
        i.e. ``evaluate(flip_board(afterstates))``."""
        ...


class NetworkValue:
    """A ``ValueNetwork`` (or an exported model) and the rules it plays, as a ``ValueFunction``."""

    def __init__(self, network, rules: Rules = STANDARD) -> None:
        self.network = network
        self.rules = rules

    def evaluate(self, board: torch.Tensor) -> torch.Tensor:
        return self.network.evaluate(board, self.rules)

    def evaluate_flipped(self, afterstates: torch.Tensor) -> torch.Tensor:
        return self.network.evaluate_flipped(afterstates, self.rules)


def model_device(model) -> torch.device:
    """Where a model's weights live: the device its databases belong on (the CPU for an exported
    model, which has no torch parameters)."""
    parameters = model.parameters() if hasattr(model, "parameters") else iter(())
    return next(parameters, torch.empty(0)).device


class StaticValue:
    """0-ply values of positions, afterstates and plays under ``rules`` (see the module docstring)."""

    def __init__(self, value: ValueFunction, rules: Rules = STANDARD, bearoff: BearoffDatabase | None = None,
                 clamps: bool = True, two_sided: TwoSidedBearoffDatabase | None = None) -> None:
        self.value = value
        self.rules = rules
        self.bearoff = bearoff
        self.two_sided = two_sided
        self.clamps = clamps

    def positions(self, board: torch.Tensor) -> torch.Tensor:
        """``V_0`` of ``int8[B, 28]`` positions before the roll: ``float32[B, 5]`` for the side to move."""
        return _in_chunks(self._positions, board)

    def afterstates(self, boards: torch.Tensor) -> torch.Tensor:
        """``A_0`` of ``int8[N, 28]`` afterstates: ``float32[N, 5]`` for the side that just moved."""
        return _in_chunks(self._afterstates, boards)

    def plays(self, afterstates: Afterstates) -> torch.Tensor:
        """``A_0`` of every legal play: ``float32[N, 5]`` for the side that played it."""
        boards = afterstates.boards
        if not self.rules.acey_deucey:
            return self.afterstates(boards)
        # A play that earns an extra roll is valued as the mover's position before that roll, and only
        # so: most afterstates of an acey-deucey 1-2 do, and valuing them both ways cost a fifth of
        # acey-deucey self-play (measured).
        again = afterstates.extra_roll & ~mover_finished(boards)
        if not bool(again.any()):
            return self.afterstates(boards)
        turn_over = (~again).nonzero(as_tuple=True)[0]
        rolls_again = again.nonzero(as_tuple=True)[0]
        after_turn, before_roll = self.afterstates(boards[turn_over]), self.positions(boards[rolls_again])
        probs = before_roll.new_empty((boards.shape[0], before_roll.shape[1]))
        probs[turn_over] = after_turn
        probs[rolls_again] = before_roll
        return probs

    def finished(self, board: torch.Tensor) -> torch.Tensor:
        """Exact outcomes of finished games (``engine.position_facts.opponent_finished``) for the side to
        move, which lost: ``float32[B, 5]``."""
        points = winning_points(flip_board(board), self.rules).to(torch.int64)
        return terminal_outcomes(-points, rules=self.rules)

    def won(self, afterstates: torch.Tensor) -> torch.Tensor:
        """Exact outcomes of plays that bore off the last checker, for the side that played: ``float32[N, 5]``."""
        return terminal_outcomes(winning_points(afterstates, self.rules), rules=self.rules)

    def _positions(self, board: torch.Tensor) -> torch.Tensor:
        probs = self.value.evaluate(board).to(torch.float32)
        if self.clamps:
            probs = clamp_outcomes(probs, board, self.rules)
        covered, values = bearoff_outcomes(board, self.rules, self.bearoff, self.two_sided)
        if covered.numel():
            probs[covered] = values
        over = opponent_finished(board)
        if bool(over.any()):
            probs[over] = self.finished(board[over])
        return probs

    def _afterstates(self, afterstates: torch.Tensor) -> torch.Tensor:
        probs = flip_outcomes(self.value.evaluate_flipped(afterstates).to(torch.float32))
        if self.clamps:
            # clamp_outcomes treats both sides alike, so clamping the flipped vector on the mover's
            # board equals flipping the clamp on the next side's board, and no board needs flipping.
            probs = clamp_outcomes(probs, afterstates, self.rules)
        covered, next_side = bearoff_outcomes(afterstates, self.rules, self.bearoff, self.two_sided, flipped=True)
        if covered.numel():
            probs[covered] = flip_outcomes(next_side)
        won = mover_finished(afterstates)
        if bool(won.any()):
            probs[won] = self.won(afterstates[won])
        return probs


ONCE_EACH_MIN_ROWS = 256  # below this the hashing costs more than the repeats it saves


def once_each(function, boards: torch.Tensor) -> torch.Tensor:
    """``function(boards)`` (``int8[N, 28]`` -> ``[N, ...]``) computed on the distinct rows only and spread
    back to every row. Rows are grouped by a 64-bit hash, then checked equal to their group's first row, so
    a collision only costs the saving (the rows are then valued as they are). In a 2-ply search 30-80% of
    the positions valued are repeats (the same reply after different plays; measured), GNU Backgammon's
    reason for its evaluation cache."""
    count = boards.shape[0]
    if count < ONCE_EACH_MIN_ROWS:
        return function(boards)
    keys = board_hash(boards)
    unique, inverse = torch.unique(keys, return_inverse=True)
    if unique.numel() == count:
        return function(boards)
    rows = torch.arange(count, device=boards.device)
    first = torch.full((unique.numel(),), count, dtype=torch.int64, device=boards.device)
    first = first.scatter_reduce(0, inverse, rows, "amin")
    distinct = boards[first]
    if not torch.equal(distinct[inverse], boards):  # two positions share a hash: value them all
        return function(boards)
    return function(distinct)[inverse]


def _in_chunks(function, boards: torch.Tensor) -> torch.Tensor:
    """``function`` over row chunks of ``STATIC_CHUNK``: on a CPU the clamps and masks over a chunk that
    stays in cache run about four times faster than over a million rows at once (measured). A chunk is
    a multiple of the network's own chunk (``EVALUATE_CHUNK``), so values do not depend on it."""
    if boards.shape[0] <= STATIC_CHUNK or boards.device.type != "cpu":
        return function(boards)
    return torch.cat([function(chunk) for chunk in boards.split(STATIC_CHUNK)])
