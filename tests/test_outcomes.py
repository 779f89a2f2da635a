"""The outcome contract: equity, flipping, terminal vectors and clamps."""

from __future__ import annotations

import pytest
import torch
from helpers import random_boards

from bgtrain.outcomes import (
    LOSE_BACKGAMMON,
    LOSE_GAMMON,
    WIN,
    WIN_BACKGAMMON,
    WIN_GAMMON,
    clamp_outcomes,
    cubeless_equity,
    flip_outcomes,
    terminal_outcomes,
)
from engine.board import MOVER_BAR, OPPONENT_BAR
from engine.rules import STANDARD, Rules


def random_probs(count: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(count, 5, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    "probs, equity",
    [
        ([1, 0, 0, 0, 0], 1.0),
        ([1, 1, 0, 0, 0], 2.0),
        ([1, 1, 1, 0, 0], 3.0),
        ([0, 0, 0, 0, 0], -1.0),
        ([0, 0, 0, 1, 0], -2.0),
        ([0, 0, 0, 1, 1], -3.0),
        ([0.5, 0, 0, 0, 0], 0.0),
        # 2 * 0.6 - 1 + 0.2 - 0.1 + 0.05 - 0.02
        ([0.6, 0.2, 0.05, 0.1, 0.02], 0.33),
    ],
)
def test_cubeless_equity_of_known_vectors(probs: list[float], equity: float) -> None:
    assert cubeless_equity(torch.tensor(probs)).item() == pytest.approx(equity)


def test_flip_twice_is_identity_and_negates_equity() -> None:
    probs = random_probs(1000)
    flipped = flip_outcomes(probs)
    assert torch.equal(flip_outcomes(flipped), probs)
    assert torch.allclose(cubeless_equity(flipped), -cubeless_equity(probs), atol=1e-6)
    assert torch.equal(flipped[:, WIN], 1 - probs[:, WIN])
    assert torch.equal(flipped[:, WIN_GAMMON], probs[:, LOSE_GAMMON])
    assert torch.equal(flipped[:, LOSE_BACKGAMMON], probs[:, WIN_BACKGAMMON])


def test_flip_keeps_batch_shape() -> None:
    probs = torch.rand(3, 4, 5)
    assert flip_outcomes(probs).shape == (3, 4, 5)
    assert cubeless_equity(probs).shape == (3, 4)


def test_terminal_outcomes() -> None:
    points = torch.tensor([1, 2, 3, -1, -2, -3], dtype=torch.int8)
    expected = torch.tensor(
        [
            [1, 0, 0, 0, 0],
            [1, 1, 0, 0, 0],
            [1, 1, 1, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 1, 0],
            [0, 0, 0, 1, 1],
        ],
        dtype=torch.float32,
    )
    outcomes = terminal_outcomes(points)
    assert torch.equal(outcomes, expected)
    assert torch.equal(cubeless_equity(outcomes), points.float())
    # The loser's vector is the winner's vector flipped.
    assert torch.equal(terminal_outcomes(-points), flip_outcomes(outcomes))


@pytest.mark.parametrize("bad", [0, 4, -5])
def test_terminal_outcomes_rejects_non_results(bad: int) -> None:
    with pytest.raises(ValueError):
        terminal_outcomes(torch.tensor([1, bad]))


def assert_consistent(probs: torch.Tensor) -> None:
    assert (probs >= 0).all() and (probs <= 1).all()
    assert (probs[:, WIN_BACKGAMMON] <= probs[:, WIN_GAMMON]).all()
    assert (probs[:, WIN_GAMMON] <= probs[:, WIN]).all()
    assert (probs[:, LOSE_BACKGAMMON] <= probs[:, LOSE_GAMMON]).all()
    assert (probs[:, LOSE_GAMMON] <= 1 - probs[:, WIN] + 1e-7).all()


def test_clamp_makes_random_vectors_consistent_and_keeps_consistent_ones() -> None:
    boards = random_boards(2000, seed=7)
    probs = random_probs(2000, seed=8) * 1.4 - 0.2  # some outside [0, 1]
    clamped = clamp_outcomes(probs, boards, STANDARD)
    assert_consistent(clamped)
    assert torch.equal(clamp_outcomes(clamped, boards, STANDARD), clamped)
    start = STANDARD.start_board().unsqueeze(0)
    plausible = torch.tensor([[0.52, 0.15, 0.01, 0.13, 0.005]])
    assert torch.equal(clamp_outcomes(plausible, start, STANDARD), plausible)


def test_clamp_no_gammons_once_borne_off() -> None:
    full = torch.full((1, 5), 0.4)
    # mover: 14 on its 1-point, 1 borne off; opponent: 15 on its 1-point (the mover's 24), none off
    board = torch.zeros(1, 28, dtype=torch.int8)
    board[0, 1], board[0, 24] = 14, -15
    clamped = clamp_outcomes(full, board, STANDARD)[0]
    assert clamped[LOSE_GAMMON] == 0 and clamped[LOSE_BACKGAMMON] == 0
    assert clamped[WIN_GAMMON] == pytest.approx(0.4)
    # seen from the other side: now the side to move is the one that cannot win a gammon
    flipped_board = torch.zeros(1, 28, dtype=torch.int8)
    flipped_board[0, 1], flipped_board[0, 24] = 15, -14
    clamped = clamp_outcomes(full, flipped_board, STANDARD)[0]
    assert clamped[WIN_GAMMON] == 0 and clamped[WIN_BACKGAMMON] == 0
    assert clamped[LOSE_GAMMON] == pytest.approx(0.4)


def test_clamp_backgammons_impossible_in_a_race_without_checkers_back() -> None:
    full = torch.full((1, 5), 0.4)
    race = torch.zeros(1, 28, dtype=torch.int8)
    race[0, 10], race[0, 3] = 10, 5  # the mover, all below the opponent's checkers
    race[0, 15], race[0, 24] = -10, -5  # the opponent, on the mover's 15 and 24 (its own 10 and 1)
    clamped = clamp_outcomes(full, race, STANDARD)[0]
    assert clamped[WIN_BACKGAMMON] == 0  # no opponent checker in the mover's home board, none can return
    assert clamped[LOSE_BACKGAMMON] == 0  # likewise for the mover in the opponent's home
    assert clamped[WIN_GAMMON] == pytest.approx(0.4) and clamped[LOSE_GAMMON] == pytest.approx(0.4)
    # with contact (a mover checker behind the opponent's), a checker can still be hit and sent back
    contact = race.clone()
    contact[0, 10], contact[0, 20] = 9, 1
    clamped = clamp_outcomes(full, contact, STANDARD)[0]
    assert clamped[WIN_BACKGAMMON] == pytest.approx(0.4) and clamped[LOSE_BACKGAMMON] == pytest.approx(0.4)
    # checkers on the bar are not a race either
    on_bar = race.clone()
    on_bar[0, 10], on_bar[0, MOVER_BAR] = 9, 1
    on_bar[0, 15], on_bar[0, OPPONENT_BAR] = -9, -1
    assert (clamp_outcomes(full, on_bar, STANDARD)[0, [WIN_BACKGAMMON, LOSE_BACKGAMMON]] > 0).all()


def test_clamp_follows_rules_without_gammons() -> None:
    boards = random_boards(100, seed=9)
    probs = torch.full((100, 5), 0.3)
    no_gammons = Rules(name="no-gammons", gammons=False, backgammons=False)
    clamped = clamp_outcomes(probs, boards, no_gammons)
    assert (clamped[:, 1:] == 0).all() and (clamped[:, WIN] == 0.3).all()
    no_backgammons = Rules(name="no-backgammons", backgammons=False)
    clamped = clamp_outcomes(probs, boards, no_backgammons)
    assert (clamped[:, [WIN_BACKGAMMON, LOSE_BACKGAMMON]] == 0).all()
