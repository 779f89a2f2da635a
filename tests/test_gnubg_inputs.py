"""GNU Backgammon-style contact inputs: each feature worked out by hand on drawn boards, the shot counting
against a slow scalar reference on random positions, the encoder's table path and flip symmetry."""

from __future__ import annotations

import pytest
import torch
from helpers import random_boards

from bgtrain.model.encoding import FirstLayerTable, get_encoder
from bgtrain.model.gnubg_inputs import (
    FEATURES,
    ROLLS,
    contact_features,
    escape_tables,
    half_features,
    side_counts,
)
from engine.board import MOVER_BAR, OPPONENT_BAR, flip_board
from engine.rules import STANDARD


def board_with(points: dict[int, int], bar: int = 0, opponent_bar: int = 0) -> torch.Tensor:
    """``int8[1, 28]``: ``points`` {mover's point: signed count (> 0 mover, < 0 opponent)}, the bars."""
    board = torch.zeros(1, 28, dtype=torch.int8)
    for point, count in points.items():
        board[0, point] = count
    board[0, MOVER_BAR] = bar
    board[0, OPPONENT_BAR] = -opponent_bar
    return board


def mover_features(board: torch.Tensor) -> dict[str, float]:
    return dict(zip(FEATURES, contact_features(board)[0, : len(FEATURES)].tolist()))


OPENING = board_with({24: 2, 13: 5, 8: 3, 6: 5, 1: -2, 12: -5, 17: -3, 19: -5})


def test_opening_position_by_hand():
    # The opening, mover (X) to play:
    #   13 14 15 16 17 18   19 20 21 22 23 24
    #   X5          O3      O5                X2
    #   O5          X3      X5                O2
    #   12 11 10  9  8  7    6  5  4  3  2  1
    got = mover_features(OPENING)
    # The opponent's rearmost checker is on our 1-point: every pip of ours (167) is contact.
    assert got["break_contact"] == pytest.approx(167 / 167)
    assert got["free_pip"] == 0.0
    assert got["back_checker"] == pytest.approx(23 / 24)  # index 23 = the 24-point
    assert got["back_anchor"] == pytest.approx(23 / 24)
    assert got["forward_anchor"] == pytest.approx(1 / 6)  # the anchor is the opponent's 1-point
    assert got["off1"] == got["off2"] == got["off3"] == 0.0
    assert got["pip_loss"] == got["p1"] == got["p2"] == 0.0  # no blot to hit
    assert got["enter"] == 0.0
    assert got["enter2"] == pytest.approx((36 - 25) / 36)  # one closed point: 1 - (5/6)^2 ... as 36ths
    assert got["backg"] == 0.0 and got["backg1"] == pytest.approx(2 / 8)  # one anchor, 2 checkers there
    # Made points on indices 23, 12, 7, 5: behind 23 lie gaps of 11, 16 and 18 pips -> closeness 2, 0, 0.
    assert got["backbone"] == pytest.approx(1 - 2 / 33)
    # Mean index ceil(152 / 15) = 11; beyond it 2 on 23 and 5 on 12: ceil((2 * 144 + 5) / 7) = 42.
    assert got["moment2"] == pytest.approx(42 / 400)
    # Timing: 3 spare on the mid-point (index 12, beyond index 11) and 3 on the 8-point (index 7): 57
    # pips; 3 spares on the 6-point add 15 -> 72; the empty 5, 4, 3, 2-points take 2 each (-8 -6 -4 -2)
    # while free checkers remain (9 -> 1); the ace point's 2 cannot be filled: 52.
    assert got["timing"] == pytest.approx(0.52)
    # Our checkers' escapes through the opponent's points (blocked at 5, 7 and 12 pips ahead of the
    # 24-point: 36 - 4 (sum 5) - 6 (sum 7) - 1 (66) - 1 (55 path) = 24; 1 and 12 ahead of the mid-point:
    # 36 - 1 (66) - 1 (11) = 34; 7 ahead of the 8-point: 30).
    assert got["mobility"] == pytest.approx((2 * 18 * 24 + 5 * 7 * 34 + 3 * 2 * 30) / 3600)
    # The opponent's back checkers see our points the same way: 24 escapes; 18 of them pass our 5 pips
    # ahead (the 6 rolls of sum 2, 3 or 4 stop short of it).
    assert got["back_escapes"] == pytest.approx(24 / 36)
    assert got["back_rescapes"] == pytest.approx(18 / 36)
    # Fewest escapes of an opponent checker from its index 15 up to 23: 22, from its 23-point (blocked
    # 4, 6 and 11 ahead: 36 - 3 - 5 - 2 - 4 for 44, 66, 46, 64).
    assert got["acontain"] == pytest.approx(14 / 36)
    assert got["acontain2"] == pytest.approx((14 / 36) ** 2)
    assert got["contain"] == pytest.approx(14 / 36)


def test_direct_and_indirect_shots_by_hand():
    # One checker of ours on the 8-point, an opponent blot on our 5-point, 3 pips away:
    #    8  7  6  5  4  3  2  1
    #    X        O           X14      (opponent's other 14 on our 24-point)
    board = board_with({8: 1, 1: 14, 5: -1, 24: -14})
    got = mover_features(board)
    # Hits: any roll with a 3 (11 of 36), 21 (2) through the open 7 or 6, 11 (1): 14 rolls, one hit each.
    assert got["p1"] == pytest.approx(14 / 36)
    assert got["p2"] == 0.0
    assert got["pip_loss"] == pytest.approx(14 * 5 / 432)  # the blot on our 5-point loses 5 pips
    # Block the 7- and 6-points: 21 and 11 cannot hit any more; the single 3s still can.
    blocked = board_with({8: 1, 1: 14, 5: -1, 7: -2, 6: -2, 24: -10})
    assert mover_features(blocked)["p1"] == pytest.approx(11 / 36)


def test_two_hits_and_weak_board_rule_by_hand():
    # Blots on our 5- and 4-points, hitters on the 8- and 6-points (a stack of 3 may leave its point):
    #    8  7  6  5  4  3  2  1
    #    X     X3 O  O
    board = board_with({8: 1, 6: 3, 1: 11, 5: -1, 4: -1, 24: -13})
    got = mover_features(board)
    assert got["p2"] > 0.0
    assert got["p1"] >= got["p2"]
    # A blot on our 2-point is not a target while we hold fewer than three home points...
    weak = board_with({8: 1, 1: 14, 2: -1, 24: -14})
    assert mover_features(weak)["p1"] == 0.0
    # ... and is one once we occupy three.
    strong = board_with({8: 1, 6: 1, 5: 1, 1: 12, 2: -1, 24: -14})
    assert mover_features(strong)["p1"] > 0.0


def test_shots_from_the_bar_by_hand():
    # One of ours on the bar, an opponent blot on our 22-point (3 pips from the bar):
    #   19 20 21 22 23 24  bar
    #             O         X
    board = board_with({1: 14, 22: -1, 12: -14}, bar=1)
    got = mover_features(board)
    assert got["p1"] == pytest.approx(14 / 36)  # a 3, 21 or 11 from the bar
    assert got["pip_loss"] == pytest.approx(14 * 22 / 432)


def test_entering_by_hand():
    # The opponent holds its 1- and 2-points (our 24 and 23); we have checkers on the bar.
    two = board_with({1: 13, 24: -2, 23: -2, 12: -11}, bar=2)
    one = board_with({1: 14, 24: -2, 23: -2, 12: -11}, bar=1)
    # Doubles 11, 22 lose 4 + 8 pips; 21 loses both dice (2 x 3); with two on the bar each roll of one
    # closed number loses that die: 1x (x = 3..6) 4 rolls x 2 x 1, 2x 4 rolls x 2 x 2.
    assert mover_features(two)["enter"] == pytest.approx((12 + 6 + 8 + 16) / 294)
    assert mover_features(one)["enter"] == pytest.approx((12 + 6) / 294)
    assert mover_features(one)["enter2"] == pytest.approx((36 - 16) / 36)


def test_back_game_and_off_by_hand():
    # Two anchors in the opponent's home board (our 20- and 21-points) and one on the bar; 6 borne off.
    board = board_with({20: 2, 21: 2, 6: 4, 12: -15}, bar=1)
    got = mover_features(board)
    assert got["backg"] == pytest.approx((5 - 3) / 4)
    assert got["backg1"] == 0.0
    assert (got["off1"], got["off2"], got["off3"]) == pytest.approx((1.0, 0.2, 0.0))
    # The opponent's rearmost checker sits on our 12-point: our 6-point checkers are free.
    assert got["free_pip"] == pytest.approx(4 * 6 / 100)


def test_escape_tables():
    plain, past = escape_tables(torch.device("cpu"))
    assert plain[0] == 36 and past[0] == 0
    # Only the point 6 ahead blocked (bit 5): 66 and every roll of sum 6 (15, 51, 24, 42, 33) fail.
    assert plain[1 << 5] == 36 - 1 - 5
    # ... and of those that escape, the ones of sum below 6 stop short of the block.
    assert past[1 << 5] == plain[1 << 5] - sum(1 if a == b else 2 for a, b in ROLLS if a + b < 6)


# ---------------------------------------------------------------------------------------------------
# The slow scalar reference of the shot counting (pip loss, p1, p2).


def reference_shots(ours: list[int], theirs: list[int]) -> tuple[float, float, float]:
    """One position, lists of 25 counts in ``side_counts`` layout, by plain loops."""
    theirs_on_ours = [theirs[23 - x] for x in range(24)] + [0]  # the opponent's checkers in our indices
    home_points = sum(1 for x in range(6) if ours[x] > 0)
    lowest = 0 if home_points > 2 else 2

    def blocked(x: int) -> bool:
        return theirs_on_ours[x] >= 2

    def hitters(distance: int, steps: tuple[int, ...], all_needed: bool) -> list[int]:
        found = []
        for source in range(25):
            target = source - distance
            if target < lowest or theirs_on_ours[target] != 1 or ours[source] == 0:
                continue
            if source < 6 and ours[source] == 2:
                continue
            landings = [blocked(source - s) for s in steps]
            if landings and (any(landings) if all_needed else all(landings)):
                continue
            found.append(source)
        return found

    total_pips = rolls_one = rolls_two = 0
    for high, low in ROLLS:
        weight = 1 if high == low else 2
        if high == low:
            ways = [(high * k, tuple(high * s for s in range(1, k)), True, k == 1) for k in (1, 2, 3, 4)]
        else:
            ways = [(high, (), True, True), (low, (), True, True), (high + low, (high, low), False, False)]
        hits = pips = 0
        if ours[24] == 0:
            previous = None
            for distance, steps, all_needed, direct in ways:
                sources = hitters(distance, steps, all_needed)
                if not sources:
                    continue
                source = max(sources)
                pips = max(pips, source - distance + 1)
                if direct:
                    if source != previous or ours[source] > 1:
                        hits += 1
                    previous = source
                    if high == low and len(sources) > 1:
                        hits += 1
                else:
                    hits = max(hits, 1)
                    if any(theirs_on_ours[source - s] == 1 for s in steps):
                        hits += 1
        elif ours[24] == 1:
            entered = False
            for slot, (distance, steps, all_needed, direct) in enumerate(ways):
                sources = hitters(distance, steps, all_needed)
                if direct:
                    if 24 in sources:
                        hits += 1
                        pips = max(pips, 25 - distance)
                    points = [s for s in sources if s < 24]
                    other_die = (low if slot == 0 else high) if high != low else high
                    if points and not entered and not blocked(24 - other_die):
                        entered = True
                        hits += 1
                        pips = max(pips, max(points) - distance + 1)
                elif 24 in sources:
                    hits = max(hits, 1)
                    pips = max(pips, 25 - distance)
                    if any(theirs_on_ours[24 - s] == 1 for s in steps):
                        hits += 1
        else:
            for distance, steps, all_needed, direct in ways[:2]:
                if direct and 24 in hitters(distance, steps, all_needed):
                    hits += 1
                    pips = max(pips, 25 - distance)
        total_pips += weight * pips
        rolls_one += weight * (hits > 0)
        rolls_two += weight * (hits > 1)
    return total_pips / 432, rolls_one / 36, rolls_two / 36


def test_shots_match_the_scalar_reference_on_random_positions():
    boards = torch.cat((random_boards(200, seed=3), OPENING))
    boards = torch.cat((boards, flip_board(boards)))
    ours, theirs = side_counts(boards)
    batched = half_features(ours, theirs)[:, [FEATURES.index(n) for n in ("pip_loss", "p1", "p2")]]
    want = torch.tensor([reference_shots([int(v) for v in o], [int(v) for v in t])
                         for o, t in zip(ours.tolist(), theirs.tolist())])
    assert (want[:, 1] > 0).float().mean() > 0.3  # the sample has plenty of shots
    assert (ours[:, 24] == 1).sum() > 20 and (ours[:, 24] > 1).any()  # and sides with checkers on the bar
    torch.testing.assert_close(batched, want.to(batched.dtype), atol=1e-6, rtol=0)


def test_the_bit_mask_hitters_equal_the_matrix_ones():
    # The fast path (eager torch) against the exported graph's matrix product, on every way of every
    # position: rearmost hitter, several hitters, from the bar, rearmost hitter on a point.
    from bgtrain.model.gnubg_inputs import _hitters_by_masks, _hitters_by_matrix, _ways

    boards = torch.cat((random_boards(2000, seed=11), OPENING))
    boards = torch.cat((boards, flip_board(boards)))
    ours, theirs = side_counts(boards)
    index = torch.arange(25)
    blocked = torch.cat(((theirs[:, :24] >= 2).flip(1), torch.zeros_like(theirs[:, :1], dtype=torch.bool)), 1)
    blot = torch.cat(((theirs[:, :24] == 1).flip(1), torch.zeros_like(theirs[:, :1], dtype=torch.bool)), 1)
    hitter = (ours > 0) & ~((index < 6) & (ours == 2))
    # Every blot a target here (the weak-board rule aside): more hits to compare; bar hitters too.
    hitter[:200, 24] = True
    ways = _ways(boards.device)
    fast = _hitters_by_masks(ways, blot, blocked, hitter)
    slow = _hitters_by_matrix(ways, blot, blocked, hitter)
    assert (slow[0] >= 0).float().mean() > 0.05 and slow[1].any() and slow[2].any()  # not all empty
    for got, want in zip(fast, slow):
        assert torch.equal(got, want)


# ---------------------------------------------------------------------------------------------------
# The encoder.


def test_encoder_sides_and_table_path():
    encoder = get_encoder("gnubg_contact")
    boards = random_boards(400, seed=9)
    encoded = encoder.encode(boards, STANDARD)
    assert encoded.shape == (400, encoder.size)
    assert torch.isfinite(encoded).all()
    # The opponent's half of a board is the mover's half of the flipped board.
    half = len(FEATURES)
    extra = encoded[:, encoder.separable_size :]
    flipped = encoder.encode(flip_board(boards), STANDARD)[:, encoder.separable_size :]
    torch.testing.assert_close(extra[:, half:], flipped[:, :half])
    # The first-layer table (separable units) plus the extra units equals the plain path.
    torch.manual_seed(0)
    linear = torch.nn.Linear(encoder.size, 16)
    with torch.no_grad():
        table = FirstLayerTable(encoder, linear, STANDARD)
        torch.testing.assert_close(table(boards), linear(encoded), atol=1e-4, rtol=1e-5)
        flipped_table = FirstLayerTable(encoder, linear, STANDARD, flipped=True)
        torch.testing.assert_close(flipped_table(boards), linear(encoder.encode(flip_board(boards), STANDARD)),
                                   atol=1e-4, rtol=1e-5)


@pytest.mark.slow
def test_onnx_export_round_trip():
    # About a minute on 2 shared cores: the traced graph holds every unrolled step of the shot counting.
    pytest.importorskip("onnxruntime")
    from bgtrain.export import export_model
    from bgtrain.model.network import ValueNetwork
    from bgtrain.model.onnx_model import OnnxValueModel

    torch.manual_seed(0)
    network = ValueNetwork("gnubg_contact", (16,)).eval()
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.onnx"
        export_model(network, {}, path, "onnx")  # checks itself against ValueNetwork.evaluate to 1e-5
        boards = random_boards(64, seed=4)
        torch.testing.assert_close(OnnxValueModel(path).evaluate(boards, STANDARD), network.evaluate(boards),
                                   atol=1e-5, rtol=0)
