"""A rules-of-thumb baseline for every variant: the ``heuristic`` agent of ``bgtrain bench`` and ``league``.

It scores each afterstate (from the mover's side, before the turn passes) with a few batched board
facts and plays the best, as pubeval does, but the facts are the ones a beginner is taught and they
read the variant's rules:

* to win (every variant but play-to-lose): hit (the opponent's waiting checkers and the pips they
  lose), make points (home-board points and the bar point most, a run of made points more), leave few
  blots that the opponent's checkers behind them can reach (weighted by the pips a hit would cost), and
  once the sides are past each other, race: fewest pips, most checkers off;
* to lose first off (play-to-lose): the opposite objective, not the opposite play. Never hit (it
  slows the opponent, who must finish first), leave blots where the opponent can hit them, keep
  checkers back and out of the home board (bearing off needs every checker home), and bear off as
  little as the dice allow.

Checkers in hand (dutch, acey-deucey) count as checkers on the bar: 25 pips to go, and able to hit
any blot in the entering side's way. The weights were set by hand and checked against ``random`` and
``pubeval`` (figures in ``checkpoints/README.md``); this is a yardstick, not a strong player.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND, borne_off, pip_counts
from engine.movegen import Afterstates, argmax_per_position
from engine.position_facts import is_race
from engine.rules import Rules
from engine.state import State

# A direct shot (1..6 pips away) hits 11 of 36 rolls or more; an indirect one (7..12) at most 6.
DIRECT_REACH = 6
INDIRECT_REACH = 12
INDIRECT_SHOT_WEIGHT = 0.4

# The weights of the facts (points of the score per unit); the pip terms are per pip.
WIN_WEIGHTS = {
    "opponent_waiting": 1.2,  # each opposing checker on the bar or in hand
    "pip_lead": 0.04,  # opponent's pips minus the mover's: hitting adds the pips the hit checker loses
    "home_point": 0.9,  # each made point in the home board (points 1..6)
    "bar_point": 0.7,  # the 7-point
    "outer_point": 0.35,  # each other made point
    "prime": 0.45,  # each point of the longest run of made points beyond the first
    "blot_risk": 2.2,  # exposure of each blot (1 direct, 0.4 indirect), times its pips lost / 25
    "race_pips": 0.2,  # in a race: the mover's pips (fewer is better)
    "race_off": 1.0,  # in a race: each checker borne off
}
LOSE_WEIGHTS = {
    "opponent_waiting": -2.0,  # never hit: it keeps the opponent from finishing first
    "blot_invitation": 0.8,  # each blot the opponent can reach, times the pips a hit would cost / 25
    "mover_pips": 0.05,  # keep checkers back
    "outside_home": 0.3,  # each checker out of the home board: no bearing off while one is out
    "mover_off": -1.5,  # each checker borne off
}


def _made_run(made: torch.Tensor) -> torch.Tensor:
    """Longest run of consecutive made points: ``bool[B, 24]`` -> ``int64[B]``, without a Python loop over
    the batch: a run ends at each unmade point, so the run length at p is p minus the last gap at or before p."""
    positions = torch.arange(1, made.shape[1] + 1, device=made.device)
    gaps = torch.where(made, torch.zeros_like(positions), positions).cummax(dim=1).values
    return (positions - gaps).amax(dim=1)


def _exposure(mover: torch.Tensor, opponent: torch.Tensor, opponent_waiting: torch.Tensor) -> torch.Tensor:
    """How exposed each of the mover's points is to the opponent's checkers behind it: ``float32[B, 24]``.

    The opponent moves from its bar (the mover's point 0) up towards 24, so a checker of its on point q
    (or waiting to enter, at 0) can hit a blot on p > q. 1 for a checker within a direct shot, else
    ``INDIRECT_SHOT_WEIGHT`` for one within 12 pips, else 0 (a batched sliding count, no loops)."""
    # hitters[:, q] for q = 0..24: the opponent's checkers on the mover's point q (0: bar and hand).
    hitters = torch.cat((opponent_waiting[:, None], opponent), dim=1).to(torch.float32)
    # Pad 13 zeros before, so window [p - 12, p - 1] of q = 0..24 is a slice for every p = 1..24.
    cumulative = F.pad(hitters, (INDIRECT_REACH + 1, 0)).cumsum(dim=1)
    # cumulative[:, k] = sum of hitters[:, : k - 12]; window sums through point p - 1 start at column p + 12.
    points = torch.arange(1, 25, device=mover.device)
    upto = cumulative[:, points + INDIRECT_REACH]
    direct = upto - cumulative[:, points + INDIRECT_REACH - DIRECT_REACH]
    indirect = upto - cumulative[:, points]
    return torch.where(direct > 0, 1.0, torch.where(indirect > 0, INDIRECT_SHOT_WEIGHT, 0.0))


def heuristic_scores(boards: torch.Tensor, rules: Rules) -> torch.Tensor:
    """The score of each afterstate, higher is better for the side that just moved: ``int8[N, 28]`` ->
    ``float32[N]`` (the board seen by that side, as ``Afterstates.boards`` holds it)."""
    board = boards.to(torch.int64)
    points = board[:, 1:25]
    mover = points.clamp(min=0)
    opponent = (-points).clamp(min=0)
    opponent_waiting = -(board[:, OPPONENT_BAR] + board[:, OPPONENT_IN_HAND])
    mover_pips, opponent_pips = pip_counts(boards)
    mover_off, _ = borne_off(boards, rules.checkers_per_side)
    exposure = _exposure(mover, opponent, opponent_waiting)
    blots = (mover == 1).to(torch.float32)
    # A checker hit on the mover's point p goes back to 25: it loses 25 - p pips.
    hit_cost = (25 - torch.arange(1, 25, device=boards.device, dtype=torch.float32)) / 25.0
    exposed_blots = (blots * exposure * hit_cost).sum(dim=1)

    if rules.first_off_loses:
        weights = LOSE_WEIGHTS
        outside_home = mover[:, 6:].sum(dim=1) + board[:, MOVER_BAR] + board[:, MOVER_IN_HAND]
        return (weights["opponent_waiting"] * opponent_waiting + weights["blot_invitation"] * exposed_blots
                + weights["mover_pips"] * mover_pips + weights["outside_home"] * outside_home
                + weights["mover_off"] * mover_off).to(torch.float32)

    weights = WIN_WEIGHTS
    made = mover >= 2
    contact = (weights["opponent_waiting"] * opponent_waiting
               + weights["pip_lead"] * (opponent_pips - mover_pips)
               + weights["home_point"] * made[:, :6].sum(dim=1)
               + weights["bar_point"] * made[:, 6]
               + weights["outer_point"] * made[:, 7:].sum(dim=1)
               + weights["prime"] * (_made_run(made) - 1).clamp(min=0)
               - weights["blot_risk"] * exposed_blots)
    race = -weights["race_pips"] * mover_pips + weights["race_off"] * mover_off
    return torch.where(is_race(boards), race, contact).to(torch.float32)


class HeuristicAgent:
    """Plays the afterstate of highest ``heuristic_scores`` under its rules (the first on ties)."""

    def __init__(self, rules: Rules) -> None:
        self.name = "heuristic"
        self.rules = rules

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        return argmax_per_position(heuristic_scores(afterstates.boards, self.rules), afterstates)
