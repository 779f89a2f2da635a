"""The ``exact`` agent: perfect cubeless money play of hypergammon from GNU Backgammon's databases.

Each legal afterstate is valued by ``bgtrain.values.hypergammon`` (the opponent's record of the flipped
board, negated: exact cubeless equity with gammons and backgammons) and the best is played, for the
whole batch in one lookup. Ties go to the first afterstate, as ``engine.movegen.argmax_per_position``
breaks them. It plays ``hypergammon1``, ``hypergammon2`` and ``hypergammon`` (1, 2, 3 checkers a side)
and refuses any other variant in one line.
"""

from __future__ import annotations

from pathlib import Path

import torch

from bgtrain.values.hypergammon import afterstate_equities, load_hypergammon_database
from engine.movegen import Afterstates, argmax_per_position
from engine.rules import Rules
from engine.state import State


class ExactHypergammonAgent:
    """``path``: a ``hyperN.bd`` file; None: the default lookup for the variant's checker count
    (``bgtrain.values.hypergammon.default_path``)."""

    def __init__(self, rules: Rules, path: str | Path | None = None, name: str = "exact") -> None:
        self.name = name
        self.rules = rules
        self.database = load_hypergammon_database(path, rules)

    def equities(self, afterstates: Afterstates) -> torch.Tensor:
        """The mover's exact cubeless equity of every afterstate: ``float64[N]``."""
        return afterstate_equities(self.database, afterstates.boards)

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        return argmax_per_position(self.equities(afterstates), afterstates)

    def cube_probabilities(self, board: torch.Tensor) -> torch.Tensor:
        """The exact outcome probabilities of ``board: int8[B, 28]`` for its side to move, before its roll:
        ``float32[B, 5]`` (what ``bgtrain.arena.cube_duel`` doubles and takes on)."""
        return self.database.probabilities(board).float()
