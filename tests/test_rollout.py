"""Batched rollouts (``bgtrain.rollout``): dice, exactness against the bear-off database, variance
reduction (and its luck on pruned plays), determinism and exact sharding, truncation, candidate plays,
the cube, the command line."""

from __future__ import annotations

import json
import math

import pytest
import torch

from bgtrain.cli import main
from bgtrain.cube import CubeState
from bgtrain.datasets.labellers import labeller_from_description, labeller_from_spec
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from bgtrain.outcomes import cubeless_equity, flip_outcomes
from bgtrain.rollout import RolloutResult, RolloutSettings, rollout
from bgtrain.rollout.batching import batch_invariant
from bgtrain.rollout.dice import BLOCK, STRATA, roll_strata, rollout_dice
from bgtrain.rollout.leaves import exact_leaf
from bgtrain.rollout.plays import rollout_plays
from bgtrain.rollout.variance import expand_rolls
from bgtrain.values.bearoff import build_bearoff_database, default_path
from bgtrain.values.bearoff_two_sided import build_two_sided_database
from bgtrain.values.bearoff_two_sided import default_path as two_sided_default_path
from bgtrain.values.evaluator import Evaluator, MoveFilter
from bgtrain.values.pruning import PlayPruning
from engine.board import flip_board
from engine.movegen import legal_afterstates
from engine.position_id import decode_position_id
from engine.random_play import sample_positions

MODEL = "checkpoints/bgtrain-default.pt"
PRUNED_MODEL = "checkpoints/bgtrain-gen9-deep.pt"  # the shipped default: a model with pruning networks
START = "4HPwATDgc/ABMA"


def board_from(mover: dict[int, int], opponent: dict[int, int]) -> torch.Tensor:
    """A position from the side to move: ``mover`` checkers on its points, ``opponent`` on ITS points."""
    board = torch.zeros(28, dtype=torch.int8)
    for point, count in mover.items():
        board[point] = count
    for point, count in opponent.items():
        board[25 - point] = -count
    return board


# Both sides bearing off, four checkers each, one borne off already (no gammons):
#   mover    on its 1, 2, 4, 6 points       opponent on its 1, 3, 5, 6 points
RACE = board_from({1: 1, 2: 1, 4: 1, 6: 1}, {1: 1, 3: 1, 5: 1, 6: 1})
# Contact: the start position, and a middle game with both sides holding anchors.
CONTACT = torch.stack([decode_position_id(START), decode_position_id("4OvgATDgc+QBUA")])


@pytest.fixture(scope="module")
def database():
    return build_bearoff_database(4)


@pytest.fixture(scope="module")
def evaluator(database):
    return Evaluator.from_path(MODEL, bearoff=database)


# --- dice -------------------------------------------------------------------------------------------


def test_first_two_rolls_are_stratified():
    trials = torch.arange(2 * BLOCK)
    for seed, stream in ((0, 0), (7, 3)):
        streams = torch.full_like(trials, stream)
        first, second = roll_strata(seed, streams, trials, 0), roll_strata(seed, streams, trials, 1)
        for block in range(2):  # every ordered pair of first two rolls exactly once per 1296 trials
            rows = slice(block * BLOCK, (block + 1) * BLOCK)
            assert torch.unique(first[rows] * STRATA + second[rows]).numel() == BLOCK
        for chunk in range(0, 2 * BLOCK, STRATA):  # and each first and each second roll once per 36
            assert sorted(first[chunk : chunk + STRATA].tolist()) == list(range(STRATA))
            assert sorted(second[chunk : chunk + STRATA].tolist()) == list(range(STRATA))
    other = roll_strata(1, torch.zeros_like(trials), trials, 0)
    assert not torch.equal(other, roll_strata(0, torch.zeros_like(trials), trials, 0))
    dice = rollout_dice(0, torch.zeros_like(trials), trials, 0)
    assert bool((dice[:, 0] >= dice[:, 1]).all()) and bool(((dice >= 1) & (dice <= 6)).all())


def test_later_rolls_are_uniform_and_independent():
    trials = torch.arange(36 * 800)
    streams = torch.zeros_like(trials)
    turn2, turn3 = roll_strata(3, streams, trials, 2), roll_strata(3, streams, trials, 3)

    def chi_square(observed: torch.Tensor) -> float:
        expected = observed.sum() / observed.numel()
        return float(((observed - expected) ** 2 / expected).sum())

    # 35 degrees of freedom: 66.6 is the 0.1% point; 1295: about 1295 + 3.1 * 51
    assert chi_square(torch.bincount(turn2, minlength=36).double()) < 66.6
    assert chi_square(torch.bincount(turn2 * 36 + turn3, minlength=1296).double()) < 1455
    neighbours = turn2[:-1] * 36 + turn2[1:]
    assert chi_square(torch.bincount(neighbours, minlength=1296).double()) < 1455


# --- exactness and variance reduction ---------------------------------------------------------------


def test_race_rollout_agrees_with_the_bearoff_database(evaluator, database):
    exact = database.outcomes(RACE.unsqueeze(0), evaluator.rules)[0].double()
    # Played to the end (no leaves): the rollout of the whole bear-off.
    played = rollout(evaluator, RACE.unsqueeze(0), trials=1296, seed=2, leaf=None)
    mean, error = played.probabilities()
    assert float(played.plies.double().mean()) > 3
    assert abs(float(mean[0, 0] - exact[0])) <= 2 * float(error[0, 0])
    equity, equity_error = played.equity()
    assert abs(float(equity[0]) - float(cubeless_equity(exact))) <= 2 * float(equity_error[0])
    # With the database as the leaf the trials stop at once, on its exact value.
    leaf = rollout(evaluator, RACE.unsqueeze(0), trials=36, seed=2)
    assert bool((leaf.plies == 0).all())
    assert torch.allclose(leaf.probabilities()[0][0], exact, atol=1e-6)


def test_variance_reduction_lowers_the_error_without_bias(evaluator):
    settings = RolloutSettings(truncate=12)
    reduced = rollout(evaluator, CONTACT, settings, trials=288, seed=11)
    plain = rollout(evaluator, CONTACT, RolloutSettings(truncate=12, variance_reduction=False), trials=288, seed=12)
    equity, error = reduced.equity()
    plain_equity, plain_error = plain.equity()
    assert bool((plain_error >= 3 * error).all()), (plain_error, error)
    assert bool(((equity - plain_equity).abs() <= 2 * torch.sqrt(error**2 + plain_error**2)).all())
    # The luck is bookkeeping: the same seed plays the same games with and without it.
    same = rollout(evaluator, CONTACT, RolloutSettings(truncate=12, variance_reduction=False), trials=288, seed=11)
    assert torch.equal(same.raw_outcomes, reduced.raw_outcomes)


@pytest.mark.slow
def test_variance_reduction_on_whole_games(evaluator):
    reduced = rollout(evaluator, CONTACT, trials=324, seed=21)
    plain = rollout(evaluator, CONTACT, RolloutSettings(variance_reduction=False), trials=324, seed=22)
    equity, error = reduced.equity()
    plain_equity, plain_error = plain.equity()
    assert bool((plain_error >= 3 * error).all()), (plain_error, error)
    assert bool(((equity - plain_equity).abs() <= 2 * torch.sqrt(error**2 + plain_error**2)).all())


class EverythingIsALeaf:
    """A leaf source that knows every position: the hook a two-sided database plugs into."""

    def covers(self, board):
        return torch.ones(board.shape[0], dtype=torch.bool)

    def outcomes(self, board):
        return torch.tensor([[0.25, 0.1, 0.0, 0.05, 0.0]]).expand(board.shape[0], 5)


def test_a_leaf_source_plugs_in(evaluator):
    result = rollout(evaluator, CONTACT, trials=36, leaf=EverythingIsALeaf())
    assert bool((result.plies == 0).all())
    assert torch.allclose(result.probabilities()[0], torch.tensor([0.25, 0.1, 0.0, 0.05, 0.0]).double())


# --- the luck on pruned plays -----------------------------------------------------------------------


def phase_model(encoder: str, hidden: int, seed: int) -> PhaseNetwork:
    torch.manual_seed(seed)
    return PhaseNetwork({name: ValueNetwork(encoder, [hidden]) for name in ("contact", "crashed", "race")}).eval()


@pytest.fixture(scope="module")
def pruned_evaluator(database):
    return Evaluator.from_path(PRUNED_MODEL, bearoff=database)


def test_pruned_luck_keeping_every_play_is_the_full_luck(database):
    # Small random networks that disagree, so that pruning to the best 2 changes some rolls' plays; the
    # evaluator without clamps, whose static value is then the expansion's own value function.
    evaluator = batch_invariant(Evaluator.from_network(phase_model("tesauro_plus", 12, seed=1), bearoff=database,
                                                       clamps=False, pruning=phase_model("tesauro198", 4, seed=2)),
                                torch.device("cpu"))
    boards, _ = sample_positions(8, seed=3, games=8, turns=30)
    boards = torch.cat([CONTACT, RACE.unsqueeze(0), boards])
    leaf = exact_leaf(evaluator)
    full = expand_rolls(evaluator, boards, leaf)
    every_play = expand_rolls(evaluator, boards, leaf, PlayPruning(keep=1000, more_than=0))
    assert torch.allclose(every_play.values, full.values, atol=1e-6)
    assert torch.equal(every_play.best_afterstates(), full.best_afterstates())
    pruned = expand_rolls(evaluator, boards, leaf, PlayPruning(keep=2, more_than=0))
    assert not torch.equal(pruned.choice, full.choice)  # the pruning networks rank some other play first
    # A pruned choice is never worth more than the full choice, by the value that picks both.
    assert bool((cubeless_equity(pruned.values) <= cubeless_equity(full.values) + 1e-6).all())


def test_pruned_luck_plays_the_same_games_without_bias(pruned_evaluator):
    settings = RolloutSettings(truncate=8)
    full = rollout(pruned_evaluator, CONTACT, settings, trials=144, seed=13)
    pruned = rollout(pruned_evaluator, CONTACT, RolloutSettings(truncate=8, pruned_luck=True), trials=144, seed=13)
    assert torch.equal(pruned.raw_outcomes, full.raw_outcomes)  # the luck is bookkeeping: the same games
    assert not torch.equal(pruned.outcomes, full.outcomes)
    # Each roll's pruned luck and full luck both average zero over the roll, so their difference, trial by
    # trial on the same games, averages zero too; it is small, so this is a sharp test of bias.
    difference = cubeless_equity(full.outcomes) - cubeless_equity(pruned.outcomes)
    spread = difference.std() / difference.numel() ** 0.5
    assert abs(float(difference.mean())) <= 3 * float(spread) and float(spread) < 0.01
    _, error = pruned.equity()
    _, plain_error = pruned.equity(raw=True)
    assert bool((plain_error >= 3 * error).all()), (plain_error, error)


def test_pruned_luck_shards_merge_exactly(pruned_evaluator):
    settings = RolloutSettings(truncate=6, pruned_luck=True, cube=True)
    whole = rollout(pruned_evaluator, CONTACT, settings, seed=5, trials=40)
    merged = RolloutResult.merge([rollout(pruned_evaluator, CONTACT, settings, seed=5, first_trial=17, trials=23),
                                  rollout(pruned_evaluator, CONTACT, settings, seed=5, trials=17)])
    for name in ("outcomes", "raw_outcomes", "cubeful", "raw_cubeful"):
        assert torch.equal(getattr(whole, name), getattr(merged, name)), name


def test_settings_describe_themselves_as_before_unless_the_luck_is_pruned():
    # Work directories and shard signatures written before pruned luck existed still match.
    assert "pruned_luck" not in RolloutSettings(truncate=7).describe()
    for settings in (RolloutSettings(truncate=7, cube=True), RolloutSettings(pruned_luck=True)):
        assert RolloutSettings(**settings.describe()) == settings
    assert RolloutSettings(pruned_luck=True).describe()["pruned_luck"] is True


def test_pruned_luck_needs_pruning_networks(evaluator, pruned_evaluator):
    with pytest.raises(ValueError, match="pruning networks"):
        rollout(evaluator, CONTACT, RolloutSettings(pruned_luck=True), trials=2)
    with pytest.raises(ValueError, match="pruning networks"):
        labeller_from_spec("rollout:36:luck=pruned", MODEL)
    labeller = labeller_from_spec("rollout:36:truncate=4:luck=pruned", PRUNED_MODEL)
    assert labeller.settings.pruned_luck and labeller.describe()["luck"] == "pruned"
    again = labeller_from_description(labeller.describe(), pruned_evaluator)
    assert again.settings == labeller.settings
    assert "luck" not in labeller_from_spec("rollout:36", PRUNED_MODEL).describe()  # the old descriptions
    with pytest.raises(ValueError, match="luck=full or luck=pruned"):
        labeller_from_spec("rollout:36:luck=half", PRUNED_MODEL)


# --- determinism, sharding, truncation --------------------------------------------------------------


def test_seeded_and_sharded_rollouts_are_identical(evaluator):
    boards = torch.cat([CONTACT, RACE.unsqueeze(0)])
    settings = RolloutSettings(truncate=8, cube=True)
    whole = rollout(evaluator, boards, settings, seed=5, trials=60)
    again = rollout(evaluator, boards, settings, seed=5, trials=60)
    first = rollout(evaluator, boards, settings, seed=5, trials=23)
    rest = rollout(evaluator, boards, settings, seed=5, first_trial=23, trials=37)
    merged = RolloutResult.merge([rest, first])
    for name in ("outcomes", "raw_outcomes", "plies", "cubeful", "raw_cubeful"):
        assert torch.equal(getattr(whole, name), getattr(again, name))
        assert torch.equal(getattr(whole, name), getattr(merged, name)), name
    assert torch.equal(whole.select_trials(23, 60).outcomes, rest.outcomes)
    other = rollout(evaluator, boards, settings, seed=6, trials=60)
    assert not torch.equal(other.raw_outcomes, whole.raw_outcomes)
    with pytest.raises(ValueError, match="do not join"):
        RolloutResult.merge([first, rollout(evaluator, boards, settings, seed=5, first_trial=30, trials=5)])
    with pytest.raises(ValueError, match="same rollout"):
        RolloutResult.merge([first, rollout(evaluator, boards, settings, seed=9, first_trial=23, trials=5)])


def test_truncation_takes_the_zero_ply_value_at_the_cut(evaluator):
    boards = CONTACT[:1]
    cut = rollout(evaluator, boards, RolloutSettings(truncate=1, variance_reduction=False), seed=4, trials=36)
    assert bool((cut.plies == 1).all())
    # By hand: each trial's first roll, the evaluator's 0-ply play, the 0-ply value of what follows.
    trials = torch.arange(36)
    dice = rollout_dice(4, torch.zeros_like(trials), trials, 0)
    afterstates = legal_afterstates(boards.expand(36, -1), dice, evaluator.rules)
    chosen = afterstates.select(evaluator.choose(afterstates, 0))
    expected = flip_outcomes(evaluator.probabilities(flip_board(chosen), 0)).double()
    assert torch.allclose(cut.raw_outcomes[0], expected, atol=1e-6)
    longer = rollout(evaluator, boards, RolloutSettings(truncate=5), seed=4, trials=36)
    assert bool((longer.plies <= 5).all()) and bool((longer.plies == 5).any())
    with pytest.raises(ValueError, match="truncate"):
        RolloutSettings(truncate=0)


# --- candidate plays and the cube -------------------------------------------------------------------


def test_candidate_plays_share_their_dice(database):
    wide = Evaluator.from_path(MODEL, bearoff=database, move_filter=MoveFilter(keep=3, threshold=1.0))
    board = decode_position_id(START)
    # Without variance reduction the dice are most of the noise, and the common dice cancel part of it.
    plain = RolloutSettings(truncate=6, variance_reduction=False)
    plays = rollout_plays(wide, board, (3, 1), plain, top=3, trials=72, seed=1)
    assert len(plays.plays) == 3 and plays.plays[0] == "8/5 6/5"
    assert bool((plays.result.streams == 0).all())
    equity, error = plays.equities()
    difference, difference_error = plays.differences()
    best = plays.best()
    assert float(difference[best]) == 0.0 and float(difference_error[best]) == 0.0
    assert bool((difference <= 0).all())
    for row in range(3):
        if row != best:  # common dice: the difference is better known than independent trials would give
            assert float(difference_error[row]) < math.hypot(float(error[row]), float(error[best]))
    assert torch.allclose(difference, equity - equity[best])


def test_cube_in_a_clear_pass(evaluator):
    # The mover has two checkers left on its ace point; the opponent has all 15 on its points 13..17,
    # none borne off: the mover bears off next roll and wins a gammon. Money, Jacoby: double, pass, +1.
    board = board_from({1: 2}, {13: 3, 14: 3, 15: 3, 16: 3, 17: 3}).unsqueeze(0)
    result = rollout(evaluator, board, RolloutSettings(cube=True), trials=36, seed=0)
    cubeful, _ = result.cubeful_equity()
    assert float(cubeful[0]) == pytest.approx(1.0, abs=1e-9) and bool((result.plies == 0).all())
    # Without Jacoby a gammon counts with the cube centred: too good to double, play on for it.
    no_jacoby = rollout(evaluator, board, RolloutSettings(cube=True, jacoby=False), trials=36, seed=0)
    assert float(no_jacoby.cubeful_equity()[0][0]) == pytest.approx(2.0)
    # With the opponent owning a 2-cube the mover cannot double: it wins the gammon, 2 x 2 per initial 2.
    owned = rollout(evaluator, board, RolloutSettings(cube=True), trials=36, seed=0, cubes=CubeState(2, "opponent"))
    assert float(owned.cubeful_equity()[0][0]) == pytest.approx(2.0)
    assert float(owned.equity()[0][0]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="cubeless"):
        rollout(evaluator, board, trials=2).cubeful_equity()


# --- the command line -------------------------------------------------------------------------------


@pytest.fixture
def small_cache(tmp_path, monkeypatch, database):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    database.save(default_path())
    build_two_sided_database(2).save(two_sided_default_path())  # small: the CLI must not build the full one


def test_cli_smoke(small_cache, capsys):
    assert main(["rollout", START, "--trials", "36", "--truncate", "4", "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    position = report["positions"][0]
    assert report["trials_played"] == 36 and position["position_id"] == START
    assert set(position["probabilities"]) == {"win", "win_gammon", "win_backgammon", "lose_gammon", "lose_backgammon"}
    assert position["equity"]["se"] > 0
    assert main(["rollout", START, "--trials", "36", "--truncate", "2", "--cube", "--dice", "31", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "Plays of 31" in text and "8/5 6/5" in text
    assert main(["rollout", START, "--trials", "36", "--truncate", "4", "--pruned-luck", "--quiet"]) == 0
    assert "variance reduction on pruned plays" in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["4HPwATDgc/ABM"], "neither a GNU Backgammon position ID"),
    ([START, "--trials", "0"], "--trials must be >= 1"),
    ([START, "--truncate", "-1"], "--truncate must be >= 1"),
    ([START, "--model", "no/such/model.pt"], "no/such/model.pt"),
    ([START, START, "--dice", "31"], "one position"),
    ([START, "--target-se", "0"], "--target-se must be > 0"),
    ([START, "--pruned-luck", "--no-variance-reduction"], "give one of them"),
    ([START, "--pruned-luck", "--model", MODEL], "has no pruning networks"),
])
def test_cli_errors_are_one_line(small_cache, capsys, arguments, message):
    assert main(["rollout", *arguments, "--quiet"]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and error.startswith("bgtrain rollout: error:") and "\n" not in error
