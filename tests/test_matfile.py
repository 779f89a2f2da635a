"""Jellyfish .mat files: written from a benchmark, read back and replayed on the engine; the layout
GNU Backgammon's importer expects; cube actions."""

from __future__ import annotations

import itertools

import pytest
import torch

from bgtrain.arena.agents import PubevalAgent, RandomAgent
from bgtrain.arena.duel import play_duel
from bgtrain.matfile import (
    DOUBLE,
    DROP,
    MOVE,
    TAKE,
    WIN,
    MatAction,
    MatGame,
    MatMatch,
    format_match,
    mat_play,
    player_name,
    read_mat,
    replay_game,
    save_games,
    write_mat,
)
from engine.rules import STANDARD


@pytest.fixture(scope="module")
def benchmark_games():
    history = []
    result = play_duel(PubevalAgent(), RandomAgent(4), 12, seed=9, history=history)
    return result, history


def test_history_matches_the_result(benchmark_games):
    result, history = benchmark_games
    assert len(history) == result.games == 12
    points = torch.tensor([record.points for record in history], dtype=torch.float64)
    assert float(points.mean()) == pytest.approx(result.points_per_game)
    for record in history:
        seats = [turn[0] for turn in record.turns]
        assert seats[0] == record.first_seat
        assert all(a != b for a, b in itertools.pairwise(seats))  # the sides alternate
    # Twins of a pair share their dice roll for roll, while both games last.
    pairs = {}
    for record in history:
        pairs.setdefault(record.pair, []).append(record)
    for first, second in pairs.values():
        assert first.a_seat != second.a_seat
        for turn_a, turn_b in zip(first.turns, second.turns):
            assert turn_a[1] == turn_b[1]


def test_written_games_replay_on_the_engine(benchmark_games, tmp_path):
    _, history = benchmark_games
    paths = save_games(tmp_path, history, "pubeval", "random", STANDARD, games_per_file=8)
    assert [path.name for path in paths] == ["games_0001.mat", "games_0002.mat"]
    records = sorted(history, key=lambda r: (r.pair, r.a_seat))
    games = [game for path in paths for game in read_mat(path).games]
    assert len(games) == len(records)
    score = [0, 0]
    for game, record in zip(games, records):
        assert game.players == ("pubeval", "random")
        assert game.scores == tuple(score)
        replayed = replay_game(game, STANDARD)  # parses every play with its dice: legal or it raises
        assert replayed.moves == len(record.turns)
        assert replayed.winner == (0 if record.points > 0 else 1)
        assert replayed.points == abs(record.points)
        assert replayed.final_board == record.turns[-1][3]
        score[replayed.winner] += replayed.points


def test_layout_is_what_gnubg_reads(benchmark_games, tmp_path):
    _, history = benchmark_games
    path = save_games(tmp_path, history[:2], "pubeval", "random", STANDARD)[0]
    lines = path.read_text().splitlines()
    assert lines[0].startswith("; ") and "set jacoby off" in lines[0]  # importers skip it
    assert lines[1] == " 0 point match"  # a money session
    assert lines[3] == " Game 1"
    assert lines[4] == f" {'pubeval : 0':<31}random : 0"
    move_lines = [line for line in lines if line[3:5] == ") "]
    for line in move_lines:
        left = line[5:32].strip()
        right = line[33:].strip()
        # Left player's action in columns 5..31, the right player's from column 33, GNU's layout.
        assert left == "" or left[2] == ":" or left in ("Doubles => 2", "Takes", "Drops")
        assert right == "" or right[2] == ":"
    assert any(line.strip().startswith("Wins ") for line in lines)


def test_plays_are_single_dice_with_bar_25_off_0_and_hits():
    start = STANDARD.start_board().tolist()
    after = list(start)
    after[8], after[6], after[5] = 2, 4, 2  # 8/5 6/5 with 3-1
    assert mat_play(start, after, (3, 1)) == "8/5 6/5"
    board = [0] * 28
    board[25], board[22], board[6] = 1, -1, 14  # on the bar; an opposing blot on our 22 point
    board[1] = -14
    hit = list(board)
    hit[25], hit[22], hit[0] = 0, 1, -1
    hit[22] = 0
    hit[18] = 1  # bar/22*/18: enter with the 3, hitting, and continue with the 4
    assert mat_play(board, hit, (4, 3)) == "25/22* 22/18"
    home = [0] * 28
    home[2], home[1], home[24] = 1, 1, -15
    off = list(home)
    off[2] = off[1] = 0
    assert mat_play(home, off, (6, 5)) == "2/0 1/0"


def test_cube_actions_round_trip(tmp_path):
    opening = (3, 1)
    actions = (
        MatAction(0, MOVE, opening, "8/5 6/5"),
        MatAction(1, DOUBLE, value=2),
        MatAction(0, TAKE),
        MatAction(1, MOVE, (6, 4), "24/18 13/9"),
        MatAction(0, DOUBLE, value=4),
        MatAction(1, DROP),
        MatAction(0, WIN, value=2),
    )
    match = MatMatch(7, (MatGame(1, ("bot", "gnubg"), (0, 0), actions),))
    text = format_match(match)
    assert "  2)  Takes                      64: 24/18 13/9" in text.splitlines()
    path = write_mat(tmp_path / "cube.mat", match)
    read = read_mat(path)
    assert read.length == 7
    assert read.games[0].actions == actions
    replayed = replay_game(read.games[0])
    assert (replayed.winner, replayed.points, replayed.moves) == (0, 2, 2)


def test_replay_refuses_an_illegal_play(tmp_path):
    actions = (MatAction(0, MOVE, (3, 1), "8/2"),)  # six pips with a 3-1
    with pytest.raises(ValueError, match="action 1"):
        replay_game(MatGame(1, ("a", "b"), (0, 0), actions))


def test_player_names_fit_the_format():
    assert player_name("checkpoints/x.pt:2ply") == "x-2ply"
    # Model files by their names, not their paths cut to 24 characters (the probe's checkpoints_bgtrain-defa).
    assert player_name("checkpoints/bgtrain-default.pt") == "bgtrain-default"
    assert player_name("runs/readme/final.pt") == "readme-final" and player_name("gnubg:0ply") == "gnubg-0ply"
    assert ":" not in player_name("gnubg:0ply") and " " not in player_name("my bot")
    assert player_name("pubeval", "pubeval") == "pubeval_2"
    assert len(player_name("x" * 80)) <= 31


def gnubg_program():
    """GNU Backgammon's own bindings (``pip install gnubg``), which can import .mat files."""
    try:
        import gnubg
    except ImportError:
        return None
    return gnubg if hasattr(gnubg, "command") and hasattr(gnubg, "match") else None


@pytest.mark.skipif(gnubg_program() is None, reason="needs GNU Backgammon's bindings: pip install gnubg")
def test_gnu_backgammon_imports_the_written_games(benchmark_games, tmp_path):
    gnubg = gnubg_program()
    _, history = benchmark_games
    path = save_games(tmp_path, history, "pubeval", "random", STANDARD)[0]
    gnubg.command("set jacoby off")  # as the file's first line asks
    gnubg.command(f"import mat {path}")
    imported = gnubg.match()
    assert imported["match-info"]["match-length"] == 0
    assert (imported["match-info"]["X"]["name"], imported["match-info"]["O"]["name"]) == ("pubeval", "random")
    ours = read_mat(path).games
    assert len(imported["games"]) == len(ours)
    for theirs, game in zip(imported["games"], ours):
        replayed = replay_game(game)
        assert theirs["info"]["winner"] == ("X" if replayed.winner == 0 else "O")
        assert theirs["info"]["points-won"] == replayed.points
        moves = [entry for entry in theirs["game"] if entry["action"] == "move"]
        assert [tuple(entry["dice"]) for entry in moves] == [a.dice for a in game.actions if a.kind == MOVE]
