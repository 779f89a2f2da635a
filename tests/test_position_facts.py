"""Position facts (``engine.position_facts``) against readable definitions, and the kinds of position
the cube efficiency depends on (``engine.position_kinds.position_kinds``), with the boards drawn."""

from __future__ import annotations

import pytest
import torch
from helpers import board_from_drawing, random_boards

from bgtrain.cube import PositionKind
from bgtrain.cube.efficiency import cube_efficiency
from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND
from engine.dice import ALL_ROLLS, roll_tensor, roll_weights
from engine.position_facts import (
    all_home,
    checkers_back,
    has_borne_off,
    is_race,
    mover_finished,
    opponent_finished,
    point_masks,
)
from engine.position_kinds import position_kinds
from engine.rules import STANDARD


def boards() -> torch.Tensor:
    return torch.cat((random_boards(3000, seed=41), random_boards(1000, seed=42, in_hand=True),
                      random_boards(500, seed=43, race=True)))


def readable_facts(row: list[int]) -> dict[str, object]:
    """The definitions, one position at a time, in plain Python."""
    mover = [max(count, 0) for count in row[1:25]] + [row[MOVER_BAR], row[MOVER_IN_HAND]]
    opponent = [max(-count, 0) for count in row[1:25]] + [-row[OPPONENT_BAR], -row[OPPONENT_IN_HAND]]
    return {
        "mover_finished": sum(mover) == 0,
        "opponent_finished": sum(opponent) == 0,
        "borne_off": (sum(mover) < 15, sum(opponent) < 15),
        # A checker on the bar, in hand or in the other side's home board (the mover's 19..24 is the
        # opponent's home board; the opponent's checkers in the mover's home board are on 1..6).
        "back": (sum(mover[18:]) > 0, sum(opponent[:6]) + opponent[24] + opponent[25] > 0),
        "home": (sum(mover[6:]) == 0, sum(opponent[:18]) + opponent[24] + opponent[25] == 0),
        "mover_occupied": sum(1 << (point - 1) for point in range(1, 25) if row[point] > 0),
        "opponent_made": sum(1 << (point - 1) for point in range(1, 25) if row[point] <= -2),
    }


def test_position_facts_match_their_definitions_on_random_boards():
    board = boards()
    masks = point_masks(board)
    borne = has_borne_off(board, STANDARD.checkers_per_side)
    back, home = checkers_back(board), all_home(board)
    got = {
        "mover_finished": mover_finished(board).tolist(),
        "opponent_finished": opponent_finished(board).tolist(),
        "borne_off": list(zip(borne[0].tolist(), borne[1].tolist())),
        "back": list(zip(back[0].tolist(), back[1].tolist())),
        "home": list(zip(home[0].tolist(), home[1].tolist())),
        "mover_occupied": masks.mover_occupied.tolist(),
        "opponent_made": masks.opponent_made.tolist(),
    }
    for index, row in enumerate(board.tolist()):
        want = readable_facts(row)
        for name, values in got.items():
            assert values[index] == want[name], (name, row)
    # The generator's boards include all of these somewhere.
    assert any(got["borne_off"][i][0] for i in range(len(board))) and any(got["home"][i][0] for i in range(len(board)))


def test_finished_sides_and_the_race():
    start = STANDARD.start_board().unsqueeze(0)
    assert not mover_finished(start) and not opponent_finished(start) and not is_race(start)
    done = start.clamp(max=0)  # the mover has borne everything off
    assert mover_finished(done) and not opponent_finished(done) and is_race(done)


def test_the_21_rolls_and_their_weights():
    assert len(ALL_ROLLS) == len(set(ALL_ROLLS)) == 21 and all(high >= low for high, low in ALL_ROLLS)
    assert roll_tensor().shape == (21, 2) and roll_tensor().dtype == torch.int8
    weights = roll_weights(torch.float64)
    assert float(weights.sum()) == pytest.approx(1.0)
    assert {round(float(w) * 36) for w, roll in zip(weights, ALL_ROLLS) if roll[0] == roll[1]} == {1}


# --- kinds of position ---------------------------------------------------------------------------

KINDS = {
    # The start: contact.
    PositionKind.CONTACT: """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X5   .   .   .  O3   . | O5   .   .   .   .  X2
         O5   .   .   .  X3   . | X5   .   .   .   .  O2
         12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # Crashed: the mover keeps two back checkers but ten sit stacked on its ace point and three on the
    # deuce, so at most six are left in play besides the stacks.
    PositionKind.CRASHED: """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . | O5  X2  O5   .  O3   .
          .   .   .   .   .   . |  .   .   .  O2  X3 X10
         12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # A race: every mover checker is past every opposing one.
    PositionKind.RACE: """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         O5   .   .   .   .  O5 | O5   .   .   .   .   .
         X5   .   .   .   .   . | X5   .   .   .   .  X5
         12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # Both sides bearing off.
    PositionKind.BEAROFF: """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . | O5   .  O5   .   .  O5
          .   .   .   .   .   . | X5  X5   .   .   .  X5
         12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # The opponent has borne off its last checker: the game is over.
    PositionKind.OVER: """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .   .   .   . | X5   .   .   .   .  X5
         12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_position_kind_of_a_drawn_board(kind):
    board = torch.tensor([board_from_drawing(KINDS[kind])], dtype=torch.int8)
    assert position_kinds(board).tolist() == [int(kind)]


def test_checkers_in_hand_are_in_play():
    """Dutch backgammon starts with every checker in hand: a game in progress, not one that is over
    (checkers in hand count as checkers in play, and keep the position a contact one)."""
    board = torch.tensor([board_from_drawing("""
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .   .   .   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
         hand X15 O15
    """)], dtype=torch.int8)
    assert position_kinds(board).tolist() == [int(PositionKind.CONTACT)]
    assert float(cube_efficiency(board)) == pytest.approx(0.76)
