"""The kinds of position, with one numbering for every reader: GNU Backgammon's classes (``eval.c``
``ClassifyPosition``), which decide the network of a phase model, the class of a benchmark decision,
the kinds a dataset holds and the cube efficiency of a position.

``PositionKind`` is the numbering (it is stored in dataset shards). ``PHASES`` are the kinds a network is
asked about, in the order phase models, datasets and the benchmark list them: a bear-off is valued as a
race (the evaluator answers most from its databases), a finished game is no decision.
"""

from __future__ import annotations

from enum import IntEnum

import torch

from engine.board import (
    MOVER_BAR,
    MOVER_IN_HAND,
    OPPONENT_BAR,
    OPPONENT_IN_HAND,
    mover_checkers_on_board,
    opponent_checkers_on_board,
)
from engine.position_facts import all_home, is_race, mover_finished, opponent_finished


class PositionKind(IntEnum):
    """GNU Backgammon's kinds of position (``ClassifyPosition``), from the end of the game up."""

    OVER = 0  # the game is over
    BEAROFF = 1  # no contact, every checker of both sides in its home board (or borne off)
    RACE = 2  # no contact
    CRASHED = 3  # contact, and a side has at most about six checkers left in play
    CONTACT = 4


PHASES = (PositionKind.CONTACT, PositionKind.CRASHED, PositionKind.RACE)
PHASE_NAMES = tuple(kind.name.lower() for kind in PHASES)  # "contact", "crashed", "race"


def kind_named(name: str, choices: tuple[str, ...] = PHASE_NAMES) -> PositionKind:
    """The kind called ``name`` (lower case) among ``choices``; a ValueError naming the choices."""
    if name not in choices:
        raise ValueError(f"unknown kind of position {name!r}: one of {', '.join(choices)}")
    return PositionKind[name.upper()]


def crashed(total: torch.Tensor, ace: torch.Tensor, deuce: torch.Tensor) -> torch.Tensor:
    """GNU Backgammon's crashed rule for one side, given its checkers left in play (``total``) and on its
    ace and deuce points (``ace``, ``deuce``, >= 0): at most 6 checkers in play, or at most 6 besides a
    stack (more than one checker) on the ace point and, if the deuce point also holds more than one,
    besides those too. Any numeric dtype, so the exportable phase routing uses it on floats."""
    stacked = (ace > 1) & ((total <= 6 + ace) | ((deuce > 1) & (1 + total - (ace + deuce) <= 6)))
    unstacked = (ace <= 1) & (total <= 6 + (deuce - 1))
    return (total <= 6) | stacked | unstacked


def position_kinds(board: torch.Tensor) -> torch.Tensor:
    """``board: int8[B, 28]`` -> ``int64[B]`` of ``PositionKind``."""
    b = board.to(torch.int64)
    mover_total, opponent_total = mover_checkers_on_board(b), opponent_checkers_on_board(b)
    race = is_race(board)
    mover_home, opponent_home = all_home(board)
    crash = crashed(mover_total, b[:, 1].clamp(min=0), b[:, 2].clamp(min=0))
    crash |= crashed(opponent_total, (-b[:, 24]).clamp(min=0), (-b[:, 23]).clamp(min=0))
    kinds = torch.full_like(mover_total, int(PositionKind.CONTACT))
    kinds = torch.where(crash, int(PositionKind.CRASHED), kinds)
    kinds = torch.where(race, int(PositionKind.RACE), kinds)
    kinds = torch.where(race & mover_home & opponent_home, int(PositionKind.BEAROFF), kinds)
    kinds = torch.where(mover_finished(board) | opponent_finished(board), int(PositionKind.OVER), kinds)
    return kinds


def phase_kinds(kinds: torch.Tensor) -> torch.Tensor:
    """``PositionKind`` codes with a bear-off counted as a race (``int64[B]``); OVER stays OVER."""
    return torch.where(kinds == PositionKind.BEAROFF, int(PositionKind.RACE), kinds)


def position_phases(board: torch.Tensor) -> torch.Tensor:
    """The phase of each position as a ``PositionKind`` (CONTACT, CRASHED or RACE; a bear-off is a race,
    a finished game counts as contact): ``int8[B, 28]`` -> ``int64[B]``. Equal to ``phase_kinds(
    position_kinds(board))`` with OVER as CONTACT, but written in exportable operations (float
    reductions over points, comparisons), so an exported phase model routes by the same function."""
    b = board.to(torch.float32)
    points = b[:, 1:25]
    numbers = torch.arange(1, 25, device=board.device, dtype=torch.float32)
    mover_waiting = (torch.relu(b[:, MOVER_BAR]) + torch.relu(b[:, MOVER_IN_HAND])) > 0
    opponent_waiting = (torch.relu(-b[:, OPPONENT_BAR]) + torch.relu(-b[:, OPPONENT_IN_HAND])) > 0
    mover_back = ((points > 0) * numbers).amax(1)
    opponent_front = 25.0 - ((points < 0) * (25.0 - numbers)).amax(1)
    race = (mover_back < opponent_front) & ~mover_waiting & ~opponent_waiting
    mover_total = torch.relu(b[:, 1:26]).sum(1)
    opponent_total = torch.relu(-b[:, 0:25]).sum(1)
    crash = crashed(mover_total, torch.relu(b[:, 1]), torch.relu(b[:, 2]))
    crash = crash | crashed(opponent_total, torch.relu(-b[:, 24]), torch.relu(-b[:, 23]))
    over = (mover_total == 0) | (opponent_total == 0)
    contact, crashed_kind, race_kind = (int(kind) for kind in PHASES)
    phase = torch.where(race, race_kind, torch.where(crash, crashed_kind, contact))
    return torch.where(over, contact, phase).to(torch.int64)


def phase_positions(kinds: torch.Tensor) -> torch.Tensor:
    """Where each kind stands in ``PHASES`` (``int64[B]``: 0 contact, 1 crashed, 2 race, a bear-off as a
    race, -1 for a finished game): the index of per-phase arrays and of the benchmark file's column."""
    table = torch.full((len(PositionKind),), -1, dtype=torch.int64, device=kinds.device)
    for position, kind in enumerate(PHASES):
        table[kind] = position
    table[PositionKind.BEAROFF] = PHASES.index(PositionKind.RACE)
    return table[kinds.long()]
