"""Rules settings, kept apart from the state: a frozen object passed beside it.

The standard game and its variants differ only in data here (start position, checkers entering
from off the board, what may be hit, the acey-deucey roll, scoring); the move generator and the
game loop read these fields. The named variants are in ``engine.variants``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.board import BOARD_WIDTH, MOVER_IN_HAND, OPPONENT_IN_HAND, flip_board

STANDARD_START = ((24, 2), (13, 5), (8, 3), (6, 5))

SCORINGS = ("standard", "checkers_left")


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
    backgammons: bool = True  # triple with one on the bar, in hand or in the winner's home board

    # Dutch backgammon: "all checkers start off the board and must all be entered into the
    # opponent's home board before any checker may move on". False (acey-deucey): "entered checkers
    # may move before all are in". Checkers on the bar must enter first either way.
    hand_enters_first: bool = True

    # Dutch backgammon: "a player may not hit until at least one of his own checkers has reached his
    # home board". Read by the state: a move may land on an opposing blot only while the mover has a
    # checker on his points 1..6 or has borne one off (a checker that got home and was hit since no
    # longer counts). Within a turn, a move that brings a checker home allows the later moves to hit.
    hit_needs_home_checker: bool = False

    # Acey-deucey: "a roll of 1-2: play the 1 and the 2, then choose any double and play it as four
    # moves, then roll again; if the 1 and 2 cannot both be played the turn ends at once, and if the
    # chosen double cannot be played in full the extra roll is lost." The 1-2 is played under the usual
    # dice-usage rule, the chosen double as far as it can be played; an afterstate whose double was
    # played in full carries ``extra_roll`` (see ``engine.movegen``), and the same side rolls again.
    # Every 2-1 is such a roll, the opening roll's included.
    acey_deucey: bool = False

    # Play to lose ("deadgammon"): "the first player to bear off all checkers loses".
    first_off_loses: bool = False

    # How a finished game is paid. "standard": 1 point, 2 for a gammon and 3 for a backgammon where the
    # flags above allow them. "checkers_left" (acey-deucey): "the loser pays the stake times the number
    # of checkers he still has on the board", read as every checker he has not borne off (on points,
    # on the bar or still in hand).
    scoring: str = "standard"

    # Whether the doubling cube is used (acey-deucey: "no doubling cube"). The engine never reads it;
    # cube logic does.
    cube: bool = True

    def __post_init__(self) -> None:
        for point, count in self.start_points:
            if not 1 <= point <= 24 or count <= 0:
                raise ValueError(f"rules {self.name!r}: bad start entry (point {point}, checkers {count})")
        if self.start_in_hand < 0:
            raise ValueError(f"rules {self.name!r}: start_in_hand must be >= 0")
        if self.checkers_per_side <= 0 or self.checkers_per_side > 15:
            raise ValueError(f"rules {self.name!r}: 1 to 15 checkers a side, not {self.checkers_per_side}")
        if self.scoring not in SCORINGS:
            raise ValueError(f"rules {self.name!r}: scoring {self.scoring!r} is not one of {SCORINGS}")
        if self.gammons and (self.scoring != "standard" or self.first_off_loses):
            # Who would win the gammon is undefined there: set gammons (and backgammons) to False.
            raise ValueError(f"rules {self.name!r}: gammons need standard scoring, and not play-to-lose")

    @property
    def checkers_per_side(self) -> int:
        return sum(count for _, count in self.start_points) + self.start_in_hand

    @property
    def max_points(self) -> int:
        """The most points one game can be worth under these rules."""
        if self.scoring == "checkers_left":
            return self.checkers_per_side
        return 1 + self.gammons + (self.gammons and self.backgammons)

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
