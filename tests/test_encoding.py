"""Input encoders: unit patterns by hand, the first-layer table against the plain path, flip symmetry."""

from __future__ import annotations

import pytest
import torch
from helpers import board_from_counts, board_from_drawing, random_boards

from bgtrain.model.encoding import ENCODERS, FirstLayerTable, _escape_table, get_encoder
from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND, flip_board
from engine.position_facts import is_race
from engine.rules import STANDARD, Rules

SHORT = Rules(name="short", start_points=((6, 4), (8, 3), (13, 3)))  # 10 checkers a side


# Readable definitions of the position features, by reductions over the points; the encoders compute
# the same values from bitmasks.


def reference_is_race(board: torch.Tensor) -> torch.Tensor:
    points = board[:, 1:25].long()
    numbers = torch.arange(1, 25)
    highest_mover = torch.where(points > 0, numbers, 0).amax(-1)
    lowest_opponent = torch.where(points < 0, numbers, 25).amin(-1)
    waiting = board[:, [OPPONENT_BAR, MOVER_BAR, MOVER_IN_HAND, OPPONENT_IN_HAND]].ne(0).any(-1)
    return (highest_mover < lowest_opponent) & ~waiting


def back_checker_point(board: torch.Tensor) -> torch.Tensor:
    """The mover's rearmost checker: 25 on the bar or in hand, 0 when none is left."""
    numbers = torch.arange(1, 25)
    highest = torch.where(board[:, 1:25] > 0, numbers, 0).amax(-1)
    waiting = (board[:, MOVER_BAR] > 0) | (board[:, MOVER_IN_HAND] > 0)
    return torch.where(waiting, 25, highest)


def back_escapes(board: torch.Tensor) -> torch.Tensor:
    """Escape rolls of the mover's rearmost checker: bit k of the pattern is the point k + 1 pips ahead."""
    back = back_checker_point(board)
    made = torch.nn.functional.pad(board[:, 1:25] <= -2, (1, 0))  # index q = point q; 0 never blocks
    ahead = torch.arange(1, 13)
    bits = made.gather(1, (back[:, None] - ahead).clamp(min=0)).long() << (ahead - 1)
    return torch.where(back > 0, _escape_table(torch.device("cpu"))[bits.sum(-1)], 0)


def longest_prime(board: torch.Tensor) -> torch.Tensor:
    best = torch.zeros(board.shape[0], dtype=torch.long)
    run = torch.zeros_like(best)
    for point in range(1, 25):
        run = torch.where(board[:, point] >= 2, run + 1, 0)
        best = torch.maximum(best, run)
    return best


def board_with(points: dict[int, int], bar: int = 0, opponent_bar: int = 0) -> torch.Tensor:
    """``int8[1, 28]`` with ``points`` {mover's point: signed count} and the bars; the rest is borne off."""
    return board_from_counts(points, bar, opponent_bar).unsqueeze(0)


@pytest.mark.parametrize(
    "checkers, units",
    [(1, [1, 0, 0, 0]), (2, [1, 1, 0, 0]), (3, [1, 1, 1, 0]), (4, [1, 1, 1, 0.5]), (7, [1, 1, 1, 2])],
)
def test_tesauro_point_units(checkers: int, units: list[float]) -> None:
    encoder = get_encoder("tesauro198")
    # The mover's point 9: units 32..35. The opponent's checkers on the mover's point 9 are on its
    # own point 16: units 96 + 4 * 15 = 156..159.
    mover = encoder.encode(board_with({9: checkers}), STANDARD)[0]
    assert mover[32:36].tolist() == units
    assert mover[:32].abs().sum() == 0 and mover[36:192].abs().sum() == 0
    opponent = encoder.encode(board_with({9: -checkers}), STANDARD)[0]
    assert opponent[156:160].tolist() == units
    assert opponent[:156].abs().sum() == 0 and opponent[160:192].abs().sum() == 0


def test_tesauro_start_position_bar_and_off() -> None:
    encoder = get_encoder("tesauro198")
    units = encoder.encode(STANDARD.start_board().unsqueeze(0), STANDARD)[0]
    expected_side = torch.zeros(96)
    for point, pattern in ((6, [1, 1, 1, 1]), (8, [1, 1, 1, 0]), (13, [1, 1, 1, 1]), (24, [1, 1, 0, 0])):
        expected_side[4 * (point - 1) : 4 * point] = torch.tensor(pattern, dtype=torch.float32)
    assert torch.equal(units[:96], expected_side)
    assert torch.equal(units[96:192], expected_side)
    assert units[192:].tolist() == [0, 0, 0, 0, 1, 0]

    # mover: 2 on the bar, 10 on point 1, so 3 borne off; opponent: 1 on the bar, 14 on its point 1
    board = board_with({1: 10, 24: -14}, bar=2, opponent_bar=1)
    units = encoder.encode(board, STANDARD)[0]
    assert units[192:].tolist() == pytest.approx([1.0, 0.5, 3 / 15, 0.0, 1.0, 0.0])
    assert units[0:4].tolist() == [1, 1, 1, 3.5]
    assert units[96:100].tolist() == [1, 1, 1, 5.5]


def test_in_hand_checkers_count_as_waiting_to_enter() -> None:
    board = board_with({6: 5})
    board[0, MOVER_IN_HAND] = 10
    units = get_encoder("tesauro198").encode(board, STANDARD)[0]
    assert units[192].item() == 5.0  # (0 on the bar + 10 in hand) / 2
    assert units[194].item() == 0.0  # none borne off: all 15 are on the board or in hand


@pytest.mark.parametrize("name", sorted(ENCODERS))
@pytest.mark.parametrize("rules, in_hand", [(STANDARD, False), (STANDARD, True), (SHORT, False)])
def test_table_path_equals_plain_path(name: str, rules: Rules, in_hand: bool) -> None:
    encoder = get_encoder(name)
    torch.manual_seed(0)
    linear = torch.nn.Linear(encoder.size, 40)
    boards = torch.cat((random_boards(2000, seed=1, rules=rules, in_hand=in_hand), rules.start_board()[None]))
    with torch.no_grad():
        plain = linear(encoder.encode(boards, rules))
        table = FirstLayerTable(encoder, linear, rules)(boards)
    assert torch.allclose(table, plain, atol=1e-5)


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_unit_table_reproduces_the_separable_units(name: str) -> None:
    encoder = get_encoder(name)
    boards = random_boards(500, seed=2, in_hand=True)
    rows, constant = encoder.unit_table(STANDARD)
    summed = constant + rows[encoder.first_layer_indices(boards)].sum(1)
    assert torch.allclose(summed, encoder.encode(boards, STANDARD)[:, : encoder.separable_size], atol=1e-5)


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_table_path_gradients_match_plain_path(name: str) -> None:
    encoder = get_encoder(name)
    boards = random_boards(300, seed=3)
    gradients = []
    for use_table in (False, True):
        torch.manual_seed(0)
        linear = torch.nn.Linear(encoder.size, 16)
        hidden = (
            FirstLayerTable(encoder, linear, STANDARD)(boards)
            if use_table
            else linear(encoder.encode(boards, STANDARD))
        )
        torch.sigmoid(hidden).square().sum().backward()
        gradients.append((linear.weight.grad, linear.bias.grad))
    (plain_weight, plain_bias), (table_weight, table_bias) = gradients
    assert torch.allclose(table_bias, plain_bias, atol=1e-4)
    assert torch.allclose(table_weight, plain_weight, atol=1e-4)


def _swap_sides_tesauro(units: torch.Tensor) -> torch.Tensor:
    """The Tesauro units with the mover's and the opponent's swapped (turn units left alone)."""
    mover_points, opponent_points = units[:, :96], units[:, 96:192]
    waiting, off, turn = units[:, 192:194], units[:, 194:196], units[:, 196:198]
    return torch.cat((opponent_points, mover_points, waiting.flip(-1), off.flip(-1), turn), dim=-1)


def test_tesauro_flip_symmetry() -> None:
    encoder = get_encoder("tesauro198")
    boards = random_boards(1000, seed=4, in_hand=True)
    assert torch.equal(
        encoder.encode(flip_board(boards), STANDARD), _swap_sides_tesauro(encoder.encode(boards, STANDARD))
    )


def test_tesauro_plus_flip_symmetry() -> None:
    encoder = get_encoder("tesauro_plus")
    boards = torch.cat((random_boards(1000, seed=5), random_boards(200, seed=6, race=True)))
    units, flipped = encoder.encode(boards, STANDARD), encoder.encode(flip_board(boards), STANDARD)
    assert torch.equal(flipped[:, :198], _swap_sides_tesauro(units[:, :198]))
    assert torch.equal(flipped[:, 198:200], units[:, 198:200].flip(-1))  # pip counts
    assert torch.equal(flipped[:, 200], units[:, 200])  # race flag
    for first in (201, 203, 205):  # (mover, opponent) pairs
        assert torch.equal(flipped[:, first : first + 2], units[:, first : first + 2].flip(-1))


def test_tesauro_plus_features_by_hand() -> None:
    start = STANDARD.start_board().unsqueeze(0)
    units = get_encoder("tesauro_plus").encode(start, STANDARD)[0]
    # Pips 167 each; no race; rearmost checkers on the 24-points; from there sums 5, 7 and 12 land on the
    # opponent's 6-, 8- and midpoint (11 rolls) and 5-5 is stuck behind the 6-point: 36 - 12 = 24 escapes.
    assert units[198:].tolist() == pytest.approx(
        [1.67, 1.67, 0.0, 24 / 25, 24 / 25, 24 / 36, 24 / 36, 1 / 6, 1 / 6]
    )


def test_tesauro_plus_extra_units_match_the_readable_definitions() -> None:
    boards = torch.cat(
        (
            random_boards(2000, seed=7, in_hand=True),
            random_boards(500, seed=8, race=True),
            random_boards(1000, seed=9),
            STANDARD.start_board()[None],
            torch.zeros(1, 28, dtype=torch.int8),  # nothing left on either side
        )
    )
    flipped = flip_board(boards)
    expected = torch.stack(
        (
            reference_is_race(boards).float(),
            back_checker_point(boards).float() / 25,
            back_checker_point(flipped).float() / 25,
            back_escapes(boards).float() / 36,
            back_escapes(flipped).float() / 36,
            longest_prime(boards).float() / 6,
            longest_prime(flipped).float() / 6,
        ),
        dim=-1,
    )
    assert torch.equal(get_encoder("tesauro_plus").extra_units(boards, STANDARD), expected)


def test_is_race_matches_reference_definition() -> None:
    boards = torch.cat((random_boards(2000, seed=10, in_hand=True), random_boards(500, seed=11, race=True)))
    assert torch.equal(is_race(boards), reference_is_race(boards))
    assert is_race(boards.view(50, 50, 28)).shape == (50, 50)


def test_escape_table_by_hand() -> None:
    table = _escape_table(torch.device("cpu"))
    assert table[0].item() == 36  # nothing blocks
    assert table[0xFFF].item() == 0  # twelve points blocked
    # Only the point 6 pips ahead blocked: the rolls summing to 6 (5-1, 4-2, 3-3: 5 of 36) and 6-6
    # (stuck behind it) fail; 6-x with x < 6 lands past it.
    assert table[1 << 5].item() == 36 - 5 - 1


def test_feature_helpers() -> None:
    board = board_with({4: 2, 5: 2, 6: 3, 7: 2, 8: 2, 9: 2, 11: 2, 20: -15})
    assert longest_prime(board).item() == 6
    assert back_checker_point(board).item() == 11
    assert back_escapes(board).item() == 36  # nothing of the opponent's in front
    assert is_race(board).item()
    assert not is_race(board_with({4: 2, 20: -15}, bar=1)).item()
    assert not is_race(board_with({4: 2, 3: -15})).item()
    # The mover's rearmost checker on the bar with the opponent holding the mover's points 19..24: no roll
    # gets it past a six-point prime.
    closed = board_with({19: -2, 20: -2, 21: -2, 22: -2, 23: -2, 24: -2, 6: 14}, bar=1)
    assert back_checker_point(closed).item() == 25
    assert back_escapes(closed).item() == 0
    assert back_escapes(board_with({})).item() == 0  # no checker left


def test_get_encoder_unknown_name_lists_known() -> None:
    with pytest.raises(ValueError, match="tesauro198"):
        get_encoder("no-such-encoder")


def test_gnubg_race_units_by_hand() -> None:
    # A race. The mover (X): 3 on its 13-point (2 crossings each), 2 on its 8-point (1 each), 5 on
    # its 6-point and 3 on its 2-point; 2 borne off. Pips 3*13 + 2*8 + 5*6 + 3*2 = 91; crossings 8.
    # The opponent (O): 4 on its 7-point (its 7 is the mover's 18; 1 crossing each), 6 on its 1-point
    # (the mover's 24); 5 borne off. Pips 4*7 + 6*1 = 34; crossings 4.
    board = torch.tensor([board_from_drawing("""
         13  14  15  16  17  18 | 19  20  21  22  23  24
         X3   .   .   .   .  O4 |  .   .   .   .   .  O6
          .   .   .   .  X2   . | X5   .   .   .  X3   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
    """)], dtype=torch.int8)
    units = get_encoder("gnubg_race").encode(board, STANDARD)[0]
    assert units.shape == (230,)
    assert units[198:202].tolist() == pytest.approx([0.91, 0.34, 0.8, 0.4])
    mover_off, opponent_off = units[202:216], units[216:230]
    assert mover_off.tolist() == [1.0 if k == 2 else 0.0 for k in range(1, 15)]
    assert opponent_off.tolist() == [1.0 if k == 5 else 0.0 for k in range(1, 15)]
    # None off: no unit lit; a checker on the bar makes four crossings.
    start = STANDARD.start_board().unsqueeze(0).clone()
    units = get_encoder("gnubg_race").encode(start, STANDARD)[0]
    # The start: 2 on the 24-point (3 each), 5 on the 13 (2 each), 3 on the 8 (1 each): 6 + 10 + 3 = 19.
    assert units[200:202].tolist() == pytest.approx([1.9, 1.9]) and units[202:].abs().sum() == 0
    start[0, 24] -= 1
    start[0, MOVER_BAR] += 1
    assert float(get_encoder("gnubg_race").encode(start, STANDARD)[0, 200]) == pytest.approx(2.0)


def test_gnubg_race_flip_symmetry() -> None:
    encoder = get_encoder("gnubg_race")
    boards = torch.cat((random_boards(1000, seed=9, in_hand=True), random_boards(300, seed=10, race=True)))
    units, flipped = encoder.encode(boards, STANDARD), encoder.encode(flip_board(boards), STANDARD)
    assert torch.equal(flipped[:, :198], _swap_sides_tesauro(units[:, :198]))
    for first in (198, 200):  # (mover, opponent) pairs
        assert torch.equal(flipped[:, first : first + 2], units[:, first : first + 2].flip(-1))
    assert torch.equal(flipped[:, 202:216], units[:, 216:230])
