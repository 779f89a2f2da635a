"""Pubeval: the batched scores against a hand computation and a direct scalar transliteration."""

from __future__ import annotations

import json
from importlib import resources

import pytest
import torch
from helpers import random_boards

from bgtrain.arena.pubeval import pubeval_inputs, pubeval_scores
from engine.board import MOVER_BAR, OPPONENT_BAR
from engine.position_facts import is_race
from engine.rules import STANDARD

WEIGHTS = json.loads(resources.files("bgtrain").joinpath("data/pubeval.json").read_text())


def scalar_pubeval(race: bool, board: list[int]) -> float:
    """Tesauro's ``pubeval(race, pos)`` and ``setx(pos)`` in plain Python, one position at a time.

    ``pos[0]`` the opponent's bar (<= 0), ``pos[1..24]`` the points, ``pos[25]`` the mover's bar and
    ``pos[26]`` the mover's checkers borne off, as in the original C.
    """
    pos = board[:26] + [15 - sum(c for c in board[1:26] if c > 0)]
    if pos[26] == 15:
        return float("inf")
    x = [0.0] * 122
    for j in range(1, 25):
        n = pos[25 - j]
        k = 5 * (j - 1)
        if n == -1:
            x[k] = 1.0
        if n == 1:
            x[k + 1] = 1.0
        if n >= 2:
            x[k + 2] = 1.0
        if n == 3:
            x[k + 3] = 1.0
        if n >= 4:
            x[k + 4] = (n - 3) / 2.0
    x[120] = -pos[0] / 2.0
    x[121] = pos[26] / 15.0
    weights = WEIGHTS["race" if race else "contact"]
    return sum(w * v for w, v in zip(weights, x))


def play(board: torch.Tensor, *moves: tuple[int, int]) -> torch.Tensor:
    """The mover's checkers moved ``(from, to)`` on a copy of ``board: int8[28]`` (no hits needed here)."""
    after = board.clone()
    for source, target in moves:
        assert after[source] > 0 and after[target] >= 0
        after[source] -= 1
        after[target] += 1
    return after


def test_weights_file_keeps_its_source() -> None:
    assert "public domain" in WEIGHTS["source"]
    assert len(WEIGHTS["contact"]) == len(WEIGHTS["race"]) == 122


def test_hand_computed_position() -> None:
    # The mover: one checker on its 6-point, 14 borne off. The opponent: a blot on the mover's 3-point,
    # one checker on the bar, 2 on the mover's 20-point and 11 on the mover's 24-point.
    board = torch.zeros(1, 28, dtype=torch.int8)
    board[0, 6] = 1
    board[0, 3], board[0, 20], board[0, 24], board[0, OPPONENT_BAR] = -1, -2, -11, -1
    # Inputs: the mover's 6-point is j = 19 -> x[91] (n == 1); the blot on the 3-point is j = 22 ->
    # x[105] (n == -1); x[120] = 1 / 2; x[121] = 14 / 15; the opponent's 2 and 11 have no unit.
    x = pubeval_inputs(board)[0]
    assert x.nonzero().flatten().tolist() == [91, 105, 120, 121]
    contact = -1.18223 + 0.63211 + 0.5 * 5.62596 + 14 / 15 * -2.758
    race = 3.05454 + 0.0 + 0.5 * 0.0 + 14 / 15 * 3.4204
    scores = pubeval_scores(board.expand(2, 28), torch.tensor([False, True]))
    assert scores.tolist() == pytest.approx([contact, race], abs=1e-5)


def test_opening_moves_match_scalar_implementation() -> None:
    start = STANDARD.start_board()
    afterstates = torch.stack(
        [
            play(start, (8, 5), (6, 5)),  # 31
            play(start, (24, 21), (6, 5)),  # 31
            play(start, (13, 10), (6, 5)),  # 31
            play(start, (8, 4), (6, 4)),  # 42
            play(start, (13, 7), (8, 7)),  # 61
            play(start, (24, 13)),  # 65
            play(start, (13, 11), (6, 5)),  # 21
            play(start, (8, 2), (6, 2)),  # 64
            play(start, (13, 8), (13, 8), (8, 3), (8, 3)),  # 55: 13/3(2)
        ]
    )
    race = torch.zeros(len(afterstates), dtype=torch.bool)
    scores = pubeval_scores(afterstates, race)
    expected = [scalar_pubeval(False, row.tolist()) for row in afterstates]
    assert scores.tolist() == pytest.approx(expected, abs=1e-4)
    # Pubeval makes its 5-point with an opening 31.
    assert scores[:3].argmax().item() == 0


def test_random_positions_match_scalar_implementation_with_both_weight_sets() -> None:
    boards = torch.cat((random_boards(150, seed=10), random_boards(50, seed=11, race=True)))
    race = torch.arange(len(boards)) % 3 == 0
    scores = pubeval_scores(boards, race)
    expected = [scalar_pubeval(bool(r), row.tolist()) for r, row in zip(race, boards)]
    assert scores.tolist() == pytest.approx(expected, abs=1e-4)


def test_bearing_off_the_last_checker_scores_infinity() -> None:
    board = torch.zeros(2, 28, dtype=torch.int8)
    board[:, 20] = -15
    board[1, 1] = 1  # the second row still has a checker to bear off
    scores = pubeval_scores(board, torch.tensor([True, True]))
    assert scores[0] == float("inf") and torch.isfinite(scores[1])


def test_is_race() -> None:
    start = STANDARD.start_board()
    race = torch.zeros(28, dtype=torch.int8)
    race[1:7] = torch.tensor([3, 3, 3, 2, 2, 2], dtype=torch.int8)
    race[7], race[8], race[20] = -5, -5, -5
    touching = race.clone()
    touching[7], touching[6] = 2, -5  # mover's checkers on 7 are past the opponent's on 6: contact
    touching[8], touching[20] = -5, -5
    on_bar = race.clone()
    on_bar[6], on_bar[MOVER_BAR] = 1, 1
    opponent_on_bar = race.clone()
    opponent_on_bar[20], opponent_on_bar[OPPONENT_BAR] = -4, -1
    boards = torch.stack((start, race, touching, on_bar, opponent_on_bar))
    assert is_race(boards).tolist() == [False, True, False, False, False]
    assert is_race(random_boards(100, seed=12, race=True)).all()
