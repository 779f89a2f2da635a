"""Codecs players exchange: GNU Backgammon position ID and match ID, XGID, and the ASCII board.

Every codec is checked in both directions: text -> value -> text for published IDs, and value -> text -> value
for random boards and states (checkers on both bars and borne off). Pinned values come from public documents,
cited where they are used. The error tests build bad keys with the small independent packers below rather
than with the code under test.
"""

from __future__ import annotations

import base64

import pytest
import torch
from helpers import board_from_counts
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.drawing as drawing_module
from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, flip_board, pip_counts
from engine.drawing import draw_board
from engine.match_id import MatchState, decode_match_id, encode_match_id
from engine.position_id import (
    decode_position_id,
    decode_position_ids,
    encode_position_id,
    encode_position_ids,
    with_checkers_in_hand,
    with_checkers_in_hand_rows,
)
from engine.rules import STANDARD, Rules
from engine.xgid import XgPosition, decode_xgid, encode_xgid

START_ID = "4HPwATDgc/ABMA"
START_XGID = "XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10"


# --- independent reference packers (for building invalid keys) ---------------------------------------------


def pack_position_key(
    opponent: dict[int, int], mover: dict[int, int], extra_bits: tuple[int, ...] = ()
) -> str:
    """A position ID from ``{place: count}`` per side (places 1..24 on that side's own numbering, 25 = bar),
    opponent first as gnubg writes it, with optional extra 1-bits at absolute key positions."""
    bits: list[int] = []
    for side in (opponent, mover):
        for place in range(1, 26):
            bits += [1] * side.get(place, 0) + [0]
    bits += [0] * (80 - len(bits))
    for position in extra_bits:
        bits[position] = 1
    key = bytes(sum(bits[8 * byte + i] << i for i in range(8)) for byte in range(10))
    return base64.b64encode(key).decode()[:14]


def pack_match_key(**fields: int) -> str:
    """A match ID from raw field codes (gnubg manual bit layout, plus gnubg's bit 66); unset fields are 0."""
    layout = {
        "cube_log2": (0, 4), "cube_owner": (4, 2), "player_on_roll": (6, 1), "crawford": (7, 1),
        "game_state": (8, 3), "turn": (11, 1), "double": (12, 1), "resign": (13, 2), "die1": (15, 3),
        "die2": (18, 3), "match_length": (21, 15), "score0": (36, 15), "score1": (51, 15), "jacoby_off": (66, 1),
        "trailing": (67, 5),
    }  # fmt: skip
    key = 0
    for name, value in fields.items():
        first_bit, width = layout[name]
        assert 0 <= value < 1 << width
        key |= value << first_bit
    return base64.b64encode(key.to_bytes(9, "little")).decode()


# --- strategies ----------------------------------------------------------------------------------------------


@st.composite
def boards(draw: st.DrawFn, checkers_per_side: int = 15) -> torch.Tensor:
    """A legal board from the side to move: each point empty or one colour, bars used, some checkers off."""
    owners = draw(st.lists(st.sampled_from([0, 1, -1]), min_size=24, max_size=24))
    board = [0] * 28
    for side, bar in ((1, MOVER_BAR), (-1, OPPONENT_BAR)):
        places = [point for point in range(1, 25) if owners[point - 1] == side] + [bar]
        for _ in range(draw(st.integers(0, checkers_per_side))):  # the rest are borne off
            board[draw(st.sampled_from(places))] += side
    return torch.tensor(board, dtype=torch.int8)


dice_pairs = st.one_of(st.just((0, 0)), st.tuples(st.integers(1, 6), st.integers(1, 6)))


@st.composite
def match_states(draw: st.DrawFn) -> MatchState:
    match_length = draw(st.one_of(st.just(0), st.integers(1, 32767)))
    score_limit = match_length if match_length else 32767
    return MatchState(
        cube_value=1 << draw(st.integers(0, 15)),
        cube_owner=draw(st.sampled_from(["centred", "player0", "player1"])),
        player_on_roll=draw(st.integers(0, 1)),
        crawford=draw(st.booleans()) if match_length else False,
        game_state=draw(st.sampled_from(["none", "playing", "over", "resigned", "dropped"])),
        turn=draw(st.integers(0, 1)),
        double_offered=draw(st.booleans()),
        resignation=draw(st.sampled_from(["none", "single", "gammon", "backgammon"])),
        dice=draw(dice_pairs),
        match_length=match_length,
        score=(draw(st.integers(0, score_limit)), draw(st.integers(0, score_limit))),
        jacoby=draw(st.booleans()),
    )


@st.composite
def xg_positions(draw: st.DrawFn) -> XgPosition:
    match_length = draw(st.one_of(st.just(0), st.integers(1, 25)))
    cube_action = draw(
        st.sampled_from(["none", "doubled"] + ([] if match_length else ["beavered", "raccooned"]))
    )
    max_cube_log2 = draw(st.integers(0, 15))
    cube_value = 1 << draw(st.integers(0, max_cube_log2))
    cube_owners = ["centred", "mover", "opponent"] if cube_value > 1 else ["centred"]
    if match_length:
        scores = (draw(st.integers(0, match_length - 1)), draw(st.integers(0, match_length - 1)))
        crawford = max(scores) == match_length - 1 and draw(st.booleans())
        jacoby = beaver = False
    else:
        scores = (draw(st.integers(0, 999)), draw(st.integers(0, 999)))
        crawford, jacoby, beaver = False, draw(st.booleans()), draw(st.booleans())
    return XgPosition(
        board=draw(boards()),
        dice=draw(dice_pairs) if cube_action == "none" else (0, 0),
        cube_value=cube_value,
        cube_owner=draw(st.sampled_from(cube_owners)),
        cube_action=cube_action,
        mover_score=scores[0],
        opponent_score=scores[1],
        match_length=match_length,
        crawford=crawford,
        jacoby=jacoby,
        beaver=beaver,
        max_cube=1 << max_cube_log2,
        mover_is_bottom=draw(st.booleans()),
    )


# --- position ID ---------------------------------------------------------------------------------------------


def test_start_position_id_both_ways():
    # GNU Backgammon manual, "A technical description of the Position ID": key E0 73 F0 01 30 E0 73 F0 01 30.
    assert encode_position_id(STANDARD.start_board()) == START_ID
    assert encode_position_id(STANDARD.start_board().tolist()) == START_ID
    assert base64.b64encode(bytes.fromhex("E073F00130E073F00130")).decode()[:14] == START_ID
    assert torch.equal(decode_position_id(START_ID), STANDARD.start_board())


# Which half of the key is the player on roll: these IDs are asymmetric, so they pin the order.
PINNED_POSITION_IDS = [
    # wildbg crates/engine/src/position/conversion.rs test "matching_ids": "X bar" (X = player on roll).
    ("zGbiIQgxH/AAWA", {1: 1, 3: -1, 4: 2, 6: 5, 8: -1, 12: -4, 13: 4, 15: -1, 17: -2, 19: -2, 20: -2,
                        22: -2, 24: 2, 25: 1}),
    # ... and "O off": the same with the opponent's blot on the mover's 3 point borne off (14 checkers left).
    ("zGbiIYCYD3gALA", {1: 1, 4: 2, 6: 5, 8: -1, 12: -4, 13: 4, 15: -1, 17: -2, 19: -2, 20: -2, 22: -2,
                        24: 2, 25: 1}),
    # pypi.org/project/backgammon/0.1.0: Backgammon("4OvgATDgc+QBUA", "cInpAAAAAAAA"), X on roll entering
    # from the bar after being hit (its first listed play is "bar/22 13/11").
    ("4OvgATDgc+QBUA", {1: -2, 6: 5, 8: 3, 11: 1, 12: -4, 13: 4, 17: -3, 18: -1, 19: -5, 24: 1, 25: 1}),
    # gnubg text board quoted in a public BgBoard.cpp (comment on crashed positions): X "On roll" with
    # 2-2-2-3-3-2 on its 3..8 points and one on the midpoint; O crashed, 8 on its ace and 5 on its deuce.
    ("/z4AADBsuxsEAA", {1: -2, 3: 2, 4: 2, 5: 2, 6: 3, 7: 3, 8: 2, 13: 1, 23: -5, 24: -8}),
]  # fmt: skip


@pytest.mark.parametrize("position_id, points", PINNED_POSITION_IDS)
def test_pinned_position_ids(position_id, points):
    board = decode_position_id(position_id)
    assert torch.equal(board, board_from_counts(points))
    assert encode_position_id(board) == position_id


def test_position_id_side_order_is_opponent_first():
    # A lone mover checker on its 1 point and nothing else: the mover's run comes second in the key.
    board = board_from_counts({1: 1})
    assert encode_position_id(board) == pack_position_key(opponent={}, mover={1: 1})
    assert encode_position_id(flip_board(board)) == pack_position_key(opponent={1: 1}, mover={})


@settings(max_examples=200, deadline=None)
@given(boards())
def test_position_id_round_trip_from_board(board):
    text = encode_position_id(board)
    assert len(text) == 14
    assert torch.equal(decode_position_id(text), board)
    assert encode_position_id(decode_position_id(text)) == text
    # The other side's view is another valid ID of the same position.
    assert torch.equal(decode_position_id(encode_position_id(flip_board(board))), flip_board(board))


def test_position_id_round_trip_bars_and_borne_off():
    board = board_from_counts({0: -3, 25: 2, 1: -2, 6: 4, 19: -5, 24: 1})  # both bars, 8 and 5 borne off
    assert torch.equal(decode_position_id(encode_position_id(board)), board)


HYPERGAMMON = Rules(name="hypergammon", start_points=((24, 1), (23, 1), (22, 1)))

POSITION_ID_ERRORS = [
    ("4HPwATDgc/ABM", "must be 14 characters, not 13"),
    ("4HPwATDgc/ABMA=", "must be 14 characters, not 15"),
    ("4HPwATDgc/AB!A", r"character '!' at 12 is not Base64"),
    ("4HPwATDgc/ABMB", "trailing bits past the 80-bit key"),
    (pack_position_key({}, {6: 16}), r"16 checkers for the player on roll \(at most 15 in backgammon\)"),
    (pack_position_key({19: 16}, {}), r"16 checkers for the opponent \(at most 15 in backgammon\)"),
    (pack_position_key({19: 1}, {6: 1}),
     r"point 6 of the player on roll \(the opponent's point 19\) holds checkers of both sides"),
    (pack_position_key({}, {}, extra_bits=(60,)), "trailing bits after the last place"),
    ("/////////////w", "the key ends after 0 of the 50 places"),
]  # fmt: skip


@pytest.mark.parametrize("text, message", POSITION_ID_ERRORS)
def test_position_id_errors(text, message):
    with pytest.raises(ValueError, match=message):
        decode_position_id(text)


# --- the batched position-ID codecs against the scalar ones ---------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(boards(), min_size=1, max_size=40))
def test_batched_position_ids_round_trip_against_the_scalar_codec(rows):
    board = torch.stack(rows)
    texts = [encode_position_id(row) for row in rows]
    assert encode_position_ids(board) == texts
    assert torch.equal(decode_position_ids(texts), board)
    assert encode_position_ids(decode_position_ids(texts)) == texts


@pytest.mark.parametrize("text, message", POSITION_ID_ERRORS)
def test_batched_decoder_raises_the_scalar_error_of_a_bad_id(text, message):
    # The bad ID in the middle of good ones: the same one-line message as the scalar decoder's.
    with pytest.raises(ValueError, match=message) as raised:
        decode_position_ids([START_ID, text, START_ID])
    with pytest.raises(ValueError) as scalar:
        decode_position_id(text)
    assert str(raised.value) == str(scalar.value) and "\n" not in str(raised.value)


def test_batched_decoder_against_the_scalar_one_on_damaged_ids():
    # Random one-character changes and cuts of valid IDs, in both rule sets: the batch of a valid ID and the
    # damaged one decodes to the scalar decoder's board, or raises its message.
    generator = torch.Generator().manual_seed(3)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=! "
    valid = encode_position_id(board_from_counts({0: -3, 25: 2, 1: -2, 6: 4, 19: -5, 24: 1}))
    for case in range(400):
        where = int(torch.randint(0, 14, (1,), generator=generator))
        choice = int(torch.randint(0, len(alphabet), (1,), generator=generator))
        text = valid[:where] + alphabet[choice] + valid[where + 1 :] if case % 4 else valid[: where + 3]
        for rules in (STANDARD, HYPERGAMMON):
            try:
                expected = decode_position_id(text, rules)
            except ValueError as error:
                with pytest.raises(ValueError) as raised:
                    decode_position_ids([START_ID if rules is STANDARD else encode_position_id(
                        HYPERGAMMON.start_board()), text], rules)
                assert str(raised.value) == str(error)
            else:
                assert torch.equal(decode_position_ids([text, text], rules), torch.stack([expected] * 2))


def test_checkers_in_hand_rows_against_the_scalar_function():
    dutch = Rules(name="dutch", start_points=(), start_in_hand=15, hit_needs_home_checker=True)
    board = torch.stack([torch.zeros(28, dtype=torch.int8), board_from_counts({1: 2, 24: -3})])
    hands = torch.tensor([[15, 15], [13, 12]])
    expected = torch.stack([with_checkers_in_hand(row, tuple(hand), dutch) for row, hand in zip(board, hands.tolist())])
    assert torch.equal(with_checkers_in_hand_rows(board, hands, dutch), expected)
    for bad, rules in ((torch.tensor([[15, 15], [14, 12]]), dutch), (hands, STANDARD)):
        with pytest.raises(ValueError) as raised:
            with_checkers_in_hand_rows(board, bad, rules)
        with pytest.raises(ValueError) as scalar:
            for row, hand in zip(board, bad.tolist()):
                with_checkers_in_hand(row, tuple(hand), rules)
        assert str(raised.value) == str(scalar.value)


def test_position_id_checker_limit_follows_the_variant():
    with pytest.raises(ValueError, match=r"15 checkers for the player on roll \(at most 3 in hypergammon\)"):
        decode_position_id(START_ID, rules=HYPERGAMMON)
    hyper_start = HYPERGAMMON.start_board()
    assert torch.equal(decode_position_id(encode_position_id(hyper_start), rules=HYPERGAMMON), hyper_start)


def test_position_id_encode_errors():
    in_hand = board_from_counts({MOVER_IN_HAND: 15, 27: -15})
    with pytest.raises(ValueError, match="checkers in hand"):
        encode_position_id(in_hand)
    with pytest.raises(ValueError, match="16 checkers for the player on roll"):
        encode_position_id(board_from_counts({6: 16}))
    with pytest.raises(ValueError, match="28 entries"):
        encode_position_id([0] * 26)


# --- match ID ------------------------------------------------------------------------------------------------

PINNED_MATCH_IDS = [
    # GNU Backgammon manual, "A technical description of the Match ID": score 2-4 in a 9 point match, player 0
    # holds a 2-cube, player 1 has just rolled 52. Key 41 89 2A 01 20 00 20 00 00.
    ("QYkqASAAIAAA", MatchState(cube_value=2, cube_owner="player0", player_on_roll=1, game_state="playing",
                                turn=1, dice=(5, 2), match_length=9, score=(2, 4))),
    # GNU Backgammon manual, 1 Introduction: a new money game, "gnubg rolls 3, anthon rolls 1", gnubg (player 0,
    # O) to play 31 with the cube centred at 1. Shown as "Match ID : MIEFAAAAAAAA".
    ("MIEFAAAAAAAA", MatchState(player_on_roll=0, turn=0, dice=(3, 1))),
    # GNU IDs of the opening position in the pipandlove bgprint README: "gnubg=4HPwATDgc/ABMA:cAkAAAAAAAAA",
    # a money game with player 1 on roll, not yet rolled.
    ("cAkAAAAAAAAA", MatchState(player_on_roll=1, turn=1)),
    # gnubg text board (BgBoard.cpp comment above): "Match ID : cAngAAAAAAAE", "7 point match (Cube: 1)",
    # X (player 1) "On roll", 0 points each. Its last character sets key bit 66, which gnubg's matchid.c
    # (since 2013) writes as "Jacoby rule off"; the manual's 66-bit table predates it.
    ("cAngAAAAAAAE", MatchState(player_on_roll=1, turn=1, match_length=7, jacoby=False)),
]  # fmt: skip


@pytest.mark.parametrize("match_id, state", PINNED_MATCH_IDS)
def test_pinned_match_ids(match_id, state):
    assert decode_match_id(match_id) == state
    assert encode_match_id(state) == match_id


def test_manual_match_key_bytes():
    assert base64.b64encode(bytes.fromhex("41892A012000200000")).decode() == "QYkqASAAIAAA"


@settings(max_examples=200, deadline=None)
@given(match_states())
def test_match_id_round_trip_from_state(state):
    text = encode_match_id(state)
    assert len(text) == 12
    assert decode_match_id(text) == state
    assert encode_match_id(decode_match_id(text)) == text


MATCH_ID_ERRORS = [
    ("QYkqASAAIAA", "must be 12 characters, not 11"),
    ("QYkqASAAIA.A", r"character '\.' at 10 is not Base64"),
    (pack_match_key(cube_owner=3, game_state=1, match_length=5, score0=6),
     "score 6 of player 0 is beyond the match length 5"),
    (pack_match_key(cube_owner=3, game_state=1, match_length=5, score1=9),
     "score 9 of player 1 is beyond the match length 5"),
    (pack_match_key(cube_owner=3, game_state=1, die1=7, die2=3), r"dice \(7, 3\) out of range"),
    (pack_match_key(cube_owner=3, game_state=1, die1=4), r"dice \(4, 0\): both dice are rolled or neither"),
    (pack_match_key(cube_owner=2, game_state=1), "cube owner code 2 is not 0, 1 or 3"),
    (pack_match_key(cube_owner=3, game_state=5), "game state code 5 is not 0..4"),
    (pack_match_key(cube_owner=3, game_state=1, crawford=1), "money game .* has no Crawford game"),
    (pack_match_key(cube_owner=3, game_state=1, trailing=1), "trailing bits past the 67-bit key"),
]  # fmt: skip


@pytest.mark.parametrize("text, message", MATCH_ID_ERRORS)
def test_match_id_errors(text, message):
    with pytest.raises(ValueError, match=message):
        decode_match_id(text)


def test_match_state_validates_on_construction():
    with pytest.raises(ValueError, match="cube value 3 is not a power of two"):
        MatchState(cube_value=3)
    with pytest.raises(ValueError, match="cube owner 'nobody'"):
        MatchState(cube_owner="nobody")
    with pytest.raises(ValueError, match="beyond the match length 3"):
        MatchState(match_length=3, score=(4, 0))


# --- XGID ----------------------------------------------------------------------------------------------------


def test_start_xgid_both_ways():
    position = decode_xgid(START_XGID)
    assert torch.equal(position.board_tensor(), STANDARD.start_board())
    assert position == XgPosition(board=STANDARD.start_board())  # money, cube 1 centred, limit 1024
    assert encode_xgid(position) == START_XGID
    assert decode_xgid(START_XGID.removeprefix("XGID=")) == position
    assert encode_xgid(position, prefix=False) == START_XGID.removeprefix("XGID=")


def cut_at_right_edge(lines: list[str]) -> list[str]:
    """Board lines up to the right edge (column 44): what XG and our drawing put beside it differs."""
    return [line[:44] for line in lines]


# eXtreme Gammon 2.10 text exports in kevung/xgparser test/2025-11-04/*_EN.txt (X = bottom player), with the
# facts XG printed beside each board.
XG_CHECKER_PLAY = (
    "XGID=-B-CBBB---a---A---ABcbbbd-:1:-1:1:21:3:6:0:7:10",  # 01_checkerPosition_EN.txt
    {
        "dice": (2, 1),
        "cube_value": 2,
        "cube_owner": "opponent",
        "mover_score": 3,
        "opponent_score": 6,
        "match_length": 7,
    },
    (111, 52),  # "Pip count  X: 111  O: 52", "Cube: 2, O own cube", "X to play 21", "Score is X:3 O:6 7 pt"
    """
 +13-14-15-16-17-18------19-20-21-22-23-24-+
 |    X           X |   | X  O  O  O  O  O |
 |                  |   | X  O  O  O  O  O |
 |                  |   |    O           O |
 |                  |   |                O |
 |                  |   |                  |
 |                  |BAR|                  |
 |                  |   |                  |
 |                  |   |                  |
 |                  |   |          X       |
 |                  |   | X  X  X  X     X |
 |       O          |   | X  X  X  X     X |
 +12-11-10--9--8--7-------6--5--4--3--2--1-+
""",
)
XG_NO_DOUBLE = (
    "XGID=---BBaB-BbA-bC-b--BdAca---:0:0:1:00:0:5:0:9:10",  # 02_NDT_EN.txt
    {
        "dice": (0, 0),
        "cube_value": 1,
        "cube_owner": "centred",
        "mover_score": 0,
        "opponent_score": 5,
        "match_length": 9,
    },
    (147, 137),  # "Pip count  X: 147  O: 137", "Score is X:0 O:5 9 pt.(s) match", "X on roll, cube action"
    """
 +13-14-15-16-17-18------19-20-21-22-23-24-+
 | X     O        X |   | O  X  O  O       |
 | X     O        X |   | O     O          |
 | X                |   | O     O          |
 |                  |   | O                |
 |                  |   |                  |
 |                  |BAR|                  |
 |                  |   |                  |
 |                  |   |                  |
 |                  |   |                  |
 | O        O  X    |   | X     X  X       |
 | O     X  O  X    |   | X  O  X  X       |
 +12-11-10--9--8--7-------6--5--4--3--2--1-+
""",
)
XG_NO_REDOUBLE = (
    "XGID=---BADB------------bf---a-:1:1:1:00:4:0:0:7:10",  # 05_NRT_EN.txt
    {
        "dice": (0, 0),
        "cube_value": 2,
        "cube_owner": "mover",
        "mover_score": 4,
        "opponent_score": 0,
        "match_length": 7,
    },
    (42, 43),  # "Pip count  X: 42  O: 43", "Cube: 2, X own cube", "Score is X:4 O:0 7 pt.(s) match"
    """
 +13-14-15-16-17-18------19-20-21-22-23-24-+
 |                  |   | O  O           O |
 |                  |   | O  O             |
 |                  |   |    O             |
 |                  |   |    O             |
 |                  |   |    6             |
 |                  |BAR|                  |
 |                  |   |                  |
 |                  |   |    X             |
 |                  |   |    X             |
 |                  |   | X  X     X       |
 |                  |   | X  X  X  X       |
 +12-11-10--9--8--7-------6--5--4--3--2--1-+
""",
)


@pytest.mark.parametrize("xgid, facts, pips, drawing", [XG_CHECKER_PLAY, XG_NO_DOUBLE, XG_NO_REDOUBLE])
def test_pinned_xg_exports(xgid, facts, pips, drawing):
    position = decode_xgid(xgid)
    for name, value in facts.items():
        assert getattr(position, name) == value, name
    assert position.mover_is_bottom and not position.crawford and position.max_cube == 1024
    assert tuple(int(count) for count in pip_counts(position.board_tensor())) == pips
    assert encode_xgid(position) == xgid
    # Our drawing of the decoded board matches the board XG drew, column for column.
    drawn = draw_board(position.board).splitlines()[1:]  # after the position ID line
    assert cut_at_right_edge(drawn) == cut_at_right_edge(drawing.strip("\n").splitlines())


def test_pinned_xgid_money_jacoby_with_opponent_on_bar():
    # Tim Chow, rec.games.backgammon "Blitz cube 6" (1 Sep 2011), an XG export: "Money session, Jacoby",
    # "Pipcount X: 136 O: 160", "Cube : 1", "X on roll, cube action"; O has a checker on the bar.
    xgid = "XGID=a--B-BCbBAA-cB---bbeAA----:0:0:1:00:0:0:1:0:10"
    position = decode_xgid(xgid)
    assert (position.jacoby, position.beaver, position.match_length) == (True, False, 0)
    assert (position.cube_value, position.cube_owner, position.cube_action) == (1, "centred", "none")
    assert position.board[OPPONENT_BAR] == -1 and position.board[MOVER_BAR] == 0
    assert tuple(int(count) for count in pip_counts(position.board_tensor())) == (136, 160)
    assert encode_xgid(position) == xgid


def test_xgid_top_player_on_roll_is_the_flipped_view():
    # The pipandlove bgprint README's example has the top player on roll (turn -1).
    top = "XGID=a--AaBBABBa-cA---cbbbB-B--:1:1:-1:00:2:5:0:7:10"
    bottom = "XGID=a--AaBBABBa-cA---cbbbB-B--:1:1:1:00:2:5:0:7:10"
    as_top, as_bottom = decode_xgid(top), decode_xgid(bottom)
    assert torch.equal(as_top.board_tensor(), flip_board(as_bottom.board_tensor()))
    assert not as_top.mover_is_bottom
    # Cube position 1 and the scores are the bottom player's: the opponent's once the top player moves.
    assert (as_top.cube_owner, as_top.mover_score, as_top.opponent_score) == ("opponent", 5, 2)
    assert (as_bottom.cube_owner, as_bottom.mover_score, as_bottom.opponent_score) == ("mover", 2, 5)
    assert encode_xgid(as_top) == top and encode_xgid(as_bottom) == bottom


def test_xgid_cube_actions_round_trip():
    for code, action in (("D", "doubled"), ("B", "beavered"), ("R", "raccooned")):
        xgid = f"XGID=-b----E-C---eE---c-e----B-:1:0:-1:{code}:0:0:3:0:10"
        position = decode_xgid(xgid)
        assert (position.cube_action, position.dice, position.jacoby, position.beaver) == (
            action,
            (0, 0),
            True,
            True,
        )
        assert encode_xgid(position) == xgid


@settings(max_examples=200, deadline=None)
@given(xg_positions())
def test_xgid_round_trip_from_position(position):
    text = encode_xgid(position)
    assert decode_xgid(text) == position
    assert encode_xgid(decode_xgid(text)) == text
    # The position ID of the same board agrees with the XGID's board.
    assert torch.equal(decode_position_id(encode_position_id(position.board)), position.board_tensor())


XGID_ERRORS = [
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0", "9 fields, not 10"),
    ("XGID=-b----E-C---eE---c-e----B:0:0:1:00:0:0:0:0:10", "position has 25 characters, not 26"),
    ("XGID=-b----E-C---eE---c-e--#-B-:0:0:1:00:0:0:0:0:10", "position character '#' at 22"),
    ("XGID=Bb----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10", "bottom player's checkers on the top player's bar"),
    ("XGID=-b----E-C---eE---c-e----Bb:0:0:1:00:0:0:0:0:10", "top player's checkers on the bottom player's bar"),
    ("XGID=-b----F-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10",
     r"16 checkers for the bottom player \(at most 15 in backgammon\)"),
    ("XGID=-b----E-C---eE---c-f----B-:0:0:1:00:0:0:0:0:10",
     r"16 checkers for the top player \(at most 15 in backgammon\)"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:0:00:0:0:0:0:10", "turn '0' is not 1"),
    ("XGID=-b----E-C---eE---c-e----B-:1:2:1:00:0:0:0:0:10", "cube position '2' is not 1, 0 or -1"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:70:0:0:0:0:10", "dice '70' out of range"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:X:0:0:0:0:10", "dice 'X' out of range"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:7:0:0:7:10", "score 7 of the mover is not below the match length 7"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:-1:00:0:9:0:7:10",
     "score 9 of the mover is not below the match length 7"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:2:7:10", "Crawford field 2 in match play"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:1:7:10", "Crawford game needs a side 1 point from winning"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:4:0:10", "Jacoby/beaver field 4 in money play"),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:07:10", "match length '07' is not a non-negative integer"),
    ("XGID=-b----E-C---eE---c-e----B-:11:1:1:00:0:0:0:0:10", "cube value 2048 is above the cube limit 1024"),
    ("XGID=-b----E-C---eE---c-e----B-:0:1:1:00:0:0:0:0:10", "an owned cube has a value of at least 2"),
    ("XGID=-b----E-C---eE---c-e----B-:1:0:1:B:0:0:0:7:10", "'beavered' is for money play"),
    ("XGID=-b----E-C---eE---c-e----B-:16:0:1:00:0:0:0:0:10", r"cube value 2\^16 is above 2\^15"),
]  # fmt: skip


@pytest.mark.parametrize("text, message", XGID_ERRORS)
def test_xgid_errors(text, message):
    with pytest.raises(ValueError, match=message):
        decode_xgid(text)


def test_xgid_checker_limit_follows_the_variant():
    with pytest.raises(ValueError, match=r"15 checkers for the bottom player \(at most 3 in hypergammon\)"):
        decode_xgid(START_XGID, rules=HYPERGAMMON)


def test_xg_position_rejects_checkers_in_hand():
    with pytest.raises(ValueError, match="checkers in hand"):
        XgPosition(board=board_from_counts({MOVER_IN_HAND: 1}))


# --- ASCII board ---------------------------------------------------------------------------------------------


def test_draw_start_position():
    drawing = draw_board(STANDARD.start_board(), (3, 1))
    lines = drawing.splitlines()
    assert lines[0] == " Position ID: 4HPwATDgc/ABMA"
    assert lines[1] == " +13-14-15-16-17-18------19-20-21-22-23-24-+     O: 167 pips, 0 off"
    assert lines[2] == " | X           O    |   | O              X |"
    assert lines[6] == " | X                |   | O                |"
    assert lines[7] == " |                  |BAR|                  |     X to play 31"
    assert lines[12] == " | O           X    |   | X              O |"
    assert lines[13] == " +12-11-10--9--8--7-------6--5--4--3--2--1-+     X: 167 pips, 0 off"
    assert len(lines) == 14 and all(line == line.rstrip() for line in lines)
    # The module docstring shows this very drawing.
    assert "\n".join("    " + line for line in lines) in drawing_module.__doc__


def test_draw_bars_borne_off_tall_stacks_and_in_hand():
    board = board_from_counts({0: -3, 25: 12, 3: 2, 20: -11})  # 1 off each side
    lines = draw_board(board, caption="bars", mover="W", opponent="B").splitlines()
    assert lines[0] == " bars"
    assert lines[3] == " |                  | B |    B             | B"  # opponent's bar, 1 off
    assert lines[7] == " |                  |   |   11             |"
    assert lines[9] == " |                  |12 |                  |"
    assert lines[-2] == " |                  | W |          W       | W"
    assert lines[-1].endswith("W: 306 pips, 1 off")
    in_hand = board_from_counts({MOVER_IN_HAND: 14, 27: -15, 6: 1})
    drawing = draw_board(in_hand)
    assert "Position ID: none (checkers in hand)" in drawing and "In hand: X 14, O 15" in drawing
