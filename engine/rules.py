"""Rules settings, kept apart from the state: a frozen object passed beside it.

The standard game and its variants differ only in data here (start position, checkers entering
from off the board, scoring); the move generator and the game loop read these fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.board import BOARD_WIDTH, MOVER_IN_HAND, OPPONENT_IN_HAND, flip_board

STANDARD_START = ((24, 2), (13, 5), (8, 3), (6, 5))


@dataclass(frozen=True)
class Rules:
    """One variant of backgammon.

    ``start_points`` lists ``(point, checkers)`` of each side's start position on its own points
    (the same for both sides, as every variant is symmetric); ``start_in_hand`` checkers of each
    side start off the board and enter like checkers on the bar.
    """

    name: str = "backgammon"
    start_points: tuple[tuple[int, int], ...] = STANDARD_START
    start_in_hand: int = 0
    gammons: bool = True  # a loser who has borne off none loses double
    backgammons: bool = True  # ... and triple with a checker on the bar or in the winner's home board

    def __post_init__(self) -> None:
        for point, count in self.start_points:
            if not 1 <= point <= 24 or count <= 0:
                raise ValueError(f"rules {self.name!r}: bad start entry (point {point}, checkers {count})")
        if self.start_in_hand < 0:
            raise ValueError(f"rules {self.name!r}: start_in_hand must be >= 0")
        if self.checkers_per_side <= 0 or self.checkers_per_side > 15:
            raise ValueError(f"rules {self.name!r}: 1 to 15 checkers a side, not {self.checkers_per_side}")

    @property
    def checkers_per_side(self) -> int:
        return sum(count for _, count in self.start_points) + self.start_in_hand

    def start_board(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """The start position from the first mover's side: ``int8[28]``."""
        mover = torch.zeros(BOARD_WIDTH, dtype=torch.int8)
        for point, count in self.start_points:
            mover[point] += count
        mover[MOVER_IN_HAND] = self.start_in_hand
        # The opponent's half is the mover's half seen from the other side.
        board = mover + flip_board(mover)
        assert board[OPPONENT_IN_HAND] == -self.start_in_hand
        return board.to(device)


STANDARD = Rules()
