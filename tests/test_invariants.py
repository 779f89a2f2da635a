"""Invariants at every step of many random batched games."""

from __future__ import annotations

import torch

from engine.board import FLIP_PERMUTATION, MOVER_BAR, OPPONENT_BAR, borne_off, flip_board, pip_counts
from engine.dice import RandomDice
from engine.game import new_games, play, winning_points
from engine.movegen import legal_afterstates
from engine.random_play import random_choice
from engine.rules import STANDARD
from engine.state import flip

CHECKERS = STANDARD.checkers_per_side


def assert_valid_boards(board: torch.Tensor) -> None:
    mover_off, opponent_off = borne_off(board, CHECKERS)
    assert bool(((mover_off >= 0) & (mover_off <= CHECKERS)).all()), "mover has more than 15 checkers"
    assert bool(((opponent_off >= 0) & (opponent_off <= CHECKERS)).all()), "opponent has more than 15 checkers"
    assert bool((board[:, MOVER_BAR] >= 0).all()) and bool((board[:, OPPONENT_BAR] <= 0).all())


def test_invariants_over_random_games():
    games = 256
    dice = RandomDice(3)
    generator = torch.Generator().manual_seed(4)
    state = new_games(STANDARD, games, dice)
    steps = 0
    while not bool(state.game_over.all()):
        live = ~state.game_over
        assert_valid_boards(state.board)
        assert torch.equal(flip(flip(state)).board, state.board)
        mover_pips, opponent_pips = pip_counts(state.board)

        afterstates = legal_afterstates(state.board, state.dice)
        assert bool((afterstates.counts >= 1).all())
        assert_valid_boards(afterstates.boards)
        parent = afterstates.position
        after_mover, after_opponent = pip_counts(afterstates.boards)
        # A move never moves a checker backwards: the mover's pips fall by at most the dice played,
        # by exactly that unless a checker bore off with a larger die, and the opponent's pips only
        # grow (hits send checkers back).
        high = state.dice.long().max(1).values[parent]
        low = state.dice.long().min(1).values[parent]
        used = afterstates.dice_used.long()
        played = torch.where(high == low, high * used, torch.where(used == 2, high + low, 0))
        fall = mover_pips[parent] - after_mover
        exact = used != 1  # with one die played we do not know which one; checked below
        assert bool((fall[exact] <= played[exact]).all())
        none_off = borne_off(afterstates.boards, CHECKERS)[0] == borne_off(state.board, CHECKERS)[0][parent]
        assert bool((fall[exact & none_off] == played[exact & none_off]).all())
        one = (used == 1) & (high != low)
        assert bool(((fall[one] >= 1) & (fall[one] <= high[one])).all())
        assert bool((after_opponent >= opponent_pips[parent]).all())
        # A position with no legal play keeps its one afterstate: itself.
        passed = afterstates.dice_used == 0
        assert torch.equal(afterstates.boards[passed], state.board[parent[passed]])

        before = state
        choice = random_choice(afterstates, generator)
        chosen = afterstates.select(choice)
        state = play(state, chosen, STANDARD, dice)
        # Terminal <=> the mover has borne off everything; the score is 1, 2 or 3.
        won = live & (borne_off(chosen, CHECKERS)[0] == CHECKERS)
        assert torch.equal(state.game_over, before.game_over | won)
        points = winning_points(chosen, STANDARD).long()
        assert bool(((points[won] >= 1) & (points[won] <= 3)).all())
        sign = 1 - 2 * before.seat.long()
        assert torch.equal(state.result.long()[won], (points * sign)[won])
        # The game goes on from the other side's view, with the other seat to move.
        going = live & ~won
        assert torch.equal(state.board[going], flip_board(chosen)[going])
        assert torch.equal(state.seat[going], 1 - before.seat[going])
        steps += 1
    assert steps > 50
    assert bool((state.result != 0).all())


def test_flip_board_is_the_documented_permutation_and_an_involution():
    """flipped[i] = -board[FLIP_PERMUTATION[i]] on any leading shape, and flipping twice gives the board."""
    generator = torch.Generator().manual_seed(9)
    boards = torch.randint(-15, 16, (4, 3, 28), generator=generator, dtype=torch.int8)
    assert torch.equal(flip_board(boards), -boards[..., list(FLIP_PERMUTATION)])
    assert torch.equal(flip_board(flip_board(boards)), boards)
    assert torch.equal(flip_board(boards[0, 0]), -boards[0, 0, list(FLIP_PERMUTATION)])
