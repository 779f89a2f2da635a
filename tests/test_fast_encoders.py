"""The encoders' native CPU fast path (``bgtrain.model.fast_encoders``) against their torch code, bit for bit: on
100,000 positions from random play of whole games (bar, bear-off and crashed positions among them), on
synthetic boards (checkers in hand, 10 checkers a side), on drawn boards, and on the one-column probes
the first-layer tables are read from; and where the fast path must step aside (tracing, other dtypes,
no kernel)."""

from __future__ import annotations

import sys
import warnings

import pytest
import torch
from helpers import board_from_drawing, compile_mode, random_boards

from bgtrain.model import fast_encoders
from bgtrain.model.encoding import ENCODERS, column_probes
from engine.board import MOVER_BAR, OPPONENT_BAR, borne_off, flip_board
from engine.position_kinds import PositionKind, position_phases
from engine.random_play import sample_positions
from engine.rules import STANDARD, Rules

if fast_encoders.native_kernel() is None:
    pytest.skip("the native encoder kernel is not built (pip install -e .)", allow_module_level=True)

FAST = ("gnubg_contact", "gnubg_race", "tesauro_plus", "tesauro198")
SHORT = Rules(name="short", start_points=((6, 4), (8, 3), (13, 3)))  # 10 checkers a side

DRAWN = [
    # The opening.
    """
    13  14  15  16  17  18 | 19  20  21  22  23  24
    X5   .   .   .  O3   . | O5   .   .   .   .  X2
    O5   .   .   .  X3   . | X5   .   .   .   .  O2
    12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # Two of ours on the bar against a 5-point board with a blot; blots everywhere to hit.
    """
    13  14  15  16  17  18 | 19  20  21  22  23  24
    X3   .  O1   .   .  X1 | O2  O2  O1  O2  O2  O2
    O2   .   .  X1   .  X2 | X3   .  X1   .   .   .
    12  11  10   9   8   7 |  6   5   4   3   2   1
    bar X2 O1
    """,
    # One of ours on the bar, indirect shots and double shots at the opponent's blots.
    """
    13  14  15  16  17  18 | 19  20  21  22  23  24
    X4   .   .  O1   .   . | O3   .  O2   .  O1  X2
    O4   .   .  X1  O1  X2 | X4   .   .   .  O2   .
    12  11  10   9   8   7 |  6   5   4   3   2   1
    bar X1 O0
    """,
    # Crashed: our home board stripped to the low points, theirs holding an anchor; checkers off.
    """
    13  14  15  16  17  18 | 19  20  21  22  23  24
     .   .   .   .   .   . | O5  O4   .   .   .  O2
     .   .   .   .   .   . |  .   .   .  X2  X4  X3
    12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # Bearing off against a back game: two anchors, blots in our home board.
    """
    13  14  15  16  17  18 | 19  20  21  22  23  24
     .   .   .   .   .   . | O4  O3   .   .  O2  O2
     .   .   .   .   .   . | X3  X1  X2  X1  O2  O2
    12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # The game over: we have borne off every checker.
    """
    13  14  15  16  17  18 | 19  20  21  22  23  24
     .   .   .   .   .   . | O5  O5   .   .   .   .
     .   .   .   .   .   . |  .   .   .   .   .   .
    12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # A race, both sides all home.
    """
    13  14  15  16  17  18 | 19  20  21  22  23  24
     .   .   .   .   .   . | O5  O3  O3  O2  O1  O1
     .   .   .   .   .   . | X2  X2  X3  X3  X3  X2
    12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    # Checkers in hand (variants that start off the board), on both sides.
    """
    13  14  15  16  17  18 | 19  20  21  22  23  24
     .   .   .   .   .   . | O2   .   .   .   .  X1
     .   .   .   .   .  X2 |  .   .   .   .   .  O1
    12  11  10   9   8   7 |  6   5   4   3   2   1
    bar X1 O1
    hand X11 O11
    """,
]


def assert_identical(got: torch.Tensor, want: torch.Tensor, boards: torch.Tensor, what: str) -> None:
    """Equal as float32 bit patterns (so -0.0 != 0.0), with the first differing board in the message."""
    assert got.shape == want.shape and got.dtype == want.dtype == torch.float32, what
    differ = got.view(torch.int32) != want.view(torch.int32)
    if differ.any():
        row, column = (int(index) for index in differ.nonzero()[0])
        pytest.fail(f"{what}: {int(differ.any(1).sum())} boards differ, first board {boards[row].tolist()} "
                    f"unit {column}: fast {got[row, column].item()!r}, reference {want[row, column].item()!r}")


def assert_fast_equals_reference(boards: torch.Tensor, rules: Rules, what: str) -> None:
    for name in FAST:
        encoder = ENCODERS[name]
        fast = fast_encoders.encode(name, boards, rules.checkers_per_side)
        assert fast is not None, name  # the fast path applies here: otherwise nothing would be compared
        assert_identical(fast, encoder.reference_encode(boards, rules), boards, f"{what} {name} encode")
        assert_identical(encoder.encode(boards, rules), fast, boards, f"{what} {name} encode takes the fast path")
        assert_identical(encoder.extra_units(boards, rules), encoder.reference_extra_units(boards, rules), boards,
                         f"{what} {name} extra_units")
    fast_phases = fast_encoders.position_phases(boards)
    differ = (fast_phases != position_phases(boards)).nonzero()
    assert differ.numel() == 0, f"{what} phases: first differing board {boards[int(differ[0])].tolist()}"


def test_fast_equals_reference_on_random_play():
    # 100,000 positions of random play spanning whole games (finished games restart), both sides' views.
    with compile_mode("never"):
        boards, _ = sample_positions(50_000, seed=2026, games=1024, turns=120)
    boards = torch.cat((boards, flip_board(boards)))
    phase = position_phases(boards)
    assert boards.shape[0] == 100_000
    # The sample holds what the features are about: checkers on the bar, crashed boards, races.
    assert (boards[:, MOVER_BAR] == 1).sum() > 5_000 and (boards[:, MOVER_BAR] > 1).sum() > 1_000
    assert (boards[:, OPPONENT_BAR] < 0).sum() > 5_000
    assert (phase == PositionKind.CRASHED).sum() > 1_000 and (phase == PositionKind.RACE).sum() > 1_000
    mover_off, _ = borne_off(boards, STANDARD.checkers_per_side)
    assert (mover_off > 0).sum() > 5_000  # bear-offs under way
    assert_fast_equals_reference(boards, STANDARD, "random play")


def test_fast_equals_reference_on_synthetic_boards():
    boards = torch.cat((random_boards(3_000, seed=5), random_boards(1_000, seed=6, race=True),
                        random_boards(2_000, seed=7, in_hand=True)))
    assert_fast_equals_reference(torch.cat((boards, flip_board(boards))), STANDARD, "synthetic")
    short = random_boards(2_000, seed=8, rules=SHORT)
    assert_fast_equals_reference(torch.cat((short, flip_board(short))), SHORT, "10 checkers")


def test_fast_equals_reference_on_drawn_boards():
    boards = torch.tensor([board_from_drawing(drawing) for drawing in DRAWN], dtype=torch.int8)
    assert_fast_equals_reference(torch.cat((boards, flip_board(boards))), STANDARD, "drawn")
    # Two features by hand, through the fast path: the finished board's mover has all 15 off (off1..off3
    # at 1); two of ours on the bar against closed entering numbers 1, 2, 3, 5 and 6 (their sum 17) lose
    # 4 x 17 pips to their doubles, 2 x 4 x 17 to the rolls of two of them (each number is in 4 such
    # pairs), and 2 x 17 to the rolls of one of them with the open 4: 238 pips of GNU's 294.
    contact = ENCODERS["gnubg_contact"].encode(boards, STANDARD)[:, 198:]
    assert contact[5, :3].tolist() == [1.0, 1.0, 1.0]
    assert contact[0, :3].tolist() == [0.0, 0.0, 0.0]
    assert contact[1, 17].item() == pytest.approx(238 / 294)


def test_drawn_boards_route_to_their_phases():
    # The opening, the bar against a 5-point board and the indirect shots are contact; the stripped home
    # boards are a race (their 24-point checkers are on their own ace point, ahead of all of ours); the
    # bear-off against a back game is contact; a finished game routes as contact; the race is a race; with
    # most checkers still in hand, four of ours in play (two of them waiting) is crashed, not a race.
    boards = torch.tensor([board_from_drawing(drawing) for drawing in DRAWN], dtype=torch.int8)
    contact, crashed, race = int(PositionKind.CONTACT), int(PositionKind.CRASHED), int(PositionKind.RACE)
    want = [contact, contact, contact, race, contact, contact, race, crashed]
    assert fast_encoders.position_phases(boards).tolist() == want
    assert fast_encoders.position_phases(flip_board(boards)).tolist() == want  # the same from both sides
    assert position_phases(boards).tolist() == want


def test_fast_equals_reference_on_table_probes():
    # The first-layer tables are read off ``encode`` on boards of one count in one column (not all legal).
    probes = column_probes()
    assert_fast_equals_reference(torch.cat((probes, flip_board(probes))), STANDARD, "probes")


def test_threads_split_the_rows_without_changing_them():
    boards = random_boards(5_000, seed=12)
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = ENCODERS["gnubg_contact"].encode(boards, STANDARD)
        torch.set_num_threads(3)
        three = ENCODERS["gnubg_contact"].encode(boards, STANDARD)
    finally:
        torch.set_num_threads(previous)
    assert_identical(three, one, boards, "3 threads")


# Tracing is the point here: its deprecation notice is expected, and so is its note on the fast path's shape check
# (`fast_encoders.applies`), whose answer does not matter under tracing, which takes the torch code either way.
@pytest.mark.filterwarnings("ignore:`torch.jit.trace` is deprecated", "ignore::torch.jit.TracerWarning")
def test_traced_and_other_inputs_take_the_torch_code():
    # Traced, the encoder must record its tensor operations: a kernel call would leave a constant.
    traced = torch.jit.trace(lambda board: ENCODERS["gnubg_race"].encode(board, STANDARD), random_boards(8, seed=1),
                             check_trace=False)
    other = random_boards(16, seed=2)
    assert_identical(traced(other), ENCODERS["gnubg_race"].reference_encode(other, STANDARD), other, "traced")
    boards = random_boards(4, seed=3)
    assert fast_encoders.encode("gnubg_contact", boards.to(torch.int16), 15) is None
    assert fast_encoders.encode("gnubg_contact", boards.unsqueeze(0), 15) is None
    assert fast_encoders.encode("tesauro198", boards, 15, extra_units=True) is None  # no kernel: none to make
    strided = torch.cat((boards, boards), dim=1)[:, :28]  # not contiguous: copied first
    assert_identical(fast_encoders.encode("gnubg_contact", strided, 15),
                     ENCODERS["gnubg_contact"].reference_encode(boards, STANDARD), boards, "strided")


def test_a_missing_kernel_is_said_once_and_the_torch_code_runs(monkeypatch):
    monkeypatch.setitem(sys.modules, "bgtrain.model._fast_encoders", None)  # import fails
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fast_encoders.native_kernel.__wrapped__() is None
    assert len(caught) == 1 and "torch code" in str(caught[0].message)
