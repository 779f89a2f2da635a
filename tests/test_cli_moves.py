"""Smoke tests of `bgtrain moves`: JSON lines in, every legal play out."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch

from bgtrain.cli import main
from engine.movegen import legal_afterstates
from engine.notation import parse_play, scalar_play_notations
from engine.parsing import parse_moves_request
from engine.position_id import (
    decode_position_id,
    encode_position_id,
    split_checkers_in_hand,
    with_checkers_in_hand,
)
from engine.random_play import sample_positions
from engine.variants import get_rules


def run_moves(capsys, args, stdin_text=None, monkeypatch=None):
    if stdin_text is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin_text))
    status = main(["moves", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_opening_31_from_arguments(capsys):
    status, out, _ = run_moves(capsys, ["4HPwATDgc/ABMA", "31"])
    assert status == 0
    (line,) = out.splitlines()
    result = json.loads(line)
    assert result["position_id"] == "4HPwATDgc/ABMA" and result["dice"] == "31"
    plays = {move["play"] for move in result["moves"]}
    assert len(result["moves"]) == 16 and {"8/5 6/5", "24/20", "13/9"} <= plays
    start = decode_position_id("4HPwATDgc/ABMA").tolist()
    for move in result["moves"]:
        after = decode_position_id(move["position_id"]).tolist()
        assert list(parse_play(start, move["play"], dice=(3, 1))) == after


def test_many_lines_from_stdin_match_the_generator(capsys, monkeypatch):
    boards, dice = sample_positions(500, seed=4)
    lines = "".join(f"{encode_position_id(b)} {d[0]}{d[1]}\n" for b, d in zip(boards.tolist(), dice.tolist()))
    status, out, _ = run_moves(capsys, [], lines, monkeypatch)
    assert status == 0
    results = [json.loads(line) for line in out.splitlines()]
    assert len(results) == 500
    expected = legal_afterstates(boards, dice)
    assert [len(r["moves"]) for r in results] == expected.counts.tolist()
    for result, board, count in zip(results[:50], boards, expected.counts.tolist()):
        ids = {move["position_id"] for move in result["moves"]}
        assert len(ids) == count  # distinct afterstates


@pytest.mark.parametrize(
    "args, message",
    [
        (["4HPwATDgc/ABM", "31"], "14 characters"),
        (["4HPwATDgc/ABMA", "71"], "two digits 1..6"),
        (["4HPwATDgc/ABMA"], "<position-id> <dice> [hand=M,O]"),
        (["//////////////", "31"], "not zero"),
    ],
)
def test_bad_input_is_one_clear_line(capsys, args, message):
    status, out, err = run_moves(capsys, args)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_no_legal_move_returns_the_position(capsys):
    # The mover has a checker on the bar and the opponent holds its whole home board (the mover's
    # points 19..24, where the mover enters): a dance.
    board = torch.zeros(28, dtype=torch.int8)
    board[19:25] = -2
    board[1] = -3
    board[25] = 1
    board[8] = 14
    position_id = encode_position_id(board)
    status, out, _ = run_moves(capsys, [position_id, "64"])
    result = json.loads(out)
    assert status == 0 and len(result["moves"]) == 1
    assert result["moves"][0]["position_id"] == position_id and result["moves"][0]["play"] == "(no move)"


def test_every_command_prints_its_help(capsys):
    from bgtrain.cli import COMMANDS

    for command in [[], *([name] for name in COMMANDS)]:
        assert main([*command, "--help"]) == 0
        assert "usage: bgtrain" in capsys.readouterr().out


def reference_line(text: str, variant: str) -> str:
    """The answer to one input line the slow, obvious way: scalar decoding, one position's moves, the scalar
    notation search, the scalar encoder, ``json.dumps`` of the dictionaries."""
    rules = get_rules(variant)
    request = parse_moves_request(text, "line 1")
    board = decode_position_id(request.position_id, rules)
    if request.hand is not None:
        board = with_checkers_in_hand(board, request.hand, rules)
    board, dice = board.unsqueeze(0), torch.tensor([request.dice], dtype=torch.int8)
    afterstates = legal_afterstates(board, dice, rules)
    moves = []
    for row, play, extra_roll in zip(afterstates.boards.tolist(), scalar_play_notations(board, dice, afterstates, rules),
                                     afterstates.extra_roll.tolist()):
        on_board, hand = split_checkers_in_hand(row)
        move = {"play": play, "position_id": encode_position_id(on_board)}
        if rules.start_in_hand:
            move["in_hand"] = list(hand)
        if rules.acey_deucey:
            move["extra_roll"] = extra_roll
        moves.append(move)
    moves.sort(key=lambda move: (move["play"], move.get("extra_roll", False)))
    head = {"position_id": request.position_id, "dice": f"{request.dice[0]}{request.dice[1]}"}
    if request.hand is not None:
        head["hand"] = list(request.hand)
    return json.dumps({**head, "moves": moves}) + "\n"


@pytest.mark.parametrize("variant, count", [("backgammon", 60), ("nackgammon", 20), ("dutch", 40), ("acey-deucey", 8)])
def test_output_is_byte_for_byte_the_json_of_the_scalar_answers(capsys, monkeypatch, variant, count):
    # The command joins its lines from pieces and batches everything; the reference builds dictionaries.
    rules = get_rules(variant)
    boards, dice = sample_positions(count, 17, rules, games=16, turns=50)
    lines = []
    for board, (first, second) in zip(boards.tolist(), dice.tolist()):
        on_board, hand = split_checkers_in_hand(board)
        lines.append(f"{encode_position_id(on_board)} {first}-{second}"
                     + (f" hand={hand[0]},{hand[1]}" if rules.start_in_hand else "") + "\n")
    status, out, _ = run_moves(capsys, ["--variant", variant, "--batch", "16"], "".join(lines), monkeypatch)
    assert status == 0
    assert out.splitlines(keepends=True) == [reference_line(line, variant) for line in lines]
    assert all(json.loads(line)["moves"] for line in out.splitlines())


def test_a_bad_id_in_a_batch_names_its_line(capsys, monkeypatch):
    # The batched decoder finds the batch bad; the line-by-line decoding names the line and the problem.
    text = "4HPwATDgc/ABMA 31\n4HPwATDgc/ABMA 42\n4HPwATDgc/ABMB 31\n"
    status, out, err = run_moves(capsys, ["--batch", "2"], text, monkeypatch)
    assert status == 2 and len(out.splitlines()) == 2
    assert "line 3: position ID '4HPwATDgc/ABMB': trailing bits past the 80-bit key" in err
    assert len(err.strip().splitlines()) == 1


def test_moves_runs_op_by_op_and_leaves_the_compile_mode_as_it_was(capsys, monkeypatch):
    from engine import kernels

    monkeypatch.delenv(kernels.ENVIRONMENT_VARIABLE, raising=False)
    seen = []
    monkeypatch.setattr("bgtrain.commands.moves.legal_afterstates",
                        lambda *args: seen.append(kernels._mode) or legal_afterstates(*args))
    previous = kernels.set_mode("auto")
    try:
        assert run_moves(capsys, ["4HPwATDgc/ABMA", "31"])[0] == 0
        assert seen == ["never"] and kernels._mode == "auto"
    finally:
        kernels.set_mode(previous)


def test_lines_the_fast_reader_leaves_to_the_parser_give_the_same_answers(capsys, monkeypatch):
    # "3-1", "31" and the parser's other spellings of a roll ("3--1"), spaces around: one answer.
    lines = ["4HPwATDgc/ABMA 31", "  4HPwATDgc/ABMA   3-1 ", "4HPwATDgc/ABMA 3--1", "", "4HPwATDgc/ABMA -31"]
    status, out, _ = run_moves(capsys, [], "\n".join(lines) + "\n", monkeypatch)
    assert status == 0
    assert out.splitlines() == [reference_line("4HPwATDgc/ABMA 31", "backgammon").rstrip("\n")] * 4


def test_play_order_sorts_by_position_words_and_extra_roll_in_one_key_or_many():
    from bgtrain.commands.moves import _play_order

    generator = np.random.default_rng(8)
    position = np.sort(generator.integers(0, 50, 2000))
    words = generator.integers(0, 6, (3, 2000))
    extra_roll = generator.integers(0, 2, 2000).astype(bool)
    expected = np.lexsort((extra_roll, *words[::-1], position))
    assert np.array_equal(_play_order(position, words, extra_roll), expected)
    # Numbers too wide for one 62-bit key: a sort on each column, the same order.
    assert np.array_equal(_play_order(position, words << 30, extra_roll), expected)


def test_lines_keep_their_numbers_across_batches_read_either_way(capsys, monkeypatch):
    # Batch 1 (lines 1-2) holds a blank line and is read line by line; batch 2 (lines 3-4) is plain.
    text = "4HPwATDgc/ABMA 31\n\n4HPwATDgc/ABMA 42\n4HPwATDgc/ABMB 31\n"
    status, out, err = run_moves(capsys, ["--batch", "2"], text, monkeypatch)
    assert status == 2 and len(out.splitlines()) == 1
    assert err.startswith("bgtrain moves: error: line 4: position ID '4HPwATDgc/ABMB'")


def test_lines_with_and_without_checkers_in_hand_in_one_batch(capsys, monkeypatch):
    # Dutch: the start (all 15 in hand each), then positions with 12 and 3 in hand, and an ID without the
    # field (every checker not on the board borne off): the line starts are written in bulk, each its own.
    rules = get_rules("dutch")
    on_board, _ = split_checkers_in_hand(rules.start_board().tolist())
    position_id = encode_position_id(on_board)
    lines = [f"{position_id} 31 hand=15,15", f"{position_id} 66 hand=12,3", "4HPwATDgc/ABMA 42",
             f"{position_id} 21 hand=0,9"]
    status, out, _ = run_moves(capsys, ["--variant", "dutch"], "\n".join(lines) + "\n", monkeypatch)
    assert status == 0
    assert out.splitlines(keepends=True) == [reference_line(line, "dutch") for line in lines]
