"""The batched generator must return exactly the reference's set of afterstates, once each."""

from __future__ import annotations

import pytest
import torch
from helpers import compile_mode, random_boards

from engine.dice import ALL_ROLLS
from engine.movegen import legal_afterstates
from engine.random_play import sample_positions
from engine.reference import reference_afterstates


def batched_sets(boards: torch.Tensor, roll: tuple[int, int]) -> list[set[tuple[int, ...]]]:
    dice = torch.tensor(roll, dtype=torch.int8, device=boards.device).expand(boards.shape[0], 2)
    afterstates = legal_afterstates(boards, dice)
    found: list[set[tuple[int, ...]]] = [set() for _ in range(boards.shape[0])]
    for row, position in zip(afterstates.boards.cpu().tolist(), afterstates.position.cpu().tolist()):
        found[position].add(tuple(row))
    assert sum(len(s) for s in found) == afterstates.total, "the batched generator returned a duplicate"
    assert afterstates.counts.tolist() == [len(s) for s in found]
    return found


def assert_same_as_reference(boards: torch.Tensor) -> None:
    """Both paths of the batched generator (compiled kernels and op by op, ``engine.kernels``) give
    the reference's afterstates. The batches here are large enough to be compiled."""
    board_list = boards.cpu().tolist()
    mismatches = []
    for roll in ALL_ROLLS:
        with compile_mode("always"):
            compiled = batched_sets(boards, roll)
        with compile_mode("never"):
            op_by_op = batched_sets(boards, roll)
        for board, found, found_op_by_op in zip(board_list, compiled, op_by_op):
            expected = reference_afterstates(board, roll)
            if found != expected or found_op_by_op != expected:
                mismatches.append((board, roll, len(expected), len(found), len(found_op_by_op)))
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:3]}"


def test_reachable_positions_match_reference():
    boards, _ = sample_positions(800, seed=11)
    assert_same_as_reference(boards)


def test_unusual_positions_match_reference():
    """Random valid boards, not only reachable ones: crowded bars, bear-offs, checkers off."""
    assert_same_as_reference(random_boards(300, seed=5))


def test_races_and_bear_offs_match_reference():
    assert_same_as_reference(random_boards(300, seed=6, race=True))


@pytest.mark.slow
def test_many_reachable_positions_match_reference():
    boards, _ = sample_positions(5000, seed=99)
    assert_same_as_reference(boards)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_reference():
    boards, _ = sample_positions(2000, seed=13)
    assert_same_as_reference(boards.cuda())


def test_every_source_of_a_line_is_expanded():
    """The k-th set bit of a move mask is looked up in two 14-bit halves (``_children``): a line
    whose mask has bits in both halves, up to all 26 sources, must get one child per bit, each
    moving from its own source."""
    from engine import kernels
    from engine.movegen import _children, _tables

    tables = _tables(torch.device("cpu"))
    generator = torch.Generator().manual_seed(3)
    moves = torch.randint(0, 1 << 27, (2000,), generator=generator) & ~1
    moves[::7] = 0
    moves[5] = ((1 << 27) - 1) & ~1  # all 26 sources
    count = torch.tensor([m.bit_count() for m in moves.tolist()])
    line = torch.repeat_interleave(count)
    # Five checkers on every source (points, bar, hand): a move leaves four on its source.
    lines = torch.zeros(2000, 40, dtype=torch.int8)
    lines[:, 1:27] = 5
    lines = lines.view(torch.int64)
    die = torch.full((2000,), 1)
    ordered = torch.zeros(2000, dtype=torch.bool)
    expected = [(i, bit) for i, m in enumerate(moves.tolist()) for bit in range(1, 27) if m >> bit & 1]
    for mode in ("always", "never"):
        with compile_mode(mode):
            children = kernels.call(
                _children, lines, moves, line, torch.cumsum(count, 0) - count, die, ordered, None,
                tables.popcount, tables.kth_bit, 3, rows=line.shape[0], device=line.device,
            )
        source = (children.view(torch.int8)[:, :27] == 4).int().argmax(1)
        assert list(zip(line.tolist(), source.tolist())) == expected, mode
