"""The batched writers of ``bgtrain moves`` against the scalar ones, on random reachable positions of
every variant: ``batch_play_notations`` against ``play_notation`` and ``encode_position_ids`` against
``encode_position_id``."""

from __future__ import annotations

import pytest

from engine.batch_notation import batch_play_notations
from engine.movegen import legal_afterstates
from engine.notation import play_notation
from engine.position_id import encode_position_id, encode_position_ids, split_checkers_in_hand
from engine.random_play import sample_positions
from engine.variants import VARIANTS, get_rules


def check_variant(variant: str, count: int, step: int) -> None:
    rules = get_rules(variant)
    board, dice = sample_positions(count, 11, rules, games=32, turns=60)
    afterstates = legal_afterstates(board, dice, rules)
    notations = batch_play_notations(board, dice, afterstates, rules)
    ids = encode_position_ids(afterstates.boards)
    befores, rolls, rows = board.tolist(), dice.tolist(), afterstates.boards.tolist()
    positions = afterstates.position.tolist()
    assert len(notations) == len(ids) == len(rows)
    for row in range(0, len(rows), step):
        before, roll = befores[positions[row]], tuple(rolls[positions[row]])
        if not rules.acey_deucey:
            assert notations[row] == play_notation(before, rows[row], roll, rules), (before, roll, rows[row])
        assert ids[row] == encode_position_id(split_checkers_in_hand(rows[row])[0])


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_batched_notation_and_ids_equal_the_scalar_ones(variant):
    check_variant(variant, count=6, step=2)


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_batched_notation_and_ids_equal_the_scalar_ones_on_thousands(variant):
    check_variant(variant, count=1000, step=1)
