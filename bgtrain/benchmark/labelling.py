"""Equity losses of candidate plays under a reference: GNU Backgammon at 2-ply (``gnubg-nn``).

For each decision (``label_decisions``):

1. every legal play (the engine's distinct afterstates) is valued at GNU Backgammon 0-ply: the
   cubeless money equity, for the side that played, of the position after it (a play that bears off
   the last checker is worth its points exactly);
2. the candidates are the best ``max_candidates`` plays by that value that lie within ``threshold``
   of the best (GNU Backgammon's own move filters work this way, 8 within 0.16 for its 2-ply);
3. each candidate is valued at the reference ply (2-ply: the position after the play searched over
   the opponent's 21 rolls and the mover's next roll, GNU Backgammon's numbering), and its loss is
   the best candidate's value minus its own.

The reference lies outside our models, so no model we ship can be the judge of its own plays. The
calls into ``gnubg-nn`` are one position at a time (it has no batched entry point); this runs once,
offline, in ``scripts/build_benchmark.py``.
"""

from __future__ import annotations

import torch

from bgtrain.arena.gnubg import gnubg_probabilities, load_bindings
from bgtrain.benchmark.decisions import DecisionSet, classes_of
from bgtrain.outcomes import cubeless_equity, flip_outcomes
from engine.board import flip_board
from engine.game import winning_points
from engine.movegen import legal_afterstates
from engine.rules import STANDARD


class GnubgReference:
    """GNU Backgammon's cubeless money equity of afterstates, for the side that just played."""

    def __init__(self) -> None:
        self.bindings = load_bindings()

    def equities(self, afterstates: torch.Tensor, ply: int) -> torch.Tensor:
        """``afterstates: int8[N, 28]`` (from the mover's side) -> ``float64[N]`` at ``ply``."""
        points = winning_points(afterstates, STANDARD).to(torch.float64)
        equity = points.clone()
        going_on = (points == 0).nonzero(as_tuple=True)[0]
        if going_on.numel():
            probabilities = gnubg_probabilities(self.bindings, flip_board(afterstates[going_on]), ply, torch.float64)
            equity[going_on] = cubeless_equity(flip_outcomes(probabilities))
        return equity


def label_decisions(
    board: torch.Tensor,
    dice: torch.Tensor,
    source: torch.Tensor,
    reference: GnubgReference,
    ply: int = 2,
    max_candidates: int = 10,
    threshold: float = 0.3,
) -> DecisionSet:
    """The decisions ``board: int8[D, 28]``, ``dice: int[D, 2]`` (``source: int8[D]``, see
    ``decisions.SOURCES``) with their candidates and losses under ``reference`` at ``ply``."""
    afterstates = legal_afterstates(board, dice, STANDARD)
    if int(afterstates.counts.min()) < 2:
        raise ValueError("every benchmark decision needs more than one legal play")
    static = reference.equities(afterstates.boards, 0)
    candidates, losses, equities, counts = [], [], [], []
    for start, count in zip(afterstates.offsets.tolist(), afterstates.counts.tolist()):
        values = static[start:start + count]
        order = torch.argsort(values, descending=True, stable=True)[:max_candidates]
        order = order[values[order] >= values[order[0]] - threshold]
        rows = afterstates.boards[start + order]
        searched = reference.equities(rows, ply) if ply else values[order]
        ranked = torch.argsort(searched, descending=True, stable=True)
        candidates.append(rows[ranked])
        equities.append(searched[ranked])
        losses.append(searched[ranked[0]] - searched[ranked])
        counts.append(order.numel())
    return DecisionSet(
        board=board.to(torch.int8),
        dice=torch.sort(dice.to(torch.int8), dim=1, descending=True).values,
        kind=classes_of(board).to(torch.int8),
        source=source.to(torch.int8),
        counts=torch.tensor(counts, dtype=torch.int64),
        candidate=torch.cat(candidates),
        loss=torch.cat(losses).to(torch.float32),
        equity=torch.cat(equities).to(torch.float32),
    )
