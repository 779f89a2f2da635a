"""Tesauro's pubeval, the classic benchmark player: a linear score of the position after the move.

Weights and the encoding description are in ``bgtrain/data/pubeval.json`` (public domain, 1993; its
``source`` field names the origin). The player picks, among the legal afterstates, the one with the
highest score, using the race weights when the position BEFORE the move is a race (``engine.position_facts.is_race``).
"""

from __future__ import annotations

import functools
import json
from importlib import resources

import torch
import torch.nn.functional as F

from bgtrain.model.encoding import COUNT_VALUES, column_probes, first_layer_indices
from engine.board import BOARD_WIDTH, OPPONENT_BAR, borne_off, mover_checkers_on_board

__all__ = ["PUBEVAL_INPUTS", "pubeval_inputs", "pubeval_scores", "pubeval_weights"]

PUBEVAL_INPUTS = 122


@functools.cache
def _load_json() -> dict:
    return json.loads(resources.files("bgtrain").joinpath("data/pubeval.json").read_text())


@functools.cache
def pubeval_weights(device: torch.device | str = "cpu") -> torch.Tensor:
    """``float32[122, 2]``: column 0 the contact weights, column 1 the race weights."""
    data = _load_json()
    weights = torch.tensor([data["contact"], data["race"]], dtype=torch.float32).t().contiguous()
    if weights.shape != (PUBEVAL_INPUTS, 2):
        raise ValueError(
            f"pubeval.json: expected 122 contact and 122 race weights, got {tuple(weights.shape)}"
        )
    return weights.to(device)


def pubeval_inputs(afterstates: torch.Tensor, checkers_per_side: int = 15) -> torch.Tensor:
    """Pubeval's 122 inputs: ``int8[N, 28]`` -> ``float32[N, 122]``.

    ``afterstates`` are seen by the side that just moved (not yet flipped to the next mover). For
    j = 1..24, block ``5 (j - 1)`` describes the count n on the mover's point 25 - j:
    [n == -1, n == 1, n >= 2, n == 3, (n - 3) / 2 if n >= 4]; x[120] is the opponent's checkers on the
    bar / 2, x[121] the mover's checkers borne off / 15. The mover's own bar is not an input.
    """
    counts = afterstates[:, 1:25].flip(-1).to(torch.float32)  # column j - 1 holds point 25 - j
    blocks = torch.stack(
        (
            (counts == -1).to(torch.float32),
            (counts == 1).to(torch.float32),
            (counts >= 2).to(torch.float32),
            (counts == 3).to(torch.float32),
            (counts - 3).clamp(min=0) * 0.5,
        ),
        dim=-1,
    ).flatten(-2)
    mover_off, _ = borne_off(afterstates, checkers_per_side)
    opponent_bar = -afterstates[:, OPPONENT_BAR].to(torch.float32) * 0.5
    return torch.cat((blocks, opponent_bar[:, None], mover_off[:, None].to(torch.float32) / 15.0), dim=-1)


def pubeval_scores(
    afterstates: torch.Tensor, race: torch.Tensor, checkers_per_side: int = 15
) -> torch.Tensor:
    """Pubeval's score of each afterstate: ``int8[N, 28]``, ``bool[N]`` -> ``float32[N]``.

    ``race[i]`` says whether the position before the move that led to ``afterstates[i]`` was a race
    (``is_race`` of that position), choosing the race weights over the contact weights. An afterstate in
    which the mover has borne off its last checker scores +inf, so that the winning move is always chosen.
    """
    # Every input is a function of one column's count (the borne-off count is linear in them all), so
    # the score is a sum of table rows, as for the network's first layer: about 10x faster than
    # building the 122 inputs.
    table = _score_table(afterstates.device, checkers_per_side)
    both = F.embedding_bag(first_layer_indices(afterstates), table, mode="sum")  # [N, 2]: contact, race
    scores = torch.where(race.to(afterstates.device), both[:, 1], both[:, 0])
    won = mover_checkers_on_board(afterstates) == 0
    return scores.masked_fill(won, float("inf"))


@functools.cache
def _score_table(device: torch.device, checkers_per_side: int) -> torch.Tensor:
    """``float32[28 * 31, 2]``: each (column, count)'s share of the contact and race scores; column 0's rows
    also carry the constant share (every board indexes exactly one row per column).
    """
    weights = pubeval_weights("cpu").to(torch.float64)
    empty = pubeval_inputs(torch.zeros((1, BOARD_WIDTH), dtype=torch.int8), checkers_per_side).to(
        torch.float64
    )
    probes = pubeval_inputs(column_probes(), checkers_per_side).to(torch.float64)
    table = (probes - empty) @ weights
    table[:COUNT_VALUES] += empty @ weights
    return table.to(device=device, dtype=torch.float32)
