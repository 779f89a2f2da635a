"""Agents: each chooses one afterstate per game for a whole batch of games at once.

An agent has a ``name`` and ``choose(state, afterstates) -> int64[B]``: for every game of ``state``
(the side to move, its dice) an index into that game's afterstates (``engine.movegen.Afterstates``).
"""

from __future__ import annotations

from typing import Protocol

import torch

from bgtrain.arena.pubeval import pubeval_scores
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.bearoff import BearoffDatabase
from bgtrain.values.bearoff_two_sided import TwoSidedBearoffDatabase
from bgtrain.values.static_value import NetworkValue, StaticValue, ValueFunction
from engine.movegen import Afterstates, argmax_per_position
from engine.position_facts import is_race
from engine.random_play import random_choice
from engine.rules import STANDARD, Rules
from engine.state import State


class Agent(Protocol):
    name: str

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor: ...


class RandomAgent:
    """Uniformly random legal plays."""

    def __init__(self, seed: int = 0, device: torch.device | str = "cpu") -> None:
        self.name = "random"
        self.generator = torch.Generator(device=device).manual_seed(seed)

    @classmethod
    def for_chunk(cls, seed: int, first_pair: int, device: torch.device | str = "cpu") -> RandomAgent:
        """The agent of the chunk of pairs from ``first_pair`` on: its own stream of (seed, first pair), so
        a duel split into chunks plays the same games whichever process plays which chunk."""
        return cls((seed * 1_000_003 + first_pair) % (1 << 63), device)

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
    """Plays the afterstate of highest cubeless equity at 0-ply: ``bgtrain.values.static_value.StaticValue.plays``
    on ``value`` (a ``ValueFunction``), so with the same ``bearoff``, ``two_sided`` and ``clamps`` it
    plays exactly as ``Evaluator.agent(0)`` does. By default none of them: the bare network, as
    self-play trains it. ``bgtrain bench PATH.pt`` plays with all three (``bgtrain.arena.specs``), as
    GNU Backgammon's 0-ply does.
    """

    def __init__(self, value: ValueFunction, name: str, rules: Rules = STANDARD,
                 bearoff: BearoffDatabase | None = None, clamps: bool = False,
                 two_sided: TwoSidedBearoffDatabase | None = None) -> None:
        self.name = name
        self.rules = rules
        self.static = StaticValue(value, rules, bearoff, clamps, two_sided)

    @classmethod
    def from_network(cls, network, name: str, rules: Rules = STANDARD, **options) -> GreedyValueAgent:
        """On a model with ``evaluate(board, rules)`` and ``evaluate_flipped(board, rules)`` (a
        ``ValueNetwork`` or an exported model); ``options``: ``bearoff``, ``two_sided``, ``clamps``."""
        return cls(NetworkValue(network, rules), name, rules, **options)

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        return argmax_per_position(cubeless_equity(self.static.plays(afterstates), self.rules), afterstates)

    def cube_probabilities(self, board: torch.Tensor) -> torch.Tensor:
        """The outcome probabilities the cube decisions use (``bgtrain.arena.cube_duel``): ``V_0`` of
        ``board: int8[B, 28]`` for its side to move, ``float32[B, 5]``."""
        return self.static.positions(board)
