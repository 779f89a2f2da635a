"""The cube efficiency of each kind of position (``engine.position_kinds``, GNU Backgammon's classes),
after GNU Backgammon's ``eval.c`` ``EvalEfficiency``. This is where the board meets the cube package,
which otherwise knows only probabilities."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.board import pip_counts
from engine.position_kinds import PositionKind, position_kinds

# ---------------------------------------------------------------------------------------------------
# Cube efficiency


@dataclass(frozen=True)
class CubeEfficiency:
    """Janowski's cube efficiency ``x`` per kind of position, after GNU Backgammon (``eval.c``
    ``EvalEfficiency``).

    Race: ``x = race_coefficient + race_factor * (pip count of the side to move)``, clamped to
    ``[race_min, race_max]``. GNU Backgammon uses exact cubeful bear-off databases instead for small
    two-sided bear-offs in money play (and derives ``x`` from them in match play); here every bear-off
    gets ``bearoff``.

    The defaults are the values of current GNU Backgammon, measured on the ``gnubg`` 1.1.0a16 Python
    package (money and match alike): contact and crashed 0.76; race 0.6 + 0.0025 per pip, from 0.6 to
    0.8 (reached at 80 pips); one-sided bear-off 0.6. ``CLASSIC_EFFICIENCY`` holds the older values that
    GNU Backgammon's manual ("The cube efficiency") and its 1.0x sources (``rContactX`` etc.) give:
    contact and crashed 0.68, race 0.55 + 0.00125 per pip from 0.6 (40 pips) to 0.7 (120 pips).
    """

    contact: float = 0.76
    crashed: float = 0.76
    race_coefficient: float = 0.6
    race_factor: float = 0.0025
    race_min: float = 0.6
    race_max: float = 0.8
    bearoff: float = 0.6
    over: float = 0.0

    def __post_init__(self) -> None:
        for name in ("contact", "crashed", "race_min", "race_max", "bearoff", "over"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"cube efficiency {name} must be in [0, 1], not {getattr(self, name)}")
        if self.race_min > self.race_max:
            raise ValueError("cube efficiency race_min must not exceed race_max")

    def of(self, kind, mover_pips=None) -> torch.Tensor:
        """Efficiencies ``float64[B]`` for ``kind: int[B]`` (``PositionKind`` values) and, for races,
        ``mover_pips: int[B]`` (pip count of the side to move)."""
        kind = torch.as_tensor(kind)
        if mover_pips is None:
            mover_pips = torch.zeros_like(kind)
        pips = torch.as_tensor(mover_pips, device=kind.device).to(torch.float64)
        race = (self.race_coefficient + self.race_factor * pips).clamp(self.race_min, self.race_max)
        table = torch.tensor(
            [self.over, self.bearoff, 0.0, self.crashed, self.contact],
            dtype=torch.float64,
            device=kind.device,
        )
        values = table[kind.long()]
        return torch.where(kind == PositionKind.RACE, race, values)


DEFAULT_EFFICIENCY = CubeEfficiency()
CLASSIC_EFFICIENCY = CubeEfficiency(
    contact=0.68, crashed=0.68, race_coefficient=0.55, race_factor=0.00125, race_min=0.6, race_max=0.7
)



def cube_efficiency(board: torch.Tensor, efficiency: CubeEfficiency = DEFAULT_EFFICIENCY) -> torch.Tensor:
    """Janowski's ``x`` for each position of ``board: int8[B, 28]``: ``float64[B]``."""
    return efficiency.of(position_kinds(board), pip_counts(board)[0])
