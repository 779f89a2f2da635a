"""Golden positions: hand-checked move-generation cases with the board drawn, run against every
implementation of the rules (the scalar reference and the batched generator).

Boards are written as drawings, seen from the side to move, and parsed into the board row of
``engine.board``. ``X`` is the mover (travels 24 -> 1 and bears off below 1), ``O`` the opponent;
``X5`` is five of the mover's checkers on that point. Optional last lines give checkers on the bar
(``bar X1 O0``) and, for variants whose checkers start off the board, in hand (``hand X1 O0``):

     13  14  15  16  17  18 | 19  20  21  22  23  24
     X5   .   .   .  O3   . | O5   .   .   .   .  X2
     O5   .   .   .  X3   . | X5   .   .   .   .  O2
     12  11  10   9   8   7 |  6   5   4   3   2   1

Expected afterstates are written with ``moved(board, (from, to), ...)``, which moves one checker per
pair (25 = bar, 26 = hand, 0 = off) and sends a blot it lands on to the bar.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from helpers import board_from_drawing

from engine.board import (
    FLIP_PERMUTATION,
    OPPONENT_BAR,
)
from engine.dice import ALL_ROLLS
from engine.reference import move_checker, reference_afterstates
from engine.rules import STANDARD, Rules

IMPLEMENTATIONS = ["reference", "batched"]

# A variant whose checkers start in hand (index 26), for the entering-from-hand cases.
IN_HAND_RULES = Rules(name="in-hand test", start_points=((6, 13),), start_in_hand=2)


# --- boards as drawings ------------------------------------------------------------------------


def moved(board: tuple[int, ...], *steps: tuple[int, int]) -> tuple[int, ...]:
    """``board`` after moving one mover checker for each ``(from, to)``; a blot landed on is hit."""
    after = list(board)
    for source, target in steps:
        assert after[source] > 0 and (target == 0 or after[target] >= -1), (source, target)
        move_checker(after, source, target)
    return tuple(after)


def flip(board: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(-board[index] for index in FLIP_PERMUTATION)


START = board_from_drawing(
    """
     13  14  15  16  17  18 | 19  20  21  22  23  24
     X5   .   .   .  O3   . | O5   .   .   .   .  X2
     O5   .   .   .  X3   . | X5   .   .   .   .  O2
     12  11  10   9   8   7 |  6   5   4   3   2   1
    """
)


# --- the implementations under test ------------------------------------------------------------


def afterstates_many(implementation: str, boards: list, rolls: list, rules: Rules = STANDARD) -> list[set]:
    """For each (board, roll), the set of distinct legal afterstates found by ``implementation``."""
    if implementation == "reference":
        return [reference_afterstates(board, roll, rules) for board, roll in zip(boards, rolls)]
    import torch

    from engine.movegen import legal_afterstates  # written separately; imported only when tested

    board_tensor = torch.tensor(boards, dtype=torch.int8)
    dice_tensor = torch.tensor([(max(roll), min(roll)) for roll in rolls], dtype=torch.int8)  # larger first
    result = legal_afterstates(board_tensor, dice_tensor, rules)
    rows = result.boards.tolist()
    positions = result.position.tolist()
    found: list[list[tuple[int, ...]]] = [[] for _ in boards]
    for row, position in zip(rows, positions):
        found[position].append(tuple(row))
    counts = result.counts.tolist()
    for index, rows_of_game in enumerate(found):
        assert len(rows_of_game) == len(set(rows_of_game)), f"game {index}: an afterstate is listed twice"
        assert counts[index] == len(rows_of_game), f"game {index}: counts disagrees with the rows"
    return [set(rows_of_game) for rows_of_game in found]


def afterstates(implementation: str, board: tuple, roll: tuple[int, int], rules: Rules = STANDARD) -> set:
    return afterstates_many(implementation, [board], [roll], rules)[0]


# --- the opening position ----------------------------------------------------------------------

# Distinct afterstates for each roll from the standard start position. 65 -> 7 agrees with the
# move lists in andrewbaine/td-gammon test_b2.py and ichabod801/t_games backgammon_test.py (eight
# move pairs each, two of which, 13/8 8/2 and 13/7 7/2, reach the same position); 66 -> 11 and
# 55 -> 4 are counted by hand below; 31, 44, 65 and 22 match the counts given with the task.
OPENING_COUNTS = {
    (6, 6): 11, (6, 5): 7, (6, 4): 14, (6, 3): 14, (6, 2): 14, (6, 1): 10,
    (5, 5): 4, (5, 4): 9, (5, 3): 9, (5, 2): 8, (5, 1): 8,
    (4, 4): 52, (4, 3): 17, (4, 2): 18, (4, 1): 14,
    (3, 3): 73, (3, 2): 17, (3, 1): 16,
    (2, 2): 75, (2, 1): 15,
    (1, 1): 42,
}  # fmt: skip
OPENING_TOTAL = 447

# Perft(2): over the 406 distinct positions one play after the start (any of the 21 rolls, seen
# from the next side to move), the total of distinct afterstates over all 21 rolls.
PERFT_2_POSITIONS = 406
PERFT_2_TOTAL = 183632


def test_start_drawing_is_the_standard_start():
    assert START == tuple(STANDARD.start_board().tolist())


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_opening_counts(implementation):
    assert sorted(OPENING_COUNTS) == sorted(ALL_ROLLS)
    assert sum(OPENING_COUNTS.values()) == OPENING_TOTAL
    found = afterstates_many(implementation, [START] * 21, ALL_ROLLS)
    counts = {roll: len(states) for roll, states in zip(ALL_ROLLS, found)}
    assert counts == OPENING_COUNTS


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_opening_65_exact(implementation):
    # Sixes: 24/18, 13/7, 8/2 (6/off is not allowed); fives: 13/8, 8/3 (24/19 and 6/1 are closed).
    assert afterstates(implementation, START, (6, 5)) == {
        moved(START, (24, 18), (18, 13)),
        moved(START, (24, 18), (13, 8)),
        moved(START, (24, 18), (8, 3)),
        moved(START, (13, 7), (13, 8)),
        moved(START, (13, 7), (8, 3)),
        moved(START, (13, 7), (7, 2)),  # the same position as 13/8 8/2
        moved(START, (8, 2), (8, 3)),
    }


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_opening_55_exact(implementation):
    # Only 13/8 and 8/3 can be played; at least one 13/8 since only three checkers stand on 8.
    assert afterstates(implementation, START, (5, 5)) == {
        moved(START, (13, 8), (8, 3), (8, 3), (8, 3)),
        moved(START, (13, 8), (13, 8), (8, 3), (8, 3)),
        moved(START, (13, 8), (13, 8), (13, 8), (8, 3)),
        moved(START, (13, 8), (13, 8), (13, 8), (13, 8)),
    }


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_opening_66_count_by_hand(implementation):
    # Sixes are 24/18 (at most 2), 13/7 (at most 5) and 8/2 (at most 3); 18/12 and 7/1 are closed.
    # Four of them: C(6, 2) = 15 multisets, minus 3 with three or four 24/18, minus four 8/2.
    assert len(afterstates(implementation, START, (6, 6))) == 15 - 3 - 1 == OPENING_COUNTS[(6, 6)]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_perft_2(implementation):
    first = afterstates_many(implementation, [START] * 21, ALL_ROLLS)
    layer = sorted({flip(state) for states in first for state in states})
    assert len(layer) == PERFT_2_POSITIONS
    boards = [board for board in layer for _ in ALL_ROLLS]
    rolls = [roll for _ in layer for roll in ALL_ROLLS]
    assert sum(len(states) for states in afterstates_many(implementation, boards, rolls)) == PERFT_2_TOTAL


# --- hand-checked cases ------------------------------------------------------------------------


@dataclass(frozen=True)
class Golden:
    name: str
    drawing: str
    dice: tuple[int, int]
    count: int
    expected: tuple[tuple[tuple[int, int], ...], ...] | None = None  # the afterstates as moved() steps
    rules: Rules = STANDARD

    @property
    def board(self) -> tuple[int, ...]:
        return board_from_drawing(self.drawing)


GOLDEN = [
    Golden(
        # Entering: the 3 is closed (22), the 5 enters on 20 hitting, then the 3 is played.
        "bar entry with a hit",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         O5   .   .   .   .   . |  .  O1   .  O2   .   .
          .   .   .   .  O3   . | X2   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X1 O0
        """,
        (5, 3),
        2,
        (((25, 20), (20, 17)), ((25, 20), (6, 3))),
    ),
    Golden(
        # Every entry point (19..24) is closed: no move, the position is unchanged.
        "full dance",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X3   .   .   .   .   . | O2  O2  O2  O2  O2  O2
          .   .   .   .  O3   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X2 O0
        """,
        (4, 2),
        1,
        ((),),
    ),
    Golden(
        "full dance with doubles",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X3   .   .   .   .   . | O2  O2  O2  O2  O2  O2
          .   .   .   .  O3   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X2 O0
        """,
        (6, 6),
        1,
        ((),),
    ),
    Golden(
        # Two on the bar, only the 5 enters; the other checker stays, so nothing else may move.
        "two on the bar, one enters",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X2   .   .   .   .   . |  .   .   .  O2   .   .
          .   .   .   .  O5   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X2 O0
        """,
        (5, 3),
        1,
        (((25, 20),),),
    ),
    Golden(
        # Five on the bar with 2-2: four enter on 23, the fifth waits.
        "doubles enter only in part from the bar",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .  O2   .   .   .   .
          .   .   .   .  O5   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X5 O0
        """,
        (2, 2),
        1,
        (((25, 23), (25, 23), (25, 23), (25, 23)),),
    ),
    Golden(
        # Three enter on 21 with three 4s; the last 4 moves any checker.
        "doubles from the bar, then one more move",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X2   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .   .  O5   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X3 O0
        """,
        (4, 4),
        2,
        (
            ((25, 21), (25, 21), (25, 21), (21, 17)),
            ((25, 21), (25, 21), (25, 21), (13, 9)),
        ),
    ),
    Golden(
        # The 6 bears off from the highest point (5, a larger die); then the 4 bears off the 3
        # (now the highest). Or the 4 first: 5/1, then the 6 bears off the 3.
        "bear-off with a larger die",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .  O3   .   .   .  O2
          .   .   .   .   .   . |  .  X1   .  X1   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (6, 4),
        2,
        (((5, 0), (3, 0)), ((5, 1), (3, 0))),
    ),
    Golden(
        # 9/6 or 9/7 alone, but 9/4 is closed either way: the larger die must be played.
        "only one die playable, the larger one",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .  O3
          .   .   .  X1   .   . |  .   .  O2   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (3, 2),
        1,
        (((9, 6),),),
    ),
    Golden(
        # The 3 is closed (6) and after 9/7 the 3 is closed again (4): only the smaller die plays.
        "only the smaller die playable",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .  X1   .   . | O2   .  O2   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (3, 2),
        1,
        (((9, 7),),),
    ),
    Golden(
        # 9/6 alone plays the 3 but then no 6 can be played (20/14 closed, no bearing off from
        # outside home): every play must use both dice, so 9/3 is forced.
        "must use both dice",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .  O2   .   .   .   . |  .  X1   .   .   .   .
          .  O2   .  X1   .   . | X3   .   .   .   .  O2
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (6, 3),
        2,
        (((9, 3), (20, 17)), ((9, 3), (6, 3))),
    ),
    Golden(
        # 13/9 twice, then 9/5 is closed: only two of the four 4s can be played.
        "a double played only in part",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X2   .   .   .   .   . |  .   .   .   .   .  O2
          .   .   .   .   .   . |  .  O2   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (4, 4),
        1,
        (((13, 9), (13, 9)),),
    ),
    Golden(
        # All home, an opposing blot on 4: 6/4* can hit, 6/5/3 passes without hitting.
        "hits while bearing off",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .  O3
          .   .   .   .   .   . | X1   .  O1  X2   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (2, 1),
        6,
        (
            ((6, 4), (4, 3)),
            ((6, 4), (3, 2)),
            ((6, 5), (5, 3)),
            ((6, 5), (3, 1)),
            ((3, 2), (3, 1)),
            ((3, 2), (2, 0)),
        ),
    ),
    Golden(
        # The last checker: the 6 alone would bear it off, but 5/4* then 4/off uses both dice, so
        # that play (with its hit, which matters for a backgammon) is the only legal one.
        "both dice must be used even to bear off the last checker",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .  O3   .   .   .  O2
          .   .   .   .   .   . |  .  X1  O1   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (6, 1),
        1,
        (((5, 4), (4, 0)),),
    ),
    Golden(
        # A checker in hand enters like one on the bar (the 5 is closed, so it enters with the 1).
        "entering from hand",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X2   .   .   .   .   . |  .  O2   .   .   .   .
          .   .   .   .   .   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        hand X1 O0
        """,
        (5, 1),
        2,
        (((26, 24), (24, 19)), ((26, 24), (13, 8))),
        IN_HAND_RULES,
    ),
    Golden(
        # Bar first, then hand: the bar checker enters with the 6; the hand checker cannot enter
        # with the 5 and stays in hand (not the other way round).
        "the bar enters before the hand",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X2   .   .   .   .   . |  .  O2   .   .   .   .
          .   .   .   .   .   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X1 O0
        hand X1 O0
        """,
        (6, 5),
        1,
        (((25, 19),),),
        IN_HAND_RULES,
    ),
    # Cases taken from wildbg (carsten-wenderdel/wildbg, crates/engine/src/position/
    # mixed_moves.rs and double_moves.rs, whose `pos!` macro uses this same mover's numbering);
    # the counts and sets agree with the expected positions there.
    Golden(
        "wildbg bearoff_4_or_bearoff_less",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .  O2   .   .
          .   .   .   .   .   . |  .   .  X1  X1  X4   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (2, 2),
        4,
        (
            ((4, 2), (3, 1), (2, 0), (2, 0)),
            ((4, 2), (2, 0), (2, 0), (2, 0)),
            ((3, 1), (2, 0), (2, 0), (2, 0)),
            ((2, 0), (2, 0), (2, 0), (2, 0)),
        ),
    ),
    Golden(
        "wildbg enter_two_and_move_two_out_of_many",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .  O2
          .   .   .   .   .   . |  .   .  X1  X1   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X2 O0
        """,
        (3, 3),
        3,
        (
            ((25, 22), (25, 22), (22, 19), (22, 19)),
            ((25, 22), (25, 22), (22, 19), (19, 16)),
            ((25, 22), (25, 22), (22, 19), (4, 1)),
        ),
    ),
    Golden(
        "wildbg smaller_first_allows_bear_off",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .  O2   .   .   .   .
          .   .   .  X1   .   . |  .  X1   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (5, 3),
        3,
        (((9, 4), (5, 2)), ((9, 4), (4, 1)), ((9, 6), (5, 0))),
    ),
    Golden(
        "wildbg could_bear_off_but_could_do_other_moves_as_well",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .  O1   .   .   .   .
          .   .   .   .   .   . |  .  X2  X3  X1   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (4, 3),
        6,
    ),
    Golden(
        "wildbg forced_smaller_die_first_then_bear_off",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .   .  X1   . |  .   .  X3   .   .  O2
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (4, 3),
        1,
        (((8, 5), (4, 0)),),
    ),
    Golden(
        "wildbg bearoff_with_same_checker_after_moving_small_first",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .  O3 O10
          .   .   .  X1   .   . |  .  X3   .  X2   .  O2
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (6, 4),
        1,
        (((9, 5), (5, 0)),),
    ),
    Golden(
        "wildbg use_smaller_die_from_bigger_pip_case_when_bigger_in_first_quarter",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .  O2   .  O4 | O3  O4   .   .   .  X1
          .   .   .   .  X1   . | X5   .  O2   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (6, 2),
        1,
        (((24, 22), (8, 2)),),
    ),
    Golden(
        "wildbg bear_off_from_same_pip_with_either_big_or_small_die",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .   .   .   . |  .   .   .   .  X1  X5
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (6, 1),
        2,
        (((2, 0), (1, 0)), ((2, 1), (1, 0))),
    ),
    Golden(
        "wildbg only_entering_with_smaller_die_allows_two_checkers_to_move",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .  O2   .   .   .   .
         X1   .  O2   .   .   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X1 O0
        """,
        (3, 2),
        1,
        (((25, 23), (12, 9)),),
    ),
    Golden(
        "wildbg final_position_but_different_move_because_die1_hits_opponent",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .  O1   .   .
          .   .   .   .   .   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X1 O0
        """,
        (3, 2),
        2,
        (((25, 22), (22, 20)), ((25, 23), (23, 20))),
    ),
    Golden(
        "wildbg hits_opponent_when_entering_and_cannot_move_afterwards",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . | O2   .   .  O1   .   .
          .   .   .   .   .   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        bar X2 O0
        """,
        (3, 3),
        1,
        (((25, 22), (25, 22)),),
    ),
]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("case", GOLDEN, ids=[case.name for case in GOLDEN])
def test_golden(case, implementation):
    board = case.board
    found = afterstates(implementation, board, case.dice, case.rules)
    assert len(found) == case.count
    if case.expected is not None:
        assert found == {moved(board, *steps) for steps in case.expected}


@pytest.mark.parametrize("case", GOLDEN, ids=[case.name for case in GOLDEN])
def test_golden_dice_order_does_not_matter(case):
    high, low = case.dice
    board = case.board
    assert reference_afterstates(board, (low, high), case.rules) == reference_afterstates(
        board, (high, low), case.rules
    )


def test_moved_helper_hits_and_bears_off():
    board = board_from_drawing(
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
          .   .   .   .   .   . |  .   .   .   .   .  X1
          .   .   .   .   .   . |  .  O1   .   .   .  X1
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """
    )
    after = moved(board, (24, 5), (1, 0))
    assert after[5] == 1 and after[24] == 0 and after[1] == 0 and after[OPPONENT_BAR] == -1
