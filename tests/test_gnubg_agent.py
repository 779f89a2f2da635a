"""GNU Backgammon as an opponent: the board conversion, pinned on known position IDs and checked from
both sides, and gnubg's legal moves against the engine's. Skipped without GNU Backgammon's bindings
(``pip install gnubg-nn``, or ``pip install gnubg``)."""

from __future__ import annotations

import pytest
import torch
from helpers import random_boards

from bgtrain.arena.agents import PubevalAgent
from bgtrain.arena.duel import play_duel
from bgtrain.arena.gnubg import (
    GnubgAgent,
    apply_gnubg_move,
    from_gnubg_board,
    load_bindings,
    locate_afterstates,
    to_gnubg_board,
)
from engine.board import flip_board
from engine.movegen import legal_afterstates
from engine.position_id import decode_position_id, encode_position_id
from engine.random_play import sample_positions
from engine.rules import STANDARD

try:
    bindings = load_bindings()
except ValueError:
    pytest.skip("GNU Backgammon's Python bindings are not installed", allow_module_level=True)



# Asymmetric IDs whose boards are drawn in tests/test_codecs.py (sources there): the start position
# cannot tell the two sides apart, these can.
PINNED_IDS = ["4HPwATDgc/ABMA", "zGbiIQgxH/AAWA", "zGbiIYCYD3gALA", "4OvgATDgc+QBUA", "/z4AADBsuxsEAA"]


@pytest.mark.parametrize("position_id", PINNED_IDS)
def test_pinned_ids_convert_both_ways_from_both_sides(position_id):
    board = decode_position_id(position_id)
    for view in (board, flip_board(board)):
        ours = encode_position_id(view)
        converted = to_gnubg_board(view.tolist())
        assert bindings.position_id(converted) == ours
        assert from_gnubg_board(converted) == tuple(view.tolist())
    assert bindings.position_id(to_gnubg_board(board.tolist())) == position_id


@pytest.mark.parametrize("position_id", PINNED_IDS)
def test_gnubg_reads_pinned_ids_as_we_do(position_id):
    gnubg_nn = pytest.importorskip("gnubg_nn")  # only gnubg-nn turns an ID into a board
    board = decode_position_id(position_id)
    assert [list(side) for side in gnubg_nn.board_from_position_id(position_id)] == to_gnubg_board(board.tolist())


def test_random_boards_have_the_same_position_id_from_both_sides():
    boards = random_boards(300, seed=7)  # checkers on both bars and borne off included
    for board in boards:
        for view in (board, flip_board(board)):
            converted = to_gnubg_board(view.tolist())
            assert bindings.position_id(converted) == encode_position_id(view)
            assert from_gnubg_board(converted) == tuple(view.tolist())


def test_gnubg_moves_the_side_on_roll():
    # X (on roll) has one checker on its 24 point and nothing else; O has all 15 on its own 1 point
    # ... as seen from X. gnubg must move X's checker, never O's.
    board = [0] * 28
    board[24] = 1
    board[1] = -15  # O's checkers on X's 1 point (O's 24 point)
    steps = bindings.best_move(to_gnubg_board(board), 6, 5, 0)
    after = apply_gnubg_move(board, steps)
    assert after[24] == 0 and after[13] == 1 and after[1] == -15


def test_gnubg_generates_the_engines_afterstates():
    gnubg = pytest.importorskip("gnubg_nn")  # only gnubg-nn lists every legal move
    boards, dice = sample_positions(150, 11, STANDARD, "cpu")
    afterstates = legal_afterstates(boards, dice, STANDARD)
    rows = afterstates.boards.tolist()
    for index in range(boards.shape[0]):
        board, roll = boards[index].tolist(), dice[index].tolist()
        keys = gnubg.moves(to_gnubg_board(board), roll[0], roll[1])
        theirs = {from_gnubg_board(gnubg.board_from_position_key(key)) for key in keys} or {tuple(board)}
        start, count = int(afterstates.offsets[index]), int(afterstates.counts[index])
        assert theirs == {tuple(row) for row in rows[start : start + count]}, encode_position_id(boards[index])


@pytest.mark.parametrize("ply", [0, 1])
def test_best_moves_are_legal_afterstates(ply):
    boards, dice = sample_positions(40 if ply else 200, 13, STANDARD, "cpu")
    afterstates = legal_afterstates(boards, dice, STANDARD)
    chosen = GnubgAgent(ply).best_boards(boards, dice)
    found = locate_afterstates(chosen, afterstates, torch.arange(boards.shape[0]))
    assert bool((found >= 0).all())


def test_gnubg_beats_pubeval_in_a_short_match():
    # The calibration figure (about +0.63 points per game over thousands of games) is measured by
    # scripts/bench_agents.py; here only that a match runs and gnubg comes out ahead.
    result = play_duel(GnubgAgent(0), PubevalAgent(), 60, seed=1)
    assert result.games == 60
    assert result.points_per_game > 0.0
