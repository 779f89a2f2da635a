"""Random play on the batched engine: reachable positions for tests and benchmarks, and the
random agent's move choice. Everything is batched; randomness comes from explicit generators."""

from __future__ import annotations

import torch

from engine.dice import RandomDice
from engine.game import new_games, play, restart_finished
from engine.movegen import Afterstates, legal_afterstates
from engine.rules import STANDARD, Rules


def random_choice(afterstates: Afterstates, generator: torch.Generator) -> torch.Tensor:
    """A uniformly random afterstate index per position: ``int64[B]``."""
    counts = afterstates.counts
    uniform = torch.rand(counts.shape[0], generator=generator, device=counts.device)
    return (uniform * counts).long().clamp(max=counts - 1)


def sample_positions(
    count: int,
    seed: int,
    rules: Rules = STANDARD,
    device: torch.device | str = "cpu",
    games: int = 512,
    turns: int = 250,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` positions reached by random play (side to move, game not over) with their rolls:
    ``(board int8[count, 28], dice int8[count, 2])``. Same seed, same positions.

    ``games`` random games are played in lock step for at least ``turns`` turns (finished games
    restart), long enough to span whole games from the opening to the last bear-off, and the
    positions are drawn uniformly from every turn of every game.
    """
    dice = RandomDice(seed, device)
    generator = torch.Generator(device=device).manual_seed(seed + 1)
    state = new_games(rules, games, dice, device)
    boards, rolls, have, turn = [], [], 0, 0
    while have < count or turn < turns:
        live = ~state.game_over
        boards.append(state.board[live])
        rolls.append(state.dice[live])
        have += boards[-1].shape[0]
        afterstates = legal_afterstates(state.board, state.dice, rules)
        choice = random_choice(afterstates, generator)
        state = play(state, afterstates.select(choice), rules, dice, afterstates.select_extra_roll(choice))
        state = restart_finished(state, rules, dice)
        turn += 1
    board = torch.cat(boards)
    order = torch.randperm(board.shape[0], generator=generator, device=device)[:count]
    return board[order], torch.cat(rolls)[order]
