"""Where one agent's plays gain or lose against another's: an agent that plays as ``base`` except in
one kind of position, where it plays as ``substitute``.

Played against an opponent on the same dice as ``base`` alone, the difference in points per game is
what ``base`` would gain by playing ``substitute``'s moves in that kind of position and nowhere else
(``scripts/strength_by_kind.py``). With the opponent as the substitute it says where a bot loses to
that opponent: a positive difference is a kind of position where the opponent plays better.

The kinds (``POSITION_GROUPS``) are read from the position before the move, from the mover's side:
GNU Backgammon's classes (``engine.position_kinds``: contact, crashed, race, the race including the
bear-off) and, within contact, the opening, checkers on the bar, and the race standing.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from bgtrain.arena.agents import Agent
from engine.board import MOVER_BAR, OPPONENT_BAR, pip_counts
from engine.movegen import Afterstates
from engine.position_kinds import PositionKind, position_phases
from engine.state import State

OPENING_TURNS = 6  # the first three moves of each side
RACE_LEAD = 25  # pips: a side this far ahead in the race plays a holding or priming game, not an even one


def _phase(kind: PositionKind) -> Callable[[State], torch.Tensor]:
    return lambda state: position_phases(state.board) == int(kind)


def _contact_and(rule: Callable[[State], torch.Tensor]) -> Callable[[State], torch.Tensor]:
    return lambda state: (position_phases(state.board) == int(PositionKind.CONTACT)) & rule(state)


def _race_lead(state: State) -> torch.Tensor:
    """The mover's lead in the race, in pips (negative when behind): ``int64[B]``."""
    mover, opponent = pip_counts(state.board)
    return opponent.long() - mover.long()


POSITION_GROUPS: dict[str, Callable[[State], torch.Tensor]] = {
    "everywhere": lambda state: torch.ones(state.batch_size, dtype=torch.bool, device=state.device),
    "contact": _phase(PositionKind.CONTACT),
    "crashed": _phase(PositionKind.CRASHED),
    "race": _phase(PositionKind.RACE),
    "contact-opening": _contact_and(lambda state: state.turn < OPENING_TURNS),
    "contact-bar": _contact_and(lambda state: (state.board[:, MOVER_BAR] > 0) | (state.board[:, OPPONENT_BAR] < 0)),
    "contact-ahead": _contact_and(lambda state: _race_lead(state) > RACE_LEAD),
    "contact-even": _contact_and(lambda state: _race_lead(state).abs() <= RACE_LEAD),
    "contact-behind": _contact_and(lambda state: _race_lead(state) < -RACE_LEAD),
}


def group_named(name: str) -> Callable[[State], torch.Tensor]:
    """The rule of a group of ``POSITION_GROUPS``, or a ValueError listing them."""
    if name not in POSITION_GROUPS:
        raise ValueError(f"unknown kind of position {name!r}: one of {', '.join(POSITION_GROUPS)}")
    return POSITION_GROUPS[name]


def positions_part(afterstates: Afterstates, index: torch.Tensor) -> Afterstates:
    """The afterstates of the positions ``index: int64[K]`` (increasing), renumbered 0..K-1."""
    taken = torch.zeros(afterstates.counts.shape[0], dtype=torch.bool, device=index.device)
    taken[index] = True
    rows = taken[afterstates.position]
    counts = afterstates.counts[index]
    renumber = torch.cumsum(taken.long(), 0) - 1
    return Afterstates(
        boards=afterstates.boards[rows],
        position=renumber[afterstates.position[rows]],
        counts=counts,
        offsets=torch.cumsum(counts, 0) - counts,
        dice_used=afterstates.dice_used[rows],
        extra_roll=afterstates.extra_roll[rows],
    )


class SubstitutedAgent:
    """Plays as ``base``, except where ``group`` holds and the roll leaves a choice: there as
    ``substitute``, which is asked about those positions only (a slow substitute such as GNU Backgammon
    costs only its share). ``substituted`` counts the decisions it handed over."""

    def __init__(self, base: Agent, substitute: Agent, group: str) -> None:
        self.base, self.substitute, self.group = base, substitute, group
        self.rule = group_named(group)
        self.name = f"{base.name} with {substitute.name} in {group}"
        self.substituted = 0

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        choice = self.base.choose(state, afterstates)
        index = (self.rule(state) & (afterstates.counts > 1)).nonzero(as_tuple=True)[0]
        if index.numel():
            self.substituted += index.numel()
            choice[index] = self.substitute.choose(state.select(index), positions_part(afterstates, index))
        return choice
