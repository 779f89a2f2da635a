"""Match equity tables: the shipped Kazaross-XG2 file, parsing any GNU-format file, and match winning chances."""

from __future__ import annotations

import math

import pytest

from bgtrain.cube import (
    CubeState,
    MatchGame,
    MoneyGame,
    emg_to_mwc,
    gammon_prices,
    match_winning_chance,
    mwc_to_emg,
)
from bgtrain.cube.met import MAX_MATCH_LENGTH, default_met, load_met, parse_met

# Values copied from bgtrain/data/met/Kazaross-XG2.xml: (away, opponent away) -> MWC.
PINNED_PRE_CRAWFORD = {
    (1, 1): 0.5,
    (1, 2): 0.67736,
    (2, 1): 0.32264,
    (1, 25): 0.99905,
    (2, 3): 0.59947,
    (3, 2): 0.40053,
    (4, 3): 0.4285,
    (5, 3): 0.35205,
    (7, 7): 0.5,
    (25, 25): 0.5,
}
# Trailer away -> the trailer's MWC against a leader 1-away, post-Crawford.
PINNED_POST_CRAWFORD = {1: 0.5, 2: 0.48803, 3: 0.32264, 4: 0.31002, 5: 0.19012, 25: 0.00123}


def small_met(
    rows: str = "<row><me>0.5</me><me>0.7</me></row><row><me>0.3</me><me>0.5</me></row>",
    post: str = '<post-crawford-table type="explicit"><row><me>0.5</me><me>0.49</me></row></post-crawford-table>',
    length: str = "2",
    pre_attributes: str = 'type="explicit"',
) -> str:
    return (
        f"<?xml version='1.0'?><met><info><name>tiny</name><description>test</description><length>{length}</length>"
        f"</info><pre-crawford-table {pre_attributes}>{rows}</pre-crawford-table>{post}</met>"
    )


def test_default_table_matches_the_file():
    met = default_met()
    assert met.name == "Kazaross XG2 25 point MET"
    assert met.native_length == 25
    for (away, opponent_away), mwc in PINNED_PRE_CRAWFORD.items():
        assert met.pre(away, opponent_away) == mwc
    for trailer_away, mwc in PINNED_POST_CRAWFORD.items():
        assert met.post(trailer_away) == mwc


def test_pre_crawford_entries_are_complementary_and_monotone():
    met = default_met()
    for away in range(1, MAX_MATCH_LENGTH + 1):
        for opponent_away in range(1, MAX_MATCH_LENGTH + 1):
            total = met.pre(away, opponent_away) + met.pre(opponent_away, away)
            # Extrapolated diagonal entries are erf(6 / sqrt(2)) / 2 = 0.5 - 1e-9, as in GNU Backgammon.
            assert total == pytest.approx(1.0, abs=1e-8)
        for opponent_away in range(1, MAX_MATCH_LENGTH):
            # Needing fewer points than the opponent never hurts.
            assert met.pre(away, opponent_away + 1) >= met.pre(away, opponent_away) - 1e-12


def test_extension_beyond_the_file_follows_gnu_backgammon():
    met = default_met()
    assert met.max_length == MAX_MATCH_LENGTH
    # matchequity.c initPostCrawfordMET: a quarter of the trailer's wins are gammons.
    expected = 0.25 * 0.5 * met.post(22) + 0.75 * 0.5 * met.post(24)
    assert met.post(26) == pytest.approx(expected)
    # ExtendMET: equal scores are even; the normal model is symmetric.
    assert met.pre(40, 40) == pytest.approx(0.5, abs=1e-6)
    assert 0.0 < met.pre(30, 26) < 0.5


def test_a_user_file_loads(tmp_path):
    path = tmp_path / "tiny.xml"
    path.write_text(small_met())
    met = load_met(path)
    assert met.pre(1, 2) == 0.7 and met.pre(2, 1) == 0.3 and met.post(2) == 0.49
    game = MatchGame(2, (0, 0), met=met)
    assert match_winning_chance(game) == 0.5
    assert game.mwc_after(1) == 0.7


@pytest.mark.parametrize(
    "text, message",
    [
        ("<met><info>", "not well-formed XML"),
        ("<table/>", "root element is <table>"),
        (small_met(length="two"), "not a whole number"),
        (small_met(length="3"), "has 2 rows, expected 3"),
        (
            small_met(rows="<row><me>0.5</me><me>0.7</me></row><row><me>0.3</me></row>"),
            "row 2 has 1 <me> values",
        ),
        (
            small_met(rows="<row><me>0.5</me><me>x</me></row><row><me>0.3</me><me>0.5</me></row>"),
            "not a number",
        ),
        (
            small_met(rows="<row><me>0.5</me><me>1.7</me></row><row><me>0.3</me><me>0.5</me></row>"),
            "not a probability",
        ),
        (
            small_met(rows="<row><me>0.5</me><me>0.7</me></row><row><me>0.4</me><me>0.5</me></row>"),
            "add up to 1",
        ),
        (small_met(pre_attributes='type="zadeh"'), "only explicit tables"),
        (small_met(post=""), "no <post-crawford-table>"),
        (
            small_met(
                post='<post-crawford-table player="0"><row><me>0.5</me><me>0.49</me></row></post-crawford-table>'
                '<post-crawford-table player="1"><row><me>0.5</me><me>0.47</me></row></post-crawford-table>'
            ),
            "differ between players",
        ),
        (
            small_met(post='<post-crawford-table player="0"><row><me>0.5</me></row></post-crawford-table>'),
            "one each for players",
        ),
    ],
)
def test_malformed_tables_raise_clear_errors(text, message):
    with pytest.raises(ValueError, match=message) as error:
        parse_met(text, source="bad.xml")
    assert "bad.xml" in str(error.value)


def test_missing_file_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="cannot be read"):
        load_met(tmp_path / "absent.xml")


def test_match_winning_chances_at_scores():
    met = default_met()
    # 7 points, mover 2 (5-away), opponent 4 (3-away).
    game = MatchGame(7, (2, 4))
    assert match_winning_chance(game) == met.pre(5, 3)
    assert game.mwc_after(1) == met.pre(4, 3)
    assert game.mwc_after(-2) == met.pre(5, 1)  # the opponent reaches 1-away: the Crawford game comes next
    assert game.mwc_after(5) == 1.0 and game.mwc_after(-3) == 0.0
    # The Crawford game and the post-Crawford games that follow it.
    crawford = MatchGame(7, (6, 3), crawford=True)
    assert match_winning_chance(crawford) == met.pre(1, 4)
    assert crawford.mwc_after(-1) == pytest.approx(1.0 - met.post(3))
    post = MatchGame(7, (6, 3))
    assert post.post_crawford and match_winning_chance(post) == pytest.approx(1.0 - met.post(4))
    assert MatchGame(7, (3, 6)).mwc_after(1) == met.post(3)


def test_equity_scale_conversion_round_trips():
    game = MatchGame(9, (3, 5))
    for value in (1, 2, 4):
        assert mwc_to_emg(game.mwc_after(value), game, value) == pytest.approx(1.0)
        assert mwc_to_emg(game.mwc_after(-value), game, value) == pytest.approx(-1.0)
        for emg in (-1.7, -0.3, 0.0, 0.45, 1.2):
            assert mwc_to_emg(emg_to_mwc(emg, game, value), game, value) == pytest.approx(emg)


def test_gammon_prices():
    assert gammon_prices(MoneyGame(jacoby=False)).win_gammon == 1.0
    assert gammon_prices(MoneyGame(jacoby=True)).lose_gammon == 0.0
    assert gammon_prices(MoneyGame(jacoby=True), CubeState(2, "mover")).win_gammon == 1.0
    # Double match point: a gammon is worth nothing more than a win.
    dmp = gammon_prices(MatchGame(5, (4, 4)))
    assert dmp == type(dmp)(0.0, 0.0, 0.0, 0.0)
    # At 2-away 4-away with the cube on 2 the mover's gammon wins nothing extra, the opponent's wins it all.
    game = MatchGame(7, (5, 3))
    prices = gammon_prices(game, CubeState(2, "mover"))
    assert prices.win_gammon == 0.0
    half_span = (game.mwc_after(2) - game.mwc_after(-2)) / 2
    assert prices.lose_gammon == pytest.approx((game.mwc_after(-2) - game.mwc_after(-4)) / half_span)
    assert not math.isnan(prices.lose_backgammon)


@pytest.mark.parametrize(
    "length, score, crawford, message",
    [
        (7, (7, 3), False, "beyond a 7-point match"),
        (7, (2, 9), False, "beyond a 7-point match"),
        (7, (-1, 0), False, "must be >= 0"),
        (7, (3, 3), True, "cannot be the Crawford game"),
        (7, (6, 6), True, "cannot be the Crawford game"),
        (0, (0, 0), False, "match length must be >= 1"),
        (65, (0, 0), False, "longer than the match equity table"),
    ],
)
def test_bad_match_states_raise(length, score, crawford, message):
    with pytest.raises(ValueError, match=message):
        MatchGame(length, score, crawford)
