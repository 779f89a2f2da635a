"""The two-sided bear-off database: hand-computed cases, a scalar brute force over the reference move
generator, agreement with the one-sided database, cube decisions, coverage, files."""

from __future__ import annotations

import functools
import json
import math
from fractions import Fraction

import pytest
import torch
from helpers import compile_mode

from bgtrain.cli import main
from bgtrain.cube import CubeAction, CubeState, MatchGame, MoneyGame, TakeAction
from bgtrain.model.checkpoint import save_checkpoint
from bgtrain.model.network import ValueNetwork
from bgtrain.values.bearoff import all_positions, build_bearoff_database, position_count, rank
from bgtrain.values.bearoff import default_path as one_sided_default_path
from bgtrain.values.bearoff_two_sided import (
    TwoSidedBearoffDatabase,
    build_two_sided_database,
    default_path,
    load_two_sided_database,
)
from bgtrain.values.evaluator import Evaluator
from engine.board import flip_board
from engine.position_id import encode_position_id
from engine.reference import reference_afterstates
from engine.rules import STANDARD, Rules
from engine.variants import get_rules

ALL_ROLLS = [(high, low) for high in range(1, 7) for low in range(1, high + 1)]
THREE_CHECKERS = Rules(name="three-checkers", start_points=((24, 1), (13, 1), (6, 1)))


def weight(roll: tuple[int, int]) -> Fraction:
    return Fraction(1 if roll[0] == roll[1] else 2, 36)


@pytest.fixture(autouse=True, scope="module")
def op_by_op():
    """The engine's kernels run op by op here: the many small move-generation calls would otherwise
    trigger their compilation (seconds), which these tests do not check (test_engine_vs_reference does)."""
    with compile_mode("never"):
        yield


@pytest.fixture(scope="module")
def database() -> TwoSidedBearoffDatabase:
    return build_two_sided_database(3)


def board_of(mover: tuple[int, ...], opponent: tuple[int, ...]) -> torch.Tensor:
    """A bear-off position: the mover's checkers on its points ``mover``, the opponent's on its own points
    ``opponent`` (its point k is the mover's 25 - k); repeat a point for more checkers."""
    board = torch.zeros(28, dtype=torch.int8)
    for point in mover:
        board[point] += 1
    for point in opponent:
        board[25 - point] -= 1
    return board


def boards(*pairs: tuple[tuple[int, ...], tuple[int, ...]]) -> torch.Tensor:
    return torch.stack([board_of(mover, opponent) for mover, opponent in pairs])


def all_pairs(max_checkers: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every position with 1..max_checkers checkers a side: (boards ``int8[N, 28]``, mover homes, opponent
    homes ``int64[N, 6]``)."""
    home = all_positions(max_checkers)[1:]  # rank 0 is the empty position
    mover = home.repeat_interleave(home.shape[0], 0)
    opponent = home.repeat(home.shape[0], 1)
    board = torch.zeros(mover.shape[0], 28, dtype=torch.int8)
    board[:, 1:7] = mover.to(torch.int8)
    board[:, 19:25] = -opponent.flip(-1).to(torch.int8)
    return board, mover, opponent


# --- a scalar brute force ---------------------------------------------------------------------------


def brute_force(number=float):
    """The module docstring's recursion, one position at a time, over the reference move generator:
    ``value(mover, opponent)`` -> (P(win), E_centred, E_mover, E_opponent, ND_centred, ND_mover,
    ND_opponent) for home boards given as 6-tuples (checkers on points 1..6). ``number``: float, or
    Fraction for exact values."""

    @functools.cache
    def plays(position: tuple[int, ...], roll: tuple[int, int]) -> list[tuple[int, ...]]:
        board = [0] * 28
        board[1:7] = position
        return [tuple(after[1:7]) for after in reference_afterstates(board, roll)]

    @functools.cache
    def value(mover: tuple[int, ...], opponent: tuple[int, ...]) -> tuple:
        if sum(opponent) == 0:  # the opponent has borne off everything: lost
            return (number(0), *[number(-1)] * 6)
        win = centred = owned = conceded = number(0)
        for roll in ALL_ROLLS:
            best = [-math.inf] * 4
            for after in plays(mover, roll):
                # The opponent's view of the game after this play; the mover's cube is its opponent's.
                them = value(opponent, after)
                options = (1 - them[0], -them[1], -them[3], -them[2])
                best = [max(old, new) for old, new in zip(best, options)]
            win += weight(roll) * best[0]
            centred += weight(roll) * best[1]
            owned += weight(roll) * best[2]
            conceded += weight(roll) * best[3]
        take_or_pass = min(2 * conceded, number(1))
        return (win, max(centred, take_or_pass), max(owned, take_or_pass), conceded, centred, owned, conceded)

    return value


def test_one_checker_each_by_hand():
    value = brute_force(Fraction)
    database = build_two_sided_database(1)
    # Mover: one checker on its 6-point; opponent: one on its 1-point (surely off next turn).
    #  +---------------+          The mover misses only with 1-1, 2-1, 3-1, 4-1, 3-2: 9/36, so
    #  | o (opponent's 1-point)   P(win) = 27/36 = 3/4.
    #  | x (mover's 6-point)      The opponent to move in the flipped position always wins: 1.
    # Mover and opponent each on the 6-point: after a miss (1/4) the mover's checker is on its 1-, 2-
    # or 3-point and comes off next roll, so the opponent must bear off at once (3/4):
    # P(win) = 3/4 + 1/4 * 1/4 = 13/16.
    cases = [((6,), (1,), Fraction(3, 4)), ((1,), (6,), Fraction(1)), ((6,), (6,), Fraction(13, 16)),
             ((5,), (6,), 1 - Fraction(5, 36) * Fraction(27, 36))]
    for mover, opponent, expected in cases:
        assert value(home_of(mover), home_of(opponent))[0] == expected
        ours = float(database.win_probability(board_of(mover, opponent).unsqueeze(0))[0])
        assert ours == pytest.approx(float(expected), abs=1e-7), (mover, opponent)
    # The same position after the mover's miss, flipped: the lookup reads (mover, opponent), not the reverse.
    flipped = flip_board(board_of((6,), (1,)).unsqueeze(0))
    assert float(database.win_probability(flipped)[0]) == 1.0


def home_of(points: tuple[int, ...]) -> tuple[int, ...]:
    home = [0] * 6
    for point in points:
        home[point - 1] += 1
    return tuple(home)


def test_every_pair_matches_the_brute_force(database):
    value = brute_force()
    board, mover, opponent = all_pairs(3)  # 83 x 83 = 6,889 pairs
    expected = torch.tensor([value(tuple(m), tuple(o)) for m, o in zip(mover.tolist(), opponent.tolist())],
                            dtype=torch.float64)
    assert torch.allclose(database.win_probability(board).double(), expected[:, 0], atol=1e-6, rtol=0)
    assert torch.allclose(database.cubeful_equities(board).double(), expected[:, 1:4], atol=1e-6, rtol=0)
    assert torch.allclose(database.no_double_equities(board).double(), expected[:, 4:7], atol=1e-6, rtol=0)


# --- against the one-sided database --------------------------------------------------------------------


def test_agrees_with_the_one_sided_estimate():
    two_sided = build_two_sided_database(4)
    one_sided = build_bearoff_database(4)
    board, _, opponent = all_pairs(4)  # 209 x 209 = 43,681 pairs
    exact = two_sided.win_probability(board).double()
    estimate = one_sided.outcomes(board, STANDARD)[:, 0].double()
    difference = (exact - estimate).abs()
    # The one-sided estimate plays to minimise the expected number of rolls, not to win: measured
    # max 0.0095 and mean 0.00032 on these pairs (max 0.014, mean 0.00088 with six checkers).
    assert float(difference.max()) < 0.012
    assert float(difference.mean()) < 5e-4
    assert float(difference.max()) > 1e-3  # the two strategies do differ somewhere
    # Exact where the opponent is sure to finish next turn: the mover wins iff it finishes this roll, and
    # every strategy finishes when the roll allows it.
    sure = one_sided.rolls_off[rank(opponent), 1] > 1.0 - 1e-9
    assert int(sure.sum()) > 100
    assert float(difference[sure].max()) < 1e-6
    # And with at most two checkers a side the two strategies coincide (measured: all 729 pairs).
    small, _, _ = all_pairs(2)
    assert torch.allclose(two_sided.win_probability(small).double(),
                          one_sided.outcomes(small, STANDARD)[:, 0].double(), atol=1e-6, rtol=0)


# --- cube -------------------------------------------------------------------------------------------


def test_huge_favourite_doubles_and_the_opponent_passes(database):
    # Mover: one checker on its 1-point, off with any roll; opponent: three on its 6-point.
    board = boards(((1,), (6, 6, 6)))
    assert float(database.win_probability(board)[0]) == 1.0
    centred, owned, conceded = database.cubeful_equities(board)[0].tolist()
    assert centred == owned == 1.0 and conceded == 1.0  # a sure win is worth the cube in every state
    decision = database.money_cube_decision(board)
    assert int(decision.action[0]) == CubeAction.DOUBLE_PASS and int(decision.take[0]) == TakeAction.PASS
    assert float(decision.optimal[0]) == 1.0 and float(decision.double_take[0]) == 2.0


def test_last_roll_positions(database):
    # The opponent's last checker is on its 1-point: it is off next turn, so the mover wins iff it bears
    # everything off now, with chance q, and the game is a single roll: ND = 2q - 1, DT = 2 ND.
    # Double when q > 1/2; the opponent takes when q < 3/4.
    #   5- and 1-points: q = 23/36 (misses: 1-1, and every non-double whose dice are both below 5)
    #                    -> double, take, E = 2 (2 q - 1) = 5/9
    #   5- and 2-points: q = 19/36 -> double, take by a hair: ND = 1/18, DT = 1/9
    #   4- and 3-points: q = 17/36 -> no double: ND = -1/18
    #   6-point alone:   q = 27/36 = 3/4 -> take and pass are equal: DT = DP = 1
    cases = [((5, 1), Fraction(23, 36), CubeAction.DOUBLE_TAKE), ((5, 2), Fraction(19, 36), CubeAction.DOUBLE_TAKE),
             ((4, 3), Fraction(17, 36), CubeAction.NO_DOUBLE), ((6,), Fraction(27, 36), CubeAction.DOUBLE_PASS)]
    board = boards(*[(mover, (1,)) for mover, _, _ in cases])
    decision = database.money_cube_decision(board)
    no_double = database.no_double_equities(board)
    for row, (mover, q, action) in enumerate(cases):
        nd = 2 * q - 1
        assert float(database.win_probability(board[row : row + 1])[0]) == pytest.approx(float(q), abs=1e-7)
        assert no_double[row].tolist() == pytest.approx([float(nd)] * 3, abs=1e-7), mover  # the cube is dead
        assert int(decision.action[row]) == action, mover
        assert float(decision.double_take[row]) == pytest.approx(float(2 * nd), abs=1e-7)
        assert float(decision.optimal[row]) == pytest.approx(float(max(nd, min(2 * nd, 1))), abs=1e-7)
    # Owning the cube, the mover redoubles the same; with the opponent owning it, no double is possible.
    owned = database.money_cube_decision(board[:1], CubeState(2, "mover"))
    assert int(owned.action[0]) == CubeAction.DOUBLE_TAKE
    conceded = database.money_cube_decision(board[:1], CubeState(2, "opponent"))
    assert int(conceded.action[0]) == CubeAction.NOT_AVAILABLE
    assert float(conceded.optimal[0]) == pytest.approx(5 / 18, abs=1e-7)


def test_cube_ownership_orders_the_equities(database):
    # More cube access never hurts: E_opponent <= E_centred <= E_mover. The cube owner may always
    # ignore the cube, so E_opponent <= cubeless equity <= E_mover. Every equity is within the stake.
    board, _, _ = all_pairs(3)
    centred, owned, conceded = database.cubeful_equities(board).double().unbind(1)
    cubeless = 2 * database.win_probability(board).double() - 1
    tolerance = 1e-6
    assert bool((conceded <= centred + tolerance).all()) and bool((centred <= owned + tolerance).all())
    assert bool((conceded <= cubeless + tolerance).all()) and bool((cubeless <= owned + tolerance).all())
    no_double = database.no_double_equities(board).double()
    assert float(no_double.abs().max()) <= 1.0 + tolerance
    # Some positions are doubles, some takes, some passes: the table is not degenerate.
    decision = database.money_cube_decision(board)
    actions = set(decision.action.tolist())
    assert {CubeAction.NO_DOUBLE, CubeAction.DOUBLE_TAKE, CubeAction.DOUBLE_PASS} <= actions


def test_symmetric_races_favour_the_side_to_move(database):
    # The same position for both sides: the side to move is ahead by a roll, and so at least even.
    home = all_positions(3)[1:]
    board = torch.zeros(home.shape[0], 28, dtype=torch.int8)
    board[:, 1:7] = home.to(torch.int8)
    board[:, 19:25] = -home.flip(-1).to(torch.int8)
    assert torch.equal(flip_board(board), board)  # the position looks the same from either side
    assert float(database.win_probability(board).min()) >= 0.5
    centred, _, conceded = database.cubeful_equities(board).unbind(1)
    assert float(centred.min()) >= 0.0 and float(conceded.min()) >= 0.0


def test_money_only():
    database = build_two_sided_database(1)
    board = boards(((6,), (6,)))
    with pytest.raises(TypeError, match="money"):
        database.money_cube_decision(board, game=MatchGame(7))
    with pytest.raises(ValueError, match="cube limit"):
        database.money_cube_decision(board, game=MoneyGame(cube_limit=4))


# --- coverage -----------------------------------------------------------------------------------------


def test_covers_only_small_bearoffs(database):
    covered = [((6, 5, 1), (6,)), ((1,), (6, 6, 6)), ((2, 2, 2), (3, 3, 3))]
    not_covered = [
        ((6, 5, 1, 1), (6,)),  # four checkers for the mover: beyond this database's three
        ((6,), (1, 1, 2, 3)),  # four for the opponent
        ((7,), (6,)),  # a mover's checker outside its home board
        ((6,), (7,)),  # an opponent's checker outside its home board
        ((), (6,)),  # the mover has borne off everything (the game is over)
        ((6,), ()),
    ]
    board = boards(*covered, *not_covered)
    on_bar = board_of((6,), (6,))
    on_bar[25] = 1  # the mover's checker on the bar
    opponent_on_bar = board_of((6,), (6,))
    opponent_on_bar[0] = -1
    in_hand = board_of((6,), (6,))
    in_hand[26] = 1
    board = torch.cat([board, torch.stack([on_bar, opponent_on_bar, in_hand])])
    expected = [True] * len(covered) + [False] * (len(not_covered) + 3)
    assert database.covers(board).tolist() == expected


def test_covers_respects_the_rules(database):
    board = boards(((6, 5, 1), (6, 6)), ((6, 5), (6, 6)))
    assert database.covers(board).tolist() == [True, True]
    # With three checkers a side, three on the board have borne off none: gammons are possible.
    assert database.covers(board, THREE_CHECKERS).tolist() == [False, True]
    # Acey-deucey's extra rolls and play-to-lose's inverted goal change the values: not covered.
    assert database.covers(board, get_rules("acey-deucey")).tolist() == [False, False]
    assert database.covers(board, get_rules("play-to-lose")).tolist() == [False, False]


# --- files ----------------------------------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path, database):
    path = database.save(tmp_path / "two-sided.pt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two-sided.pt"]  # no temporary file left
    loaded = TwoSidedBearoffDatabase.load(path)
    assert loaded.max_checkers == 3
    assert torch.equal(loaded.win, database.win) and torch.equal(loaded.no_double, database.no_double)
    (tmp_path / "foreign.pt").write_bytes(b"not a database")
    with pytest.raises(ValueError, match="not a readable"):
        TwoSidedBearoffDatabase.load(tmp_path / "foreign.pt")
    torch.save({"format": "bgtrain-bearoff", "format_version": 1}, tmp_path / "one-sided.pt")
    with pytest.raises(ValueError, match="not a two-sided bear-off database"):
        TwoSidedBearoffDatabase.load(tmp_path / "one-sided.pt")
    with pytest.raises(FileNotFoundError):
        TwoSidedBearoffDatabase.load(tmp_path / "missing.pt")


def test_built_and_cached_on_first_use(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_path(2) == tmp_path / "bgtrain" / "bearoff-two-sided-v1-2.pt"
    database = load_two_sided_database(max_checkers=2)
    assert "building the two-sided bear-off database" in capsys.readouterr().err
    assert default_path(2).exists() and database.max_checkers == 2
    assert position_count(2) == database.win.shape[0] == 28
    load_two_sided_database(max_checkers=2)
    assert capsys.readouterr().err == ""  # read from the cache, not built again
    with pytest.raises(FileNotFoundError):
        load_two_sided_database(max_checkers=1, build=False)
    with pytest.raises(ValueError, match="max_checkers"):
        build_two_sided_database(0)


# --- where it is used: the evaluator and `bgtrain eval` ----------------------------------------------------


class EvenValue:
    """A value function that knows nothing: every position is even. Only the databases can be right."""

    def evaluate(self, board: torch.Tensor) -> torch.Tensor:
        return torch.tensor([0.5, 0.0, 0.0, 0.0, 0.0]).expand(board.shape[0], 5).clone()

    def evaluate_flipped(self, afterstates: torch.Tensor) -> torch.Tensor:
        return self.evaluate(afterstates)


@pytest.fixture(scope="module")
def one_sided():
    return build_bearoff_database(3)


def test_evaluator_takes_the_exact_values(database, one_sided):
    evaluator = Evaluator(EvenValue(), STANDARD, one_sided, two_sided=database)
    board, _, _ = all_pairs(3)
    sample = board[torch.randperm(board.shape[0], generator=torch.Generator().manual_seed(3))[:300]]
    exact = database.outcomes(sample)
    assert torch.equal(evaluator.probabilities(sample, 0), exact)
    # One ply deeper averages the exact values of the best replies: the database's own recursion.
    assert torch.allclose(evaluator.probabilities(sample, 1), exact, atol=1e-6, rtol=0)
    # The same position after a play, for the side that played: 1 - the next side's P(win).
    played = flip_board(sample[:20])
    assert torch.allclose(evaluator.afterstate_probabilities(played)[:, 0], 1 - exact[:20, 0])
    # Where the one-sided estimate is off (by 0.0014 here), the two-sided value wins.
    worst = boards(((5, 6, 6), (1, 1, 5)))
    estimate = float(Evaluator(EvenValue(), STANDARD, one_sided).probabilities(worst)[0, 0])
    value = float(evaluator.probabilities(worst)[0, 0])
    assert abs(value - estimate) > 1e-3 and value == float(database.win_probability(worst)[0])


def test_evaluator_falls_back_on_the_one_sided_database(one_sided):
    two_checkers = build_two_sided_database(2)
    evaluator = Evaluator(EvenValue(), STANDARD, one_sided, two_sided=two_checkers)
    board = boards(((6, 5, 1), (6, 6)), ((6, 5), (6, 6)), ((6, 5, 1), (13,)))
    probs = evaluator.probabilities(board)
    assert torch.equal(probs[0], one_sided.outcomes(board[:1], STANDARD)[0])  # three checkers: one-sided
    assert torch.equal(probs[1], two_checkers.outcomes(board[1:2])[0])  # two: exact
    assert probs[2].tolist() == [0.5, 0.0, 0.0, 0.0, 0.0]  # no bear-off: the value function
    alone = Evaluator(EvenValue(), STANDARD, None, two_sided=two_checkers).probabilities(board)
    assert torch.equal(alone[1], probs[1]) and alone[0].tolist() == [0.5, 0.0, 0.0, 0.0, 0.0]


def test_the_cached_databases_come_with_the_default_bearoff(tmp_path, monkeypatch, one_sided):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    one_sided.save(one_sided_default_path())
    build_two_sided_database(2).save(default_path())  # small, where the six-checker one would be
    network = ValueNetwork("tesauro198", (8,))
    assert Evaluator.from_network(network).two_sided.max_checkers == 2
    assert Evaluator.from_network(network, bearoff=False).two_sided is None
    assert Evaluator.from_network(network, bearoff=one_sided).two_sided is None  # exactly what was given
    assert Evaluator.from_network(network, bearoff=False, two_sided=default_path()).two_sided is not None


def test_cli_eval_gives_the_exact_money_cube_decision(tmp_path, monkeypatch, capsys, one_sided):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one_sided.save(one_sided_default_path())
    build_two_sided_database(2).save(default_path())
    torch.manual_seed(5)
    network = ValueNetwork("tesauro198", (16,))
    model = str(tmp_path / "model.pt")
    save_checkpoint(model, {"model": network.model_args(), "weights": network.state_dict(), "config": {},
                            "counters": {}})
    # The mover on its 5- and 1-points, the opponent's last checker on its 1-point: q = 23/36,
    # double, take (see test_last_roll_positions).
    position = encode_position_id(board_of((5, 1), (1,)))
    assert main(["eval", position, "--model", model, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cube = report["cube"]
    assert cube["method"] == "two-sided bear-off database" and cube["action"] == "Double, take"
    assert cube["equities"]["double_take"] == pytest.approx(5 / 9, abs=1e-5)  # 2 (2q - 1)
    assert cube["equities"]["no_double"] == pytest.approx(5 / 18, abs=1e-5)
    assert report["evaluation"]["probabilities"]["win"] == pytest.approx(23 / 36, abs=1e-5)
    assert main(["eval", position, "--model", model]) == 0
    assert "exact, two-sided bear-off database" in capsys.readouterr().out
    # Match play is not in the database: Janowski's estimate, with its efficiency.
    assert main(["eval", position, "--model", model, "--match", "7", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cube"]["method"] == "janowski"


def test_finished_sides_in_the_tables(database):
    # Rank 0, the empty position: the opponent has borne everything off, so the side to move has lost.
    assert float(database.win[1:, 0].abs().max()) == 0.0
    assert bool((database.no_double[:, 1:, 0] == -1.0).all())
