"""Move notation: gnubg-style formatting, and parsing back to the afterstate, both directions."""

from __future__ import annotations

import itertools
import random

import pytest

from engine.board import BOARD_WIDTH, FLIP_PERMUTATION, MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR
from engine.dice import ALL_ROLLS
from engine.notation import NO_MOVE, format_play, parse_play, play_notation
from engine.reference import reference_afterstates, reference_plays
from engine.rules import STANDARD, Rules

START = tuple(STANDARD.start_board().tolist())
IN_HAND_RULES = Rules(name="in-hand test", start_points=((24, 2), (13, 5), (8, 3), (6, 3)), start_in_hand=2)


def position(mover: dict[int, int], opponent: dict[int, int], mover_bar: int = 0) -> tuple[int, ...]:
    """A board from checker counts; the opponent's points are numbered from the mover's side."""
    board = [0] * BOARD_WIDTH
    for point, count in mover.items():
        board[point] = count
    for point, count in opponent.items():
        assert board[point] == 0
        board[point] = -count
    board[MOVER_BAR] = mover_bar
    return tuple(board)


def all_notations(board, dice, rules=STANDARD) -> set[str]:
    return {play_notation(board, after, dice, rules) for after in reference_afterstates(board, dice, rules)}


# --- formatting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "moves, expected",
    [
        ([(8, 5, False), (6, 5, False)], "8/5 6/5"),
        ([(13, 11, True), (24, 18, False)], "24/18 13/11*"),
        ([(25, 22, False)], "bar/22"),
        ([(26, 22, False)], "bar/22"),  # a checker in hand is written like one on the bar
        ([(6, 0, False)], "6/off"),
        ([(6, 4, False), (6, 4, False)], "6/4(2)"),
        ([(6, 4, True), (6, 4, False)], "6/4*(2)"),
        ([(24, 20, False), (20, 16, False)], "24/16"),
        ([(24, 20, True), (20, 16, False)], "24/20*/16"),
        ([(24, 18, True), (18, 13, True)], "24/18*/13*"),
        ([(13, 8, False), (13, 10, False)], "13/10 13/8"),  # same source: higher destination first
        ([(24, 18, False), (24, 19, False)], "24/19 24/18"),
        ([(6, 4, True), (8, 4, False)], "8/4* 6/4"),  # the hit point is marked where first written
        ([(13, 9, False), (9, 5, False), (13, 9, False)], "13/5 13/9"),
        ([(24, 23, False), (23, 22, False), (22, 21, False), (24, 23, False)], "24/21 24/23"),
        ([(25, 21, True), (25, 21, False), (21, 17, True), (24, 20, False)], "bar/21*/17* bar/21 24/20"),
        ([(2, 1, False), (1, 0, False)], "2/off"),
        ([(2, 0, False), (1, 0, False)], "2/off 1/off"),
        ([], NO_MOVE),
    ],
)
def test_format_play(moves, expected):
    assert format_play(moves) == expected
    for permutation in itertools.permutations(moves):
        assert format_play(permutation) == expected


# --- play_notation on positions ----------------------------------------------------------------


def test_opening_plays():
    assert play_notation(START, parse_play(START, "8/5 6/5"), (3, 1)) == "8/5 6/5"
    assert all_notations(START, (6, 5)) == {
        "24/13", "24/18 13/8", "24/18 8/3", "13/8 13/7", "13/7 8/3", "13/2", "8/3 8/2",
    }  # fmt: skip
    assert "24/18 13/11" in all_notations(START, (6, 2))
    assert "13/7(2) 8/2(2)" in all_notations(START, (6, 6))
    assert {"6/4(4)", "8/4(2)"} <= all_notations(START, (2, 2))


# Positions and expected move lists from the legal-moves test (its POSITION_AND_LEGAL_MOVES table)
# of the Perl module Games::Backgammon (gitpan/Games-Backgammon), which wraps gnubg's move generator
# and move formatting. Its opponent's points are numbered from the opponent's side; here they are
# converted to the mover's numbering (25 - point).
@pytest.mark.parametrize(
    "board, dice, expected",
    [
        (position({1: 1, 2: 1}, {}), (1, 2), {"2/off 1/off", "2/off"}),
        (position({1: 1, 2: 1}, {}), (5, 6), {"2/off 1/off"}),
        (position({24: 2}, {}), (1, 1), {"24/20", "24/21 24/23", "24/22(2)"}),
        (position({24: 1}, {18: 1}), (5, 6), {"24/18*/13", "24/13"}),
        (position({24: 1}, {18: 2}), (5, 6), {"24/13"}),
        (position({24: 1}, {18: 2}), (6, 6), {NO_MOVE}),
        (position({}, {19: 1}, mover_bar=1), (5, 6), {"bar/19*/14", "bar/14"}),
        (
            position({6: 1}, {24: 2, 23: 2, 20: 2, 19: 2, 18: 2, 2: 2}, mover_bar=1),
            (3, 4),
            {"bar/21 6/3"},
        ),
    ],
)
def test_positions_from_games_backgammon(board, dice, expected):
    assert all_notations(board, dice) == expected
    for notation in expected:
        assert play_notation(board, parse_play(board, notation, dice=dice), dice) == notation


def test_hits_on_the_way_and_at_the_end():
    board = position({24: 2}, {18: 1, 13: 1, 1: 2})
    assert "24/18*/13*" in all_notations(board, (6, 5))
    board = position({24: 2}, {19: 1, 18: 1, 1: 2})
    assert {"24/19* 24/18*", "24/18*/13", "24/19*/13"} <= all_notations(board, (6, 5))


def test_play_notation_rejects_an_illegal_afterstate():
    with pytest.raises(ValueError, match="not a legal play"):
        play_notation(START, parse_play(START, "13/7 13/8"), (3, 1))


# --- parsing -----------------------------------------------------------------------------------


def test_parse_applies_hits_and_bear_offs():
    board = position({6: 2, 3: 1}, {4: 1, 24: 2})
    after = parse_play(board, "6/4* 3/off", dice=(3, 2))
    assert after[6] == 1 and after[4] == 1 and after[3] == 0 and after[OPPONENT_BAR] == -1


def test_jellyfish_numeric_form():
    """``.mat`` files write the bar as 25, off as 0, one move per die, the hit only where it happens."""
    board = position({13: 4, 6: 5}, {21: 1, 9: 1, 1: 2}, mover_bar=2)
    assert parse_play(board, "25/21* 25/21 13/9* 13/9", dice=(4, 4)) == parse_play(
        board, "bar/21*(2) 13/9*(2)"
    )
    bear_off = position({5: 2, 1: 3}, {24: 2})
    assert parse_play(bear_off, "5/0 5/0", dice=(6, 5)) == parse_play(bear_off, "5/off(2)")
    blot_on_2 = position({8: 3, 6: 5}, {2: 1, 24: 2})
    assert parse_play(blot_on_2, "8/2* 8/2") == parse_play(blot_on_2, "8/2*(2)")
    assert parse_play(blot_on_2, "8/2* 8/2")[OPPONENT_BAR] == -1
    assert parse_play(START, "6/5, 24/20", dice=(4, 1)) == parse_play(START, "24/20 6/5")


def test_parse_resolves_bar_before_hand():
    board = list(IN_HAND_RULES.start_board().tolist())
    board[MOVER_BAR], board[MOVER_IN_HAND] = 1, 1  # of the two in hand, one entered and was hit
    after = parse_play(board, "bar/20", IN_HAND_RULES)
    assert after[MOVER_BAR] == 0 and after[MOVER_IN_HAND] == 1 and after[20] == 1
    after = parse_play(board, "bar/20 bar/22", IN_HAND_RULES, dice=(5, 3))
    assert after[MOVER_BAR] == 0 and after[MOVER_IN_HAND] == 0


def test_no_move():
    dance = position({13: 3}, {19: 2, 20: 2, 21: 2, 22: 2, 23: 2, 24: 2}, mover_bar=1)
    assert play_notation(dance, dance, (6, 6)) == NO_MOVE
    assert parse_play(dance, NO_MOVE, dice=(6, 6)) == dance
    assert parse_play(dance, "", dice=(6, 6)) == dance
    with pytest.raises(ValueError, match="not a legal play"):
        parse_play(START, NO_MOVE, dice=(6, 6))  # a move is possible, so passing is not


@pytest.mark.parametrize(
    "notation, problem",
    [
        ("13-7", "is not a move"),
        ("13/", "is not a move"),
        ("/7", "is not a move"),
        ("bar", "is not a move"),
        ("13/7x", "not a point"),
        ("13/7(5)", "1 to 4 times"),
        ("13/7(0)", "1 to 4 times"),
        ("off/3", "can only end a path"),
        ("13/bar", "only be where a path starts"),
        ("8/off/1", "can only end a path"),
        ("13/27", "not a point"),
        ("12/7", "no checker of the mover on point 12"),
        ("13/19", "from higher to lower points"),
        ("24/19", "point 19 is closed"),
        ("6/off", "bears off while a checker is outside"),
        ("13/7*", r"marks a hit on \[7\]"),
        ("bar/22", "no checker on the bar"),
    ],
)
def test_parse_errors(notation, problem):
    with pytest.raises(ValueError, match=problem):
        parse_play(START, notation)


def test_parse_errors_that_need_the_position_or_the_dice():
    on_bar = position({13: 5, 6: 5}, {19: 2, 1: 2}, mover_bar=1)
    with pytest.raises(ValueError, match="must enter first"):
        parse_play(on_bar, "13/7")
    with pytest.raises(ValueError, match="not a legal play of 6-5"):
        parse_play(START, "13/8", dice=(6, 5))  # a die left unused that could be played
    both_ways_closed = position({24: 1, 6: 5}, {19: 2, 18: 2, 1: 2})
    assert parse_play(both_ways_closed, "24/13")[13] == 1  # without the dice the way is not checked
    with pytest.raises(ValueError, match="not a legal play of 6-5"):
        parse_play(both_ways_closed, "24/13", dice=(6, 5))  # 18 and 19 are both closed
    with pytest.raises(ValueError, match="not a legal play of 5-2"):
        parse_play(START, "13/7 8/7", dice=(5, 2))  # wrong distances


# --- round trips over positions from random play -----------------------------------------------


def flip(board: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(-board[index] for index in FLIP_PERMUTATION)


def random_positions(rules: Rules, games: int, every: int, seed: int) -> list[tuple[int, ...]]:
    """Positions (side to move's view) from random games played with the reference generator."""
    rng = random.Random(seed)
    positions = []
    for _ in range(games):
        board = tuple(rules.start_board().tolist())
        for turn in range(400):
            if turn % every == 0:
                positions.append(board)
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            after = rng.choice(sorted(reference_afterstates(board, dice, rules)))
            if all(count <= 0 for count in after[1:27]):
                break  # the mover has borne off every checker
            board = flip(after)
    return positions


@pytest.mark.parametrize("rules, every", [(STANDARD, 9), (IN_HAND_RULES, 14)], ids=["standard", "in-hand"])
def test_round_trips_over_random_play(rules, every):
    rng = random.Random(7)
    seen_features = set()
    for board in random_positions(rules, games=3, every=every, seed=3):
        for dice in rng.sample(ALL_ROLLS, 6):
            plays = reference_plays(board, dice, rules)
            for after in rng.sample(sorted(plays), min(3, len(plays))):
                # board -> notation -> board
                notation = play_notation(board, after, dice, rules)
                assert parse_play(board, notation, rules) == after, (board, dice, notation)
                assert parse_play(board, notation, rules, dice=dice) == after, (board, dice, notation)
                # notation -> board -> notation
                assert (
                    play_notation(board, parse_play(board, notation, rules, dice=dice), dice, rules)
                    == notation
                )
                # every move sequence reaching the afterstate is written as something that parses back
                for sequence in plays[after][:4]:
                    assert parse_play(board, format_play(sequence), rules, dice=dice) == after
                seen_features.update(
                    feature for feature in ("*", "bar/", "/off", "(", NO_MOVE) if feature in notation
                )
    # The sample must have exercised hits, entering, bearing off and repeated moves.
    assert {"*", "bar/", "/off", "("} <= seen_features
