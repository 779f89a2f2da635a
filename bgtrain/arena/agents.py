"""Agents: each chooses one afterstate per game for a whole batch of games at once.

An agent has a ``name`` and ``choose(state, afterstates) -> int64[B]``: for every game of ``state``
(the side to move, its dice) an index into that game's afterstates (``engine.movegen.Afterstates``).
"""

from __future__ import annotations

from typing import Protocol

import torch

from bgtrain.arena.pubeval import is_race, pubeval_scores
from bgtrain.outcomes import cubeless_equity, flip_outcomes, terminal_outcomes
from engine.board import flip_board
from engine.game import winning_points
from engine.movegen import Afterstates
from engine.random_play import random_choice
from engine.rules import STANDARD, Rules
from engine.state import State


class Agent(Protocol):
    name: str

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor: ...


def argmax_per_position(scores: torch.Tensor, afterstates: Afterstates) -> torch.Tensor:
    """The index of the best-scoring afterstate within each position (the first on ties): ``int64[B]``."""
    batch = afterstates.counts.shape[0]
    position = afterstates.position
    best = torch.full((batch,), float("-inf"), dtype=scores.dtype, device=scores.device)
    best = best.scatter_reduce(0, position, scores, "amax")
    flat_index = torch.arange(scores.shape[0], device=scores.device)
    candidate = torch.where(scores == best[position], flat_index, scores.shape[0])
    first = torch.full((batch,), scores.shape[0], dtype=torch.int64, device=scores.device)
    first = first.scatter_reduce(0, position, candidate, "amin")
    return first - afterstates.offsets


def afterstate_outcomes(
    evaluate_next_side, afterstates: torch.Tensor, rules: Rules, extra_roll: torch.Tensor | None = None
) -> torch.Tensor:
    """Outcome probabilities of afterstates for the side that just moved: ``float[N, 5]``.

    ``evaluate_next_side(afterstates) -> float[N, 5]`` scores each afterstate for the side to move
    next (``ValueNetwork.evaluate_flipped``, or ``evaluate`` of ``flip_board``); the result is flipped
    back to the mover. Where ``extra_roll: bool[N]`` is set (acey-deucey) the mover moves again, so
    the afterstate is scored for the mover as it stands. A move that bears off the last checker
    scores as the real result (1, 2 or 3 points, acey-deucey's checkers left, or the loss of
    play-to-lose), not as the network's
    guess.
    """
    outcomes = flip_outcomes(evaluate_next_side(afterstates))
    if extra_roll is not None and bool(extra_roll.any()):
        outcomes[extra_roll] = evaluate_next_side(flip_board(afterstates[extra_roll]))
    points = winning_points(afterstates, rules)
    ends = points != 0
    if bool(ends.any()):
        outcomes[ends] = terminal_outcomes(points[ends], outcomes.dtype, rules)
    return outcomes


class RandomAgent:
    """Uniformly random legal plays."""

    def __init__(self, seed: int = 0, device: torch.device | str = "cpu") -> None:
        self.name = "random"
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        return random_choice(afterstates, self.generator)


class PubevalAgent:
    """Tesauro's pubeval: the highest linear score, race weights when the position before the move is a race."""

    def __init__(self, rules: Rules = STANDARD) -> None:
        self.name = "pubeval"
        self.rules = rules

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        race = is_race(state.board)[afterstates.position]
        scores = pubeval_scores(afterstates.boards, race, self.rules.checkers_per_side)
        return argmax_per_position(scores, afterstates)


class GreedyValueAgent:
    """Plays the afterstate of highest cubeless equity under a value function (0-ply).

    ``evaluate_next_side(afterstates int8[N, 28]) -> float[N, 5]``: outcome probabilities of each
    afterstate for the side to move next (see ``afterstate_outcomes``).
    """

    def __init__(self, evaluate_next_side, name: str, rules: Rules = STANDARD) -> None:
        self.name = name
        self.evaluate_next_side = evaluate_next_side
        self.rules = rules

    @classmethod
    def from_network(cls, network, name: str, rules: Rules = STANDARD) -> GreedyValueAgent:
        return cls(lambda afterstates: network.evaluate_flipped(afterstates, rules), name, rules)

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        extra_roll = afterstates.extra_roll if self.rules.acey_deucey else None
        outcomes = afterstate_outcomes(self.evaluate_next_side, afterstates.boards, self.rules, extra_roll)
        return argmax_per_position(cubeless_equity(outcomes, self.rules), afterstates)
