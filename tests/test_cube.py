"""The cube: known theory (take points, last rolls, Crawford), GNU Backgammon golden decisions, the API."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bgtrain.cube import (
    CLASSIC_EFFICIENCY,
    DEFAULT_EFFICIENCY,
    CubeAction,
    CubeState,
    MatchGame,
    MoneyGame,
    PositionKind,
    TakeAction,
    action_label,
    cube_decision,
    cubeful_equity,
    decide_from_equities,
    initial_cube,
    is_double,
)
from bgtrain.cube.met import default_met
from bgtrain.outcomes import cubeless_equity

MONEY = MoneyGame(jacoby=False)
CENTRED = CubeState()


def gammonish(p, gammon_share: float = 0.0, loss_gammon_share: float = 0.0) -> torch.Tensor:
    """Probabilities ``float64[B, 5]`` with winning chances ``p`` and fixed shares of gammons among wins
    and among losses (so the average win ``W = 1 + gammon_share``, the average loss ``L = 1 + loss_...``)."""
    p = torch.as_tensor(p, dtype=torch.float64).reshape(-1)
    zero = torch.zeros_like(p)
    return torch.stack((p, p * gammon_share, zero, (1 - p) * loss_gammon_share, zero), dim=-1)


def decide(p, cube=CENTRED, game=MONEY, efficiency=0.0, **shares):
    return cube_decision(gammonish(p, **shares), cube, game, efficiency)


# ---------------------------------------------------------------------------------------------------
# Money take points


@pytest.mark.parametrize("efficiency, take_point", [(0.0, 0.25), (1.0, 0.20)])
def test_money_take_point_without_gammons(efficiency, take_point):
    """Dead cube: 25%; fully live cube (the taker can redouble perfectly): 20% (Janowski)."""
    below, above = 1 - take_point - 1e-6, 1 - take_point + 1e-6  # the doubler's winning chances
    decision = decide([below, above], efficiency=efficiency)
    assert decision.take.tolist() == [TakeAction.TAKE, TakeAction.PASS]
    exactly = decide(1 - take_point, efficiency=efficiency)
    assert float(exactly.double_take[0]) == pytest.approx(1.0)  # the taker is indifferent there


@pytest.mark.parametrize("efficiency", [0.0, 0.3, 0.68, 0.76, 1.0])
@pytest.mark.parametrize("win_gammons, loss_gammons", [(0.0, 0.0), (0.25, 0.1), (0.1, 0.4), (0.5, 0.5)])
def test_money_take_point_with_gammons_follows_janowski(efficiency, win_gammons, loss_gammons):
    """Taking: (1 - x) E_dead + x E_live = 1/2 per doubled cube, with the opponent owning the cube.

    E_dead = p W - (1 - p) L; E_live runs linearly from -1 at the opponent's cash point
    TP = (L - 1/2) / (W + L + 1/2) to W at p = 1. At x = 1 the taker's take point is Janowski's
    (W - 1/2) / (W + L + 1/2); at x = 0 it is the dead-cube (W - 1/2) / (W + L).
    """
    W, L, x = 1 + win_gammons, 1 + loss_gammons, efficiency
    cash = (L - 0.5) / (W + L + 0.5)
    slope = (W + 1) / (1 - cash)
    intercept = -1 - slope * cash
    p_star = (0.5 + (1 - x) * L - x * intercept) / ((1 - x) * (W + L) + x * slope)
    if x == 1.0:
        assert 1 - p_star == pytest.approx((W - 0.5) / (W + L + 0.5))
    if x == 0.0:
        assert 1 - p_star == pytest.approx((W - 0.5) / (W + L))
    decision = decide(
        [p_star - 1e-7, p_star + 1e-7], efficiency=x, gammon_share=win_gammons, loss_gammon_share=loss_gammons
    )
    assert decision.take.tolist() == [TakeAction.TAKE, TakeAction.PASS]
    assert float(
        decide(p_star, efficiency=x, gammon_share=win_gammons, loss_gammon_share=loss_gammons).double_take[0]
    ) == (pytest.approx(1.0))


def test_live_cube_points_of_a_centred_cube():
    """Fully live cube, no gammons: the equity runs on the line from (20%, -1) to (80%, +1), and a
    perfectly efficient cube is never doubled before the cash point (80%), where it is double/pass."""
    decision = decide([0.3, 0.5, 0.79, 0.81], efficiency=1.0)
    assert decision.no_double.tolist() == pytest.approx([-1 + 2 * 0.1 / 0.6, 0.0, -1 + 2 * 0.59 / 0.6, 1.0])
    assert decision.action.tolist()[-1] == CubeAction.DOUBLE_PASS
    assert decision.take.tolist() == [TakeAction.TAKE] * 3 + [TakeAction.PASS]


# ---------------------------------------------------------------------------------------------------
# Last-roll positions: exact by hand


@pytest.mark.parametrize("p", [0.1, 0.3, 0.45, 0.55, 0.6, 0.7, 0.74, 0.76, 0.9, 1.0 - 1e-3])
@pytest.mark.parametrize("jacoby", [False, True])
def test_money_last_roll(p, jacoby):
    """The mover wins with chance p on its last roll, else the opponent wins: the cube is dead after
    this turn (x = 0). No double = 2p - 1; double/take = 2(2p - 1); double/pass = 1. Double iff p > 1/2;
    the opponent takes iff p < 3/4."""
    decision = decide(p, game=MoneyGame(jacoby=jacoby), efficiency=0.0)
    assert float(decision.no_double[0]) == pytest.approx(2 * p - 1)
    assert float(decision.double_take[0]) == pytest.approx(2 * (2 * p - 1))
    assert float(decision.double_pass[0]) == 1.0
    expected = (
        CubeAction.NO_DOUBLE if p < 0.5 else CubeAction.DOUBLE_TAKE if p < 0.75 else CubeAction.DOUBLE_PASS
    )
    assert int(decision.action[0]) == expected
    best = max(2 * p - 1, min(2 * (2 * p - 1), 1.0))
    assert float(decision.optimal[0]) == pytest.approx(best)
    assert float(decision.cost_no_double[0]) == pytest.approx(best - (2 * p - 1))
    assert float(decision.cost_double[0]) == pytest.approx(best - min(2 * (2 * p - 1), 1.0))


@pytest.mark.parametrize("p", [0.2, 0.4, 0.55, 0.62, 0.64, 0.8])
def test_match_last_roll(p):
    """7-point match, mover 2-away, opponent 4-away, cube 1, last roll won with chance p.

    No double: p M(1a,4a) + (1 - p) M(2a,3a); double/take: p + (1 - p) M(2a,2a); double/pass: M(1a,4a).
    """
    met = default_met()
    game = MatchGame(7, (5, 3))
    no_double = p * met.pre(1, 4) + (1 - p) * met.pre(2, 3)
    double_take = p * 1.0 + (1 - p) * met.pre(2, 2)
    double_pass = met.pre(1, 4)
    decision = decide(p, game=game, efficiency=0.0)
    assert float(decision.no_double_mwc[0]) == pytest.approx(no_double)
    assert float(decision.double_take_mwc[0]) == pytest.approx(double_take)
    assert float(decision.double_pass_mwc[0]) == pytest.approx(double_pass)
    take_point = 1 - (double_pass - met.pre(2, 2)) / (1 - met.pre(2, 2))  # the opponent's, about 37%
    assert (int(decision.take[0]) == TakeAction.TAKE) == (1 - p > take_point)
    assert is_double(int(decision.action[0])) == (min(double_take, double_pass) > no_double)


# ---------------------------------------------------------------------------------------------------
# Crawford and post-Crawford


def test_crawford_game_has_no_cube():
    probs = torch.rand(64, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    probs[:, 1:] *= probs[:, :1] / 2  # keep the vectors plausible (gammons below wins)
    for score in ((6, 2), (3, 6)):
        game = MatchGame(7, score, crawford=True)
        decision = cube_decision(probs, CENTRED, game, 0.76)
        assert (decision.action == CubeAction.NO_DOUBLE_DEAD_CUBE).all()
        assert (decision.take == TakeAction.NONE).all()
        assert torch.isnan(decision.double_take).all()
        # A dead cube: the cubeful equity is the cubeless one.
        assert torch.allclose(decision.no_double_mwc, decision.cubeless_mwc)
        assert action_label(int(decision.action[0])) == "Never double, take (dead cube)"


@pytest.mark.parametrize("trailer_away", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("efficiency", [0.0, 0.6, 0.76, 1.0])
def test_post_crawford_trailer_doubles_at_once(trailer_away, efficiency):
    """Post-Crawford the leader can never redouble usefully, so doubling only adds to the trailer's
    wins: double/take is never worse than no double, and "no double" is never the answer (bar exact ties:
    with a perfectly efficient cube, x = 1, doubling now or at the last moment is worth the same)."""
    generator = torch.Generator().manual_seed(trailer_away)
    p = torch.rand(200, generator=generator, dtype=torch.float64) * 0.98 + 0.01
    shares = torch.rand(200, 2, generator=generator, dtype=torch.float64) * 0.4
    probs = torch.stack((p, p * shares[:, 0], 0 * p, (1 - p) * shares[:, 1], 0 * p), dim=-1)
    game = MatchGame(7, (7 - trailer_away, 6))
    decision = cube_decision(probs, CENTRED, game, efficiency)
    assert (decision.double_take >= decision.no_double - 1e-12).all()
    tie = (decision.double_take - decision.no_double).abs() <= 1e-9
    assert not ((decision.action == CubeAction.NO_DOUBLE) & ~tie).any()
    if efficiency < 1.0:
        assert not tie.any()
    no_gammons = cube_decision(gammonish(p), CENTRED, game, efficiency)
    tie = (no_gammons.double_take - no_gammons.no_double).abs() <= 1e-9
    doubles = (no_gammons.action == CubeAction.DOUBLE_TAKE) | (no_gammons.action == CubeAction.DOUBLE_PASS)
    assert (doubles | tie).all()


def test_post_crawford_two_away_take_point_is_half():
    """Trailer 2-away, leader 1-away: a pass leaves double match point (50%), a take plays this game for
    the match, so the leader takes iff the trailer's chances are below 50%."""
    game = MatchGame(7, (5, 6))
    decision = decide([0.3, 0.49, 0.51, 0.7], game=game, efficiency=0.76)
    assert decision.take.tolist() == [TakeAction.TAKE, TakeAction.TAKE, TakeAction.PASS, TakeAction.PASS]
    assert decision.double_pass_mwc.tolist() == pytest.approx([0.5] * 4)


def test_post_crawford_leader_cannot_double():
    decision = decide([0.9], game=MatchGame(7, (6, 3)), efficiency=0.76)
    assert int(decision.action[0]) == CubeAction.NO_DOUBLE_DEAD_CUBE


# ---------------------------------------------------------------------------------------------------
# Money rules


def test_jacoby_rule_ignores_gammons_with_a_centred_cube():
    probs = gammonish(0.6, gammon_share=0.4, loss_gammon_share=0.2)
    with_jacoby = cube_decision(probs, CENTRED, MoneyGame(jacoby=True), 0.0)
    without = cube_decision(probs, CENTRED, MoneyGame(jacoby=False), 0.0)
    assert float(with_jacoby.no_double[0]) == pytest.approx(2 * 0.6 - 1)
    assert float(without.no_double[0]) == pytest.approx(float(cubeless_equity(probs)[0]))
    # Once the cube is turned gammons count either way.
    assert float(with_jacoby.double_take[0]) == pytest.approx(float(without.double_take[0]))


def test_too_good_to_double():
    # Big gammon chances: playing on beats cashing.
    decision = decide(0.9, game=MONEY, efficiency=0.76, gammon_share=0.6)
    assert int(decision.action[0]) == CubeAction.TOO_GOOD_PASS
    assert float(decision.optimal[0]) == pytest.approx(float(decision.no_double[0]))
    assert float(decision.cost_double[0]) == pytest.approx(float(decision.no_double[0]) - 1.0)
    assert action_label(CubeAction.TOO_GOOD_PASS, CubeState(2, "mover")) == "Too good to redouble, pass"
    # Without gammons GNU calls the same ordering "double, pass".
    certain = decide(0.99, game=MONEY, efficiency=0.76)
    assert int(certain.action[0]) == CubeAction.DOUBLE_PASS


def test_beavers():
    """An opponent who would be the favourite after taking beavers when allowed."""
    probs = gammonish(0.45)
    plain = cube_decision(probs, CENTRED, MoneyGame(beavers=False), 0.76)
    beaver = cube_decision(probs, CENTRED, MoneyGame(beavers=True), 0.76)
    assert float(plain.double_take[0]) < 0
    assert int(plain.take[0]) == TakeAction.TAKE and int(plain.action[0]) == CubeAction.NO_DOUBLE
    assert int(beaver.take[0]) == TakeAction.BEAVER and int(beaver.action[0]) == CubeAction.NO_DOUBLE_BEAVER


def test_cube_limit():
    probs = gammonish([0.6, 0.7, 0.78], gammon_share=0.2)
    limit_one = cube_decision(probs, CENTRED, MoneyGame(cube_limit=1), 1.0)
    assert (limit_one.action == CubeAction.NOT_AVAILABLE).all()
    # With the cube limited to 2 the taker can never redouble: the dead-cube take point even at x = 1.
    limit_two = decide([0.74, 0.76], game=MoneyGame(jacoby=False, cube_limit=2), efficiency=1.0)
    assert limit_two.take.tolist() == [TakeAction.TAKE, TakeAction.PASS]
    # A far-away limit is Janowski's closed form.
    far = cube_decision(probs, CENTRED, MoneyGame(cube_limit=2**40), 0.76)
    unlimited = cube_decision(probs, CENTRED, MoneyGame(), 0.76)
    assert torch.allclose(far.no_double, unlimited.no_double, atol=1e-9)
    assert torch.allclose(far.double_take, unlimited.double_take, atol=1e-9)
    with pytest.raises(ValueError, match="power of two"):
        MoneyGame(cube_limit=3)


def test_automatic_doubles_set_the_initial_cube():
    assert initial_cube(MoneyGame(), 2) == CubeState(1, "centred")
    assert initial_cube(MoneyGame(automatic_doubles=2), 1) == CubeState(2, "centred")
    assert initial_cube(MoneyGame(automatic_doubles=2), 5) == CubeState(4, "centred")
    assert initial_cube(MoneyGame(automatic_doubles=3, cube_limit=2), 3) == CubeState(2, "centred")


# ---------------------------------------------------------------------------------------------------
# GNU Backgammon golden decisions: its 0-ply probabilities and cube hints (gnubg 1.1.0a16, 6 decimals),
# recorded with scripts/compare_cube_gnubg.py's interface

GOLDEN = [
    # probabilities, cube, game, efficiency, GNU's proper action, no double, double/take (EMG, 6 decimals).
    # The opening position:
    (
        (
            0.5214855670928955,
            0.15417563915252686,
            0.0075654503889381886,
            0.1296507716178894,
            0.007496579084545374,
        ),
        CubeState(),
        MoneyGame(jacoby=True, beavers=True),
        0.76,
        "No double, beaver",
        0.089665,
        -0.228541,
    ),
    # The rest: positions from sample_positions(600, seed=11, games=10), noted by position ID.
    (
        (
            0.6088094711303711,
            0.5353761911392212,
            0.015918608754873276,
            0.07372678071260452,
            0.0010267650941386819,
        ),
        CENTRED,
        MatchGame(7, (0, 0)),
        0.76,
        "Double, pass",
        0.877421,
        1.028427,
    ),  # aGeAgUfvrIEICA
    (
        (
            0.6494475603103638,
            0.24410313367843628,
            0.02695622108876705,
            0.08281556516885757,
            0.003768067341297865,
        ),
        CENTRED,
        MatchGame(7, (0, 0)),
        0.76,
        "Double, take",
        0.684506,
        0.705637,
    ),  # 4KfwADTQ8+BBIA
    (
        (
            0.5579020977020264,
            0.23551729321479797,
            0.020517654716968536,
            0.20915280282497406,
            0.0033066628966480494,
        ),
        CENTRED,
        MatchGame(7, (0, 0)),
        0.76,
        "No double, take",
        0.231271,
        -0.034355,
    ),  # 99FBAgRtzJIhQA
    (
        (
            0.8356781005859375,
            0.5370745062828064,
            0.02968987636268139,
            0.03333263471722603,
            0.0009861936559900641,
        ),
        CENTRED,
        MatchGame(7, (0, 0)),
        0.76,
        "Too good to double, pass",
        1.326773,
        2.346928,
    ),  # Lx0CwiK+xwQFCA
    (
        (
            0.3881864845752716,
            0.08592205494642258,
            0.0008448385051451623,
            0.31411248445510864,
            0.00840149074792862,
        ),
        CENTRED,
        MatchGame(7, (3, 6)),
        0.76,
        "Double, take",
        0.307235,
        0.447038,
    ),  # 98cCgAS9icIQRA
    (
        (0.0, 0.0, 0.0, 0.9999498128890991, 0.017131740227341652),
        CENTRED,
        MatchGame(7, (3, 6)),
        0.8,
        "No double, take",
        -1.0,
        -1.0,
    ),  # 3gMAADqJI8ALAA
    (
        (
            0.5579020977020264,
            0.23551729321479797,
            0.020517654716968536,
            0.20915280282497406,
            0.0033066628966480494,
        ),
        CubeState(2, "mover"),
        MatchGame(9, (4, 6)),
        0.76,
        "Redouble, take",
        0.748254,
        0.868638,
    ),  # 99FBAgRtzJIhQA
    (
        (
            0.6341434717178345,
            0.3056434392929077,
            0.04310066998004913,
            0.12192174047231674,
            0.004205553792417049,
        ),
        CubeState(2, "mover"),
        MatchGame(9, (4, 6)),
        0.76,
        "Too good to redouble, pass",
        1.006385,
        1.305849,
    ),  # 51GJAwRGP+AATA
    (
        (
            0.6494475603103638,
            0.24410313367843628,
            0.02695622108876705,
            0.08281556516885757,
            0.003768067341297865,
        ),
        CENTRED,
        MoneyGame(jacoby=True),
        0.76,
        "Double, take",
        0.637271,
        0.700322,
    ),  # 4KfwADTQ8+BBIA
    (
        (
            0.5579020977020264,
            0.23551729321479797,
            0.020517654716968536,
            0.20915280282497406,
            0.0033066628966480494,
        ),
        CENTRED,
        MoneyGame(jacoby=False),
        0.76,
        "No double, take",
        0.229093,
        -0.017235,
    ),  # 99FBAgRtzJIhQA
    (
        (
            0.8356781005859375,
            0.5370745062828064,
            0.02968987636268139,
            0.03333263471722603,
            0.0009861936559900641,
        ),
        CENTRED,
        MoneyGame(jacoby=False),
        0.76,
        "Too good to double, pass",
        1.320866,
        2.282719,
    ),  # Lx0CwiK+xwQFCA
    (
        (
            0.6517678499221802,
            0.252099871635437,
            0.032591089606285095,
            0.07177845388650894,
            0.002596222795546055,
        ),
        CubeState(2, "mover"),
        MoneyGame(jacoby=True),
        0.76,
        "Redouble, take",
        0.761524,
        0.763047,
    ),  # wjP4ADiMZ/ABCQ
    (
        (
            0.6088094711303711,
            0.5353761911392212,
            0.015918608754873276,
            0.07372678071260452,
            0.0010267650941386819,
        ),
        CubeState(2, "mover"),
        MoneyGame(jacoby=True),
        0.76,
        "Redouble, pass",
        0.925508,
        1.091016,
    ),  # aGeAgUfvrIEICA
]


@pytest.mark.parametrize("probs, cube, game, efficiency, action, no_double, double_take", GOLDEN)
def test_gnubg_golden(probs, cube, game, efficiency, action, no_double, double_take):
    decision = cube_decision(torch.tensor([probs], dtype=torch.float64), cube, game, efficiency)
    assert action_label(int(decision.action[0]), cube) == action
    assert float(decision.no_double[0]) == pytest.approx(no_double, abs=5e-6)
    assert float(decision.double_take[0]) == pytest.approx(double_take, abs=5e-6)


# ---------------------------------------------------------------------------------------------------
# API


def test_efficiency_defaults():
    kinds = torch.tensor(
        [PositionKind.CONTACT, PositionKind.CRASHED, PositionKind.BEAROFF, PositionKind.OVER]
        + [PositionKind.RACE] * 4
    )
    pips = torch.tensor([0, 0, 30, 0, 20, 40, 80, 150])
    assert DEFAULT_EFFICIENCY.of(kinds, pips).tolist() == pytest.approx(
        [0.76, 0.76, 0.6, 0.0, 0.65, 0.7, 0.8, 0.8]
    )
    classic = CLASSIC_EFFICIENCY.of(torch.full((3,), int(PositionKind.RACE)), torch.tensor([30, 80, 130]))
    assert classic.tolist() == pytest.approx([0.6, 0.65, 0.7])


def test_numpy_in_numpy_out_and_per_row_states():
    probs = gammonish([0.3, 0.6, 0.8], gammon_share=0.2, loss_gammon_share=0.1)
    cubes = [CubeState(), CubeState(2, "mover"), CubeState(2, "opponent")]
    games = [MONEY, MatchGame(7, (2, 4)), MatchGame(5, (1, 1))]
    together = cube_decision(probs.numpy(), cubes, games, np.array([0.76, 0.6, 0.68]))
    assert isinstance(together.no_double, np.ndarray) and together.action.dtype == np.int64
    for row in range(3):
        alone = cube_decision(probs[row : row + 1], cubes[row], games[row], [0.76, 0.6, 0.68][row])
        assert together.action[row] == int(alone.action[0])
        assert together.no_double[row] == pytest.approx(float(alone.no_double[0]))
    assert math.isnan(together.no_double_mwc[0]) and not math.isnan(together.no_double_mwc[1])
    assert together.action[2] == CubeAction.NOT_AVAILABLE


def test_cubeful_equity_is_the_no_double_equity():
    probs = gammonish([0.3, 0.55, 0.9], gammon_share=0.3)
    for game in (MONEY, MatchGame(7, (1, 3))):
        decision = cube_decision(probs, CENTRED, game, 0.76)
        assert torch.allclose(cubeful_equity(probs, CENTRED, game, 0.76), decision.no_double)


def test_decide_from_equities_matches_cube_decision():
    probs = gammonish(torch.linspace(0.05, 0.95, 19), gammon_share=0.25, loss_gammon_share=0.15)
    for game in (MoneyGame(), MatchGame(9, (4, 2))):
        decision = cube_decision(probs, CENTRED, game, 0.76)
        again = decide_from_equities(decision.no_double, decision.double_take, CENTRED, game, probs[:, 1] > 0)
        assert torch.equal(again.action, decision.action)
        assert torch.allclose(again.optimal, decision.optimal)


def test_labels():
    assert action_label(CubeAction.DOUBLE_TAKE) == "Double, take"
    assert action_label(CubeAction.DOUBLE_TAKE, CubeState(4, "mover")) == "Redouble, take"
    assert action_label(CubeAction.NO_DOUBLE, CubeState(2, "mover")) == "No redouble, take"
    assert action_label(CubeAction.DOUBLE_BEAVER, CubeState(2, "mover")) == "Double, beaver"


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: CubeState(1, "white"), "unknown cube owner 'white'"),
        (lambda: CubeState(3), "power of two"),
        (lambda: cube_decision(torch.zeros(2, 4), CENTRED, MONEY), "5 outcomes"),
        (lambda: cube_decision(torch.zeros(2, 5), CENTRED, MONEY, 1.5), r"efficiency must be in \[0, 1\]"),
        (lambda: cube_decision(torch.zeros(2, 5), [CENTRED], MONEY), "1 given for 2 positions"),
    ],
)
def test_bad_inputs_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_wrong_state_types_raise_type_errors():
    with pytest.raises(TypeError, match="expected a MoneyGame or MatchGame"):
        cube_decision(torch.zeros(2, 5), CENTRED, "money")


def test_cube_owner_conversions_round_trip_both_ways():
    """One owner representation (from the side to move, as engine.xgid writes it); seats and GNU's
    match ID owners convert to it and back."""
    from bgtrain.cube import OWNERS, holder_seat, match_id_owner, owner_from_match_id, owner_seen_by
    from engine import match_id, xgid

    assert OWNERS == xgid.CUBE_OWNERS
    for seat in (0, 1):
        for holder in (None, 0, 1):
            owner = owner_seen_by(holder, seat)
            assert holder_seat(owner, seat) == holder
            # The other side sees the same cube flipped.
            assert owner_seen_by(holder, 1 - seat) == CubeState(1 if holder is None else 2, owner).flipped().owner
        for owner in OWNERS:
            written = match_id_owner(owner, seat)
            assert written in match_id.CUBE_OWNERS and owner_from_match_id(written, seat) == owner
    assert owner_seen_by(0, 0) == "mover" and owner_seen_by(1, 0) == "opponent" and owner_seen_by(None, 1) == "centred"
    with pytest.raises(ValueError, match="unknown cube owner"):
        holder_seat("player0", 0)
