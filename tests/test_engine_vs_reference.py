"""The batched generator must return exactly the reference's set of afterstates, once each."""

from __future__ import annotations

import pytest
import torch
from helpers import random_boards

from engine.movegen import legal_afterstates
from engine.random_play import sample_positions
from engine.reference import reference_afterstates

ALL_ROLLS = [(high, low) for high in range(1, 7) for low in range(1, high + 1)]


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
    board_list = boards.cpu().tolist()
    mismatches = []
    for roll in ALL_ROLLS:
        for board, found in zip(board_list, batched_sets(boards, roll)):
            expected = reference_afterstates(board, roll)
            if found != expected:
                mismatches.append((board, roll, len(expected), len(found)))
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


def test_set_bit_paths_agree():
    """The CPU peels set bits; a GPU uses one mask ``nonzero``. Both must list the same (line, bit)
    pairs, so the GPU path is checked here on the CPU, including lines with no bit set."""
    from engine.movegen import _set_bits, _set_bits_by_mask

    generator = torch.Generator().manual_seed(3)
    moves = torch.randint(0, 1 << 27, (2000,), generator=generator) & ~1
    moves[::7] = 0
    moves[5] = ((1 << 27) - 1) & ~1  # all 26 sources
    peeled = sorted(zip(*(t.tolist() for t in _set_bits(moves))))
    masked = sorted(zip(*(t.tolist() for t in _set_bits_by_mask(moves))))
    assert peeled == masked
    assert len(peeled) == sum(m.bit_count() for m in moves.tolist())
