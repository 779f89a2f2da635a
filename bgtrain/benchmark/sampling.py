"""Choosing the benchmark's decisions: a pool from noisy self-play, then a mix of plain and disputed ones.

1. ``self_play_pool``: games between pairs of agents (the shipped checkpoints and GNU Backgammon
   0-ply), every game with its own rate of uniformly random moves (diverse, sometimes odd positions),
   all games in lock step. A few decisions are kept per game: each decision (a position with more
   than one legal play) is recorded with the probability of its class, since crashed positions are
   rare and contact ones common. Stops once every class has its share of the pool.
2. ``disputed``: whether the probe agents (our 0-ply and 1-ply choices, GNU Backgammon 0-ply) do not
   all pick the same play: such decisions are where move choice is hard.
3. ``choose_decisions``: per class, ``disputed_fraction`` of the decisions from the disputed part of
   the pool and the rest from the whole pool, without repeats; seeded.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from bgtrain.arena.agents import Agent
from bgtrain.arena.duel import choose_moves
from bgtrain.benchmark.decisions import CLASSES, classes_of
from bgtrain.benchmark.scorer import agent_choices
from engine.dice import RandomDice
from engine.game import new_games, play
from engine.position_kinds import phase_positions
from engine.random_play import random_choice
from engine.rules import STANDARD


def self_play_pool(
    pairs: Sequence[tuple[Agent, Agent]],
    wanted: Sequence[int],
    record_rate: Sequence[float],
    noise_rates: Sequence[float],
    seed: int,
    games: int = 512,
    max_rounds: int = 200,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions with a choice of play from self-play: ``(board int8[N, 28], dice int8[N, 2])``.

    Rounds of ``games`` games are played, round r between ``pairs[r % len(pairs)]`` (agent A in seat 0
    in half the games, seat 1 in the other half); a game's random-move rate is drawn from
    ``noise_rates``. A decision of class c (``CLASSES``) is recorded with probability ``record_rate[c]``
    until the pool holds ``wanted[c]`` of that class. Same seed, same pool.
    """
    generator = torch.Generator().manual_seed(seed)
    boards: list[torch.Tensor] = []
    rolls: list[torch.Tensor] = []
    have = torch.zeros(len(CLASSES), dtype=torch.int64)
    wanted_tensor = torch.tensor(list(wanted))
    rates = torch.tensor(list(record_rate), dtype=torch.float64)
    noise_choices = torch.tensor(list(noise_rates), dtype=torch.float64)
    for round_index in range(max_rounds):
        if bool((have >= wanted_tensor).all()):
            break
        agent_a, agent_b = pairs[round_index % len(pairs)]
        dice = RandomDice(seed * 1_000_003 + round_index)
        state = new_games(STANDARD, games, dice)
        a_seat = (torch.arange(games) % 2).to(torch.int8)
        noise = noise_choices[torch.randint(len(noise_choices), (games,), generator=generator)]
        ids = torch.arange(games)
        while ids.numel():
            state, ids, afterstates, choice = choose_moves(agent_a, agent_b, state, ids, a_seat, STANDARD)
            explore = torch.rand(ids.numel(), generator=generator, dtype=torch.float64) < noise[ids]
            choice = torch.where(explore, random_choice(afterstates, generator), choice)
            kind = phase_positions(classes_of(state.board))
            open_choice = (afterstates.counts > 1) & (kind >= 0)
            keep = open_choice & (torch.rand(ids.numel(), generator=generator, dtype=torch.float64)
                                  < rates[kind.clamp(min=0)])
            keep &= have[kind.clamp(min=0)] < wanted_tensor[kind.clamp(min=0)]
            if bool(keep.any()):
                boards.append(state.board[keep].clone())
                rolls.append(state.dice[keep].clone())
                have += torch.bincount(kind[keep], minlength=len(CLASSES))
            state = play(state, afterstates.select(choice), STANDARD, dice)
            going_on = ~state.game_over
            state, ids = state.select(going_on), ids[going_on]
    return torch.cat(boards), torch.cat(rolls)


def disputed(probes: Sequence[Agent], board: torch.Tensor, dice: torch.Tensor) -> torch.Tensor:
    """Whether the ``probes`` do not all choose the same play in each position: ``bool[B]``."""
    first = agent_choices(probes[0], board, dice)
    differs = torch.zeros(board.shape[0], dtype=torch.bool)
    for probe in probes[1:]:
        differs |= (agent_choices(probe, board, dice) != first).any(1)
    return differs


def repeated(board: torch.Tensor, dice: torch.Tensor) -> torch.Tensor:
    """Whether each decision (position and roll) already occurred earlier in the pool: ``bool[N]``
    (self-play reaches the opening positions, and a few others, many times)."""
    rows = torch.cat([board.to(torch.int8), dice.to(torch.int8)], dim=1)
    _, inverse = torch.unique(rows, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), rows.shape[0], dtype=torch.int64)
    first = first.scatter_reduce(0, inverse, torch.arange(rows.shape[0]), "amin")
    return first[inverse] != torch.arange(rows.shape[0])


def choose_decisions(
    kind: torch.Tensor, is_disputed: torch.Tensor, wanted: Sequence[int], disputed_fraction: float, seed: int,
    is_repeat: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices into the pool: per class ``wanted[c]`` decisions, ``disputed_fraction`` of them disputed
    (as many as there are) and the rest a random sample of the remaining pool; decisions marked in
    ``is_repeat: bool[P]`` (see ``repeated``) are never chosen. Returns ``(index
    int64[N], chosen_as_disputed bool[N])``, in class order; seeded.

    The rest is sampled in two strata, the remaining disputed and the undisputed decisions, each in
    proportion to its share of the remaining pool (a random sample, stratified). Not the first
    decisions of the shuffled pool that were not taken as disputed: that prefix holds no disputed
    decision at all, since the disputed ones there are exactly those already taken.
    """
    generator = torch.Generator().manual_seed(seed)
    indices, flags = [], []
    for class_index, count in enumerate(wanted):
        members = (kind == class_index).nonzero(as_tuple=True)[0]
        members = members[torch.randperm(members.numel(), generator=generator)]
        if is_repeat is not None:
            members = members[~is_repeat[members]]
        hard = members[is_disputed[members]][: round(count * disputed_fraction)]
        left_disputed = members[is_disputed[members]][hard.numel():]
        undisputed = members[~is_disputed[members]]
        remaining = left_disputed.numel() + undisputed.numel()
        wanted_rest = min(count - hard.numel(), remaining)
        from_disputed = round(wanted_rest * left_disputed.numel() / max(remaining, 1))
        from_disputed = max(min(from_disputed, left_disputed.numel()), wanted_rest - undisputed.numel())
        rest = torch.cat([undisputed[: wanted_rest - from_disputed], left_disputed[:from_disputed]])
        indices += [hard, rest]
        flags += [torch.ones(hard.numel(), dtype=torch.bool), torch.zeros(rest.numel(), dtype=torch.bool)]
    return torch.cat(indices), torch.cat(flags)
