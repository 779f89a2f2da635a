"""The one-sided bear-off database: ranking, hand-computed cases, a scalar brute force, two-sided use."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import pytest
import torch
from helpers import bearoff_board, roll_weight

from bgtrain.outcomes import LOSE_BACKGAMMON, LOSE_GAMMON, WIN, WIN_BACKGAMMON, WIN_GAMMON
from bgtrain.values.bearoff import (
    BearoffDatabase,
    all_positions,
    build_bearoff_database,
    load_bearoff_database,
    position_count,
    rank,
)
from engine.dice import ALL_ROLLS
from engine.reference import reference_afterstates
from engine.rules import STANDARD, Rules

SMALL = 4  # checkers in the databases built by the fast tests: C(10, 6) = 210 positions
THREE_CHECKERS = Rules(name="three-checkers", start_points=((24, 1), (13, 1), (6, 1)))





@pytest.fixture(scope="module")
def database() -> BearoffDatabase:
    return build_bearoff_database(SMALL)


def home(*points: int) -> torch.Tensor:
    """A home board with one checker on each of ``points`` (repeat a point for more)."""
    counts = torch.zeros(6, dtype=torch.int64)
    for point in points:
        counts[point - 1] += 1
    return counts


# --- ranking -------------------------------------------------------------------------------------


def test_rank_is_a_bijection_onto_the_positions():
    positions = all_positions(15)
    assert positions.shape == (54264, 6) == (position_count(15), 6)
    assert torch.equal(rank(positions), torch.arange(54264))
    assert int(positions.sum(1).max()) == 15 and int(positions.min()) == 0
    assert len({tuple(row) for row in positions.tolist()}) == 54264
    # A smaller database is a prefix of the larger one: the ranking does not depend on its size.
    assert torch.equal(all_positions(SMALL), positions[: position_count(SMALL)])


# --- one side, by hand ------------------------------------------------------------------------------


def test_one_checker_by_hand(database):
    # A lone checker on point p is off in one roll unless the roll's pips fall short; a non-double
    # whose larger die is below p but whose sum reaches p still bears off (the checker lands on a point
    # first and is borne off from there, the highest point, with the other die).
    # Misses on the 6-point: 1-1, 2-1, 3-1, 4-1, 3-2 = 9/36; on the 5-point: 1-1, 2-1, 3-1 = 5/36;
    # on the 4-point: 2-1 = 2/36 (1-1 moves four pips). After a miss the next roll always finishes.
    for point, misses in ((1, 0), (2, 0), (3, 0), (4, 2), (5, 5), (6, 9)):
        expected = [0.0, 1 - misses / 36, misses / 36]
        row = database.rolls_off[rank(home(point))]
        assert row[:3].tolist() == pytest.approx(expected, abs=1e-12), point
        assert float(row[3:].sum()) == 0.0
        assert float(database.expected_rolls(home(point))) == pytest.approx(1 + misses / 36, abs=1e-12)


def test_six_and_five_points_in_one_roll(database):
    # Checkers on the 6- and 5-points are both off in one roll with 6-5 (2/36), 6-6, 5-5, 4-4 or 3-3
    # (1/36 each): 5-5 plays 6/1 5/off 1/off, 4-4 plays 6/2 5/1 2/off 1/off, 3-3 plays 6/3/off 5/2/off.
    assert float(database.rolls_off[rank(home(6, 5)), 1]) == pytest.approx(6 / 36, abs=1e-12)


def test_checkers_on_the_one_point_follow_the_recursion():
    # n checkers on the 1-point: two come off with a non-double, four with a double.
    database = build_bearoff_database(6)

    @functools.cache
    def expected(n: int) -> Fraction:
        if n <= 0:
            return Fraction(0)
        return 1 + Fraction(30, 36) * expected(n - 2) + Fraction(6, 36) * expected(n - 4)

    for n in range(1, 7):
        assert float(database.expected_rolls(torch.tensor([n, 0, 0, 0, 0, 0]))) == pytest.approx(
            float(expected(n)), abs=1e-12
        )


# --- one side, against a scalar brute force ----------------------------------------------------------


def brute_force(max_checkers: int):
    """Expected rolls (minimised) and P(done in one roll) of every position, by scalar recursion over the
    reference move generator, with exact fractions."""

    @functools.cache
    def expected(position: tuple[int, ...]) -> Fraction:
        if sum(position) == 0:
            return Fraction(0)
        total = Fraction(1)
        for roll in ALL_ROLLS:
            total += roll_weight(roll) * min(expected(after) for after in afterstates(position, roll))
        return total

    @functools.cache
    def afterstates(position: tuple[int, ...], roll: tuple[int, int]) -> list[tuple[int, ...]]:
        board = [0] * 28
        board[1:7] = position
        return [tuple(after[1:7]) for after in reference_afterstates(board, roll)]

    def one_roll(position: tuple[int, ...]) -> Fraction:
        return sum((roll_weight(roll) for roll in ALL_ROLLS if any(sum(a) == 0 for a in afterstates(position, roll))),
                   Fraction(0))

    return expected, one_roll


def test_expected_rolls_match_a_scalar_brute_force(database):
    expected, one_roll = brute_force(SMALL)
    positions = all_positions(3)  # every position of up to 3 checkers (84)
    ours = database.expected_rolls(positions).tolist()
    for position, value in zip(positions.tolist(), ours):
        assert value == pytest.approx(float(expected(tuple(position))), abs=1e-12), position
    # P(all off in one roll) does not depend on the strategy: a roll that can finish does.
    for position in ([0, 0, 0, 2, 1, 1], [1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 4], [2, 0, 0, 0, 0, 2]):
        row = database.rolls_off[rank(torch.tensor(position))]
        assert float(row[1]) == pytest.approx(float(one_roll(tuple(position))), abs=1e-12)
        assert float(database.expected_rolls(torch.tensor(position))) == pytest.approx(
            float(expected(tuple(position))), abs=1e-12)


def test_distributions_are_probability_vectors(database):
    for table in (database.rolls_off, database.rolls_first_off):
        assert float(table.min()) >= 0.0
        assert torch.allclose(table.sum(1), torch.ones(table.shape[0], dtype=table.dtype))
    # Every non-empty position needs at least one roll; the first checker comes off no later than the last.
    nonempty = all_positions(SMALL).sum(1) > 0
    assert float(database.rolls_off[nonempty, 0].max()) == 0.0
    steps = torch.arange(database.rolls_off.shape[1], dtype=torch.float64)
    first_steps = torch.arange(database.rolls_first_off.shape[1], dtype=torch.float64)
    mean_all = (database.rolls_off * steps).sum(1)
    mean_first = (database.rolls_first_off * first_steps).sum(1)
    assert bool((mean_first[nonempty] <= mean_all[nonempty] + 1e-12).all())


# --- two sides ----------------------------------------------------------------------------------------


def test_covers_only_bearoff_positions(database):
    covered = [bearoff_board((6, 5), (1,)), bearoff_board((1,), (6, 6, 6, 6))]
    boards = [*covered]
    contact = bearoff_board((6,), (1,))
    contact[7] = 1  # a mover's checker outside its home board
    boards.append(contact)
    on_bar = bearoff_board((6,), (1,))
    on_bar[0] = -1  # an opponent's checker on the bar
    boards.append(on_bar)
    boards.append(bearoff_board((1, 2, 3, 4, 5), (1,)))  # more checkers than the small database holds
    boards.append(bearoff_board((), (1,)))  # the mover has borne off everything: not a position before a roll
    assert database.covers(torch.stack(boards)).tolist() == [True, True, False, False, False, False]


def test_two_sided_win_probabilities_by_hand(database):
    boards = torch.stack([
        bearoff_board((1,), (6, 6)),  # the mover is off at once
        bearoff_board((6,), (6,)),  # 27/36 at once, else the opponent misses with 9/36 and the mover finishes
        bearoff_board((6, 5), (1,)),  # the mover must finish now: 6/36
        bearoff_board((2,), (1,)),
    ])
    probs = database.outcomes(boards, STANDARD)
    expected_win = [1.0, 27 / 36 + (9 / 36) ** 2, 6 / 36, 1.0]
    assert probs[:, WIN].tolist() == pytest.approx(expected_win, abs=1e-6)
    # Both sides have borne off checkers: no gammons, and never a backgammon in a bear-off.
    assert float(probs[:, [WIN_GAMMON, LOSE_GAMMON, WIN_BACKGAMMON, LOSE_BACKGAMMON]].abs().max()) == 0.0


def test_gammon_chances_from_the_first_checker_off():
    # Three checkers a side: the opponent has borne off none of its three (on its 6-point), the mover
    # has one checker left on its 6-point. The mover wins a gammon when it finishes before the opponent
    # bears off a checker. The opponent's first checker comes off in one roll with any 6 (11/36), 5-1 or
    # 4-2 (4/36), or 2-2, 3-3, 4-4, 5-5 (4/36; 4-4 plays 6/2(3) 2/off, 5-5 6/1(3) 1/off): 19/36. Other
    # rolls cannot, as a larger die may only bear off from the highest point, which stays the 6-point.
    database = build_bearoff_database(3)
    board = bearoff_board((6,), (6, 6, 6)).unsqueeze(0)
    probs = database.outcomes(board, THREE_CHECKERS)[0]
    win_gammon = 27 / 36 + (9 / 36) * (17 / 36)
    # The opponent wins only when the mover misses (9/36) and it then rolls 6-6 (1/36), its one way to
    # bear off three checkers from its 6-point in one roll.
    assert float(probs[WIN]) == pytest.approx(1 - (9 / 36) * (1 / 36), abs=1e-6)
    assert float(probs[WIN_GAMMON]) == pytest.approx(win_gammon, abs=1e-6)
    assert float(probs[LOSE_GAMMON]) == 0.0  # the mover has borne off two
    first_off = database.rolls_first_off[rank(home(6, 6, 6))]
    assert float(first_off[1]) == pytest.approx(19 / 36, abs=1e-12)
    # Seen from the other side (the opponent to move, it never wins a gammon): it loses one when the
    # lone checker is off (27/36 in one roll, surely in two) before its own first checker.
    flipped = database.outcomes(bearoff_board((6, 6, 6), (6,)).unsqueeze(0), THREE_CHECKERS)[0]
    assert float(flipped[WIN_GAMMON]) == 0.0
    lose_gammon = 27 / 36 * (17 / 36) + 9 / 36 * float(first_off[3:].sum())
    assert float(flipped[LOSE_GAMMON]) == pytest.approx(lose_gammon, abs=1e-6)
    finishes = database.rolls_off[rank(home(6, 6, 6))]
    assert float(finishes[1]) == pytest.approx(1 / 36, abs=1e-12)
    assert float(flipped[WIN]) == pytest.approx(1 / 36 + float(finishes[2]) * 9 / 36, abs=1e-6)


def test_gammons_need_rules_with_gammons(database):
    no_gammons = Rules(name="no-gammons", start_points=((24, 1), (13, 1), (6, 1)), gammons=False)
    probs = database.outcomes(bearoff_board((6,), (6, 6, 6)).unsqueeze(0), no_gammons)
    assert float(probs[0, WIN_GAMMON]) == 0.0


def test_save_and_load_round_trip(tmp_path, database):
    path = database.save(tmp_path / "bearoff.pt")
    loaded = BearoffDatabase.load(path)
    assert loaded.max_checkers == SMALL
    assert torch.allclose(loaded.rolls_off, database.rolls_off, atol=1e-7)
    assert torch.allclose(loaded.rolls_first_off, database.rolls_first_off, atol=1e-7)
    # load_bearoff_database reads an existing file without building anything.
    assert load_bearoff_database(path, build=True).max_checkers == SMALL
    with pytest.raises(FileNotFoundError):
        load_bearoff_database(tmp_path / "missing.pt", build=False)
    (tmp_path / "junk.pt").write_text("not a database")
    with pytest.raises(ValueError, match="not a readable bear-off database"):
        BearoffDatabase.load(tmp_path / "junk.pt")


@pytest.mark.slow
def test_full_database():
    database = build_bearoff_database()
    assert database.rolls_off.shape[0] == math.comb(21, 6)
    # Fifteen checkers on the 1-point: the same recursion as above.
    @functools.cache
    def expected(n: int) -> Fraction:
        if n <= 0:
            return Fraction(0)
        return 1 + Fraction(30, 36) * expected(n - 2) + Fraction(6, 36) * expected(n - 4)

    assert float(database.expected_rolls(torch.tensor([15, 0, 0, 0, 0, 0]))) == pytest.approx(
        float(expected(15)), abs=1e-9)
    # The smaller database is the same table on its positions.
    small = build_bearoff_database(SMALL)
    rows = position_count(SMALL)
    assert torch.allclose(database.rolls_off[:rows, : small.rolls_off.shape[1]], small.rolls_off)
