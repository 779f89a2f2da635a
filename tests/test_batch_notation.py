"""The batched notation (from each afterstate's difference with its parent) against the scalar search,
string for string, on random reachable positions and rolls of every variant."""

import numpy as np
import pytest
import torch

from engine.batch_notation import batch_play_notations, play_words, scalar_fallback_rows
from engine.movegen import legal_afterstates
from engine.notation import NO_MOVE, scalar_play_notations
from engine.random_play import sample_positions
from engine.variants import VARIANTS, get_rules

DIFFERENCE_VARIANTS = [name for name in VARIANTS if not get_rules(name).acey_deucey]


def _compare(variant: str, count: int, seed: int) -> int:
    rules = get_rules(variant)
    board, dice = sample_positions(count, seed, rules, games=32, turns=60)
    afterstates = legal_afterstates(board, dice, rules)
    fast = batch_play_notations(board, dice, afterstates, rules)
    slow = scalar_play_notations(board, dice, afterstates, rules)
    assert len(fast) == afterstates.total
    mismatches = [(board[afterstates.position[row]].tolist(), dice[afterstates.position[row]].tolist(),
                   fast[row], slow[row]) for row in range(len(fast)) if fast[row] != slow[row]]
    assert not mismatches[:5]
    return afterstates.total


@pytest.mark.parametrize("variant", DIFFERENCE_VARIANTS)
def test_difference_notation_equals_the_scalar_search(variant):
    before = scalar_fallback_rows()
    assert _compare(variant, 400 if variant == "backgammon" else 150, seed=11) > 0
    assert scalar_fallback_rows() == before  # none of these variants falls back


def test_acey_deucey_uses_the_scalar_search():
    before = scalar_fallback_rows()
    total = _compare("acey-deucey", 30, seed=11)
    assert scalar_fallback_rows() == before + total


def test_golden_plays():
    # Opening position, 6-6: the difference is two checkers 24->18 and two 13->7; 3-1: 8/5 6/5.
    rules = get_rules("backgammon")
    board = rules.start_board().unsqueeze(0)
    for roll, expected in (((6, 6), "24/18(2) 13/7(2)"), ((3, 1), "8/5 6/5"), ((6, 5), "24/13")):
        dice = torch.tensor([roll], dtype=torch.int8)
        afterstates = legal_afterstates(board, dice, rules)
        assert expected in batch_play_notations(board, dice, afterstates, rules)


def test_no_move_is_written_as_such():
    # The mover on the bar against a closed board: 6-6 cannot enter.
    board = torch.zeros(1, 28, dtype=torch.int8)
    board[0, 25] = 1
    board[0, 19:25] = -2
    board[0, 5] = 14
    board[0, 0] = -3
    dice = torch.tensor([[6, 6]], dtype=torch.int8)
    afterstates = legal_afterstates(board, dice)
    assert batch_play_notations(board, dice, afterstates) == [NO_MOVE]


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_difference_notation_equals_the_scalar_search_on_thousands(variant):
    _compare(variant, 3000 if not get_rules(variant).acey_deucey else 60, seed=29)


@pytest.mark.parametrize("variant", DIFFERENCE_VARIANTS)
def test_play_words_write_their_strings_as_bytes_and_sort_as_them(variant):
    # The fields (NUL-padded blocks written in bulk by `bgtrain moves`) are the strings once the NUL bytes
    # go, in any row order; comparing rows number by number orders them as their strings. (Acey-deucey's
    # words, the scalar search's strings split, are checked byte for byte in tests/test_cli_moves.py.)
    rules = get_rules(variant)
    board, dice = sample_positions(25, 5, rules, games=16, turns=50)
    afterstates = legal_afterstates(board, dice, rules)
    words = play_words(board, dice, afterstates, rules)
    strings = words.strings()
    assert strings == scalar_play_notations(board, dice, afterstates, rules)
    order = np.random.default_rng(3).permutation(len(strings))
    written = np.concatenate(words.fields(order), axis=1)
    texts = [row.tobytes().replace(b"\0", b"").decode("ascii") for row in written]
    assert texts == [strings[row] for row in order]
    by_words = sorted(range(len(strings)), key=lambda row: tuple(words.words[:, row].tolist()))
    assert [strings[row] for row in by_words] == sorted(strings)


HAND_VARIANTS = [name for name in VARIANTS if get_rules(name).start_in_hand]


def _written(words, rows: int) -> list[str]:
    """The strings ``PlayWords.fields`` writes (what ``bgtrain moves`` prints), NUL padding removed."""
    blocks = words.fields(np.arange(rows))
    if not blocks:
        return [NO_MOVE] * rows
    joined = np.concatenate(blocks, axis=1)
    return [row.tobytes().replace(b"\0", b"").decode("ascii") for row in joined]


@pytest.mark.parametrize("variant", HAND_VARIANTS)
def test_written_notation_equals_the_scalar_one_with_checkers_in_hand(variant):
    # One position a call, as ``bgtrain moves`` answers a lone line: where every play of the batch fills
    # every word slot (both checkers entering from the hand), the words were written one short. Positions
    # from whole random games, those with checkers in hand first, plus the start.
    rules = get_rules(variant)
    board, dice = sample_positions(120, seed=41, rules=rules, games=8, turns=120)
    in_hand = board[:, 26] > 0
    assert in_hand.any() and (~in_hand).any()
    start = rules.start_board().unsqueeze(0)
    chosen = [(start, torch.tensor([[3, 1]], dtype=torch.int8))]
    chosen += [(board[row : row + 1], dice[row : row + 1]) for row in torch.nonzero(in_hand).flatten()[:6].tolist()]
    chosen += [(board[row : row + 1], dice[row : row + 1]) for row in torch.nonzero(~in_hand).flatten()[:2].tolist()]
    for one_board, one_dice in chosen:
        afterstates = legal_afterstates(one_board, one_dice, rules)
        words = play_words(one_board, one_dice, afterstates, rules)
        expected = scalar_play_notations(one_board, one_dice, afterstates, rules)
        assert words.texts[0] == ""
        assert _written(words, afterstates.total) == expected, (one_board.tolist(), one_dice.tolist())
        assert words.strings() == expected


def test_moves_writes_both_entering_checkers():
    from bgtrain.commands.moves import RequestBatch, answer_batch

    line = answer_batch(RequestBatch(["AAAAAAAAAAAAAA"], [(3, 1)], [(15, 15)], ["line 1"]), get_rules("dutch"))
    assert '"play": "bar/24 bar/22"' in line
