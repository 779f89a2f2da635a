"""``bgtrain analyse``: reading match files (good and bad), walking games, and the analysis of a hand-made
game with known errors, checked against the shipped model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bgtrain.analysis.games import START, read_match_file
from bgtrain.analysis.summary import analyse_files
from bgtrain.cli import main
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
    parse_mat,
)
from bgtrain.values.evaluator import Evaluator
from engine.board import flip_board

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "checkpoints" / "bgtrain-supervised.pt"
NAMES = ("alice", "bob")

# Game 1: alice splits her back checkers with the opening 31 (8/5 6/5 is the best play by far), then
# doubles at once, and bob passes a position he should take. Game 2: sound opening plays, bob doubles
# and alice takes, and alice resigns.
GAME_ONE = (MatAction(0, MOVE, (3, 1), "24/21 24/23"), MatAction(1, MOVE, (4, 2), "8/4 6/4"),
            MatAction(0, DOUBLE, value=2), MatAction(1, DROP), MatAction(0, WIN, value=1))
GAME_TWO = (MatAction(0, MOVE, (3, 1), "8/5 6/5"), MatAction(1, MOVE, (4, 2), "8/4 6/4"),
            MatAction(0, MOVE, (6, 6), "24/18 24/18 13/7 13/7"), MatAction(1, DOUBLE, value=2),
            MatAction(0, TAKE), MatAction(1, MOVE, (2, 1), "13/11 6/5"), MatAction(1, WIN, value=2))


def hand_made(path: Path) -> Path:
    match = MatMatch(0, (MatGame(1, NAMES, (0, 0), GAME_ONE), MatGame(2, NAMES, (1, 0), GAME_TWO)))
    path.write_text(format_match(match))
    return path


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator.from_path(MODEL)


def test_reader_keeps_lines_and_walks_turns_and_cube(tmp_path):
    path = hand_made(tmp_path / "hand.mat")
    match = parse_mat(path.read_text(), path)
    lines = path.read_text().splitlines()
    for game in match.games:
        for action in game.actions:
            assert action.line >= 1
            if action.kind == MOVE:
                assert f"{action.dice[0]}{action.dice[1]}:" in lines[action.line - 1]
    read = read_match_file(path)
    assert read.errors == [] and read.length == 0 and len(read.games) == 2
    first, second = read.games
    assert [turn.play for turn in first.turns] == ["24/21 24/23", "8/4 6/4"]
    assert first.winner == 0 and first.points == 1 and not first.resigned
    # No cube point before a game's first roll; bob could double before his first roll (he did not),
    # alice doubled before her second and bob dropped.
    assert [(point.player, point.doubled, point.response) for point in first.cube_points] == [
        (1, False, None), (0, True, "drop")]
    # Game 2: bob could double before his first turn (no), alice before her second (no), bob doubled
    # and alice took, then bob owned nothing to redouble with (alice owns the cube) and the game ended.
    assert [(point.player, point.doubled, point.response) for point in second.cube_points] == [
        (1, False, None), (0, False, None), (1, True, "take")]
    assert second.turns[-1].cube.value == 2 and second.turns[-1].cube.owner == "opponent"
    assert second.winner == 1 and second.points == 2 and second.resigned
    # Boards are from the mover's side: bob's first position is alice's play seen from his side.
    assert second.turns[0].board == START
    assert second.turns[1].board == tuple(flip_board(torch.tensor(second.turns[0].after, dtype=torch.int8)).tolist())


def test_bad_file_and_bad_game_name_file_and_line(tmp_path):
    missing = read_match_file(tmp_path / "missing.mat")
    assert len(missing.errors) == 1 and "missing.mat" in missing.errors[0]
    (tmp_path / "header.mat").write_text("Game 1\n")
    header = read_match_file(tmp_path / "header.mat")
    assert header.games == [] and "point match" in header.errors[0]
    text = hand_made(tmp_path / "good.mat").read_text().splitlines()
    # Spoil game 1's second line of play with an unreadable cell: game 2 must still be read.
    bad_line = next(index for index, line in enumerate(text) if "Doubles" in line)
    text[bad_line] = "  2) zz: 13/3"
    (tmp_path / "bad.mat").write_text("\n".join(text) + "\n")
    bad = read_match_file(tmp_path / "bad.mat")
    assert [game.number for game in bad.games] == [2]
    assert len(bad.errors) == 1 and bad.errors[0].startswith(f"{tmp_path / 'bad.mat'}:{bad_line + 1}:")
    # A play that does not fit the board is refused with its line, the other game kept.
    text = hand_made(tmp_path / "good.mat").read_text().replace("24/21 24/23", "24/21 20/19")
    (tmp_path / "illegal.mat").write_text(text)
    illegal = read_match_file(tmp_path / "illegal.mat")
    assert [game.number for game in illegal.games] == [2] and ":6: game 1:" in illegal.errors[0]


def test_hand_made_errors_are_flagged(tmp_path, evaluator):
    report = analyse_files(evaluator, [hand_made(tmp_path / "hand.mat")], ply=0)
    assert report["errors"] == []
    first, second = report["files"][0]["games"]
    split = next(row for row in first["decisions"] if row["kind"] == "move" and row["player"] == 0)
    assert split["best"] == "8/5 6/5"
    # Playing 31 with both back checkers instead of making the 5-point is a well-known blunder (gnubg
    # 1.07 at 0-ply puts it 0.2 to 0.3 behind 8/5 6/5): "bad" or "very bad", not a rounding difference.
    assert 0.12 < split["loss"] < 0.40 and split["mark"] in ("bad", "very bad")
    cube = next(row for row in first["decisions"] if row["kind"] == "cube" and row["action"] == "double")
    # Doubling in the opening is a clear error, and passing it a much bigger one.
    assert cube["proper"] == "No double, take" and cube["errors"] == ["wrong double", "wrong pass"]
    assert 0.2 < cube["loss"] < 1.0 and cube["response_loss"] > 1.0
    sound = [row for row in second["decisions"] if row["kind"] == "move" and not row["forced"]]
    assert sound[0]["loss"] == 0.0 and sound[0]["mark"] == ""
    alice, bob = report["files"][0]["summary"]
    assert alice["checker"]["marks"]["very bad"] + alice["checker"]["marks"]["bad"] >= 1
    assert alice["cube"]["wrong_doubles"] == 1 and bob["cube"]["wrong_passes"] == 1
    assert alice["overall"]["error_rate"] > 0 and alice["overall"]["pr"] == pytest.approx(
        alice["overall"]["error_rate"] / 2, abs=0.01)
    # Luck: every roll has one, the opening 66 of game 2 is lucky, and the adjusted results cancel.
    rolls = [row for game in (first, second) for row in game["decisions"] if row["kind"] == "move"]
    assert all(row["luck"] is not None for row in rolls)
    sixes = next(row for row in rolls if row["dice"] == "66")
    assert sixes["luck"] > 0.2
    assert alice["result"]["luck_adjusted"] == pytest.approx(-bob["result"]["luck_adjusted"], abs=1e-3)
    assert alice["result"]["points_won"] == 1 and alice["result"]["points_lost"] == 2


def test_cubeless_and_deeper_ply_agree_on_the_blunder(tmp_path, evaluator):
    path = hand_made(tmp_path / "hand.mat")
    cubeless = analyse_files(evaluator, [path], ply=0, cubeless=True, luck="none")
    first = cubeless["files"][0]["games"][0]
    assert all(row["kind"] == "move" for row in first["decisions"])
    split = first["decisions"][0]
    assert split["mark"] in ("bad", "very bad") and split["luck"] is None
    deeper = analyse_files(evaluator, [path], ply=1, cubeless=True, luck="none")
    assert deeper["files"][0]["games"][0]["decisions"][0]["best"] == "8/5 6/5"
    assert deeper["files"][0]["games"][0]["decisions"][0]["loss"] > 0.08


def test_command_line_reports_and_exit_status(tmp_path, capsys):
    folder = tmp_path / "games"
    folder.mkdir()
    hand_made(folder / "a.mat")
    (folder / "b.mat").write_text("not a match file\n")
    page = tmp_path / "report.html"
    status = main(["analyse", str(folder), "--json", "--luck", "static", "--html", str(page), "--threads", "1"])
    captured = capsys.readouterr()
    assert status == 2
    report = json.loads(captured.out)
    assert [Path(file["path"]).name for file in report["files"]] == ["a.mat"]
    assert len(report["errors"]) == 1 and "b.mat" in report["errors"][0]
    assert captured.err.count("\n") == 1 and "b.mat" in captured.err and "Traceback" not in captured.err
    text = page.read_text()
    assert text.count("<svg") >= 3 and "very bad" in text
    assert main(["analyse", str(folder / "a.mat"), "--luck", "none", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "alice" in out and "24/21 24/23" in out and "best 8/5 6/5" in out
    assert main(["analyse", str(tmp_path / "nothing.mat")]) == 2
    assert "nothing.mat" in capsys.readouterr().err


def test_luck_methods_refused_when_unknown(evaluator):
    from bgtrain.analysis.evaluate import analyse_turns

    with pytest.raises(ValueError, match="luck"):
        analyse_turns(evaluator, [], luck="lucky")
    assert analyse_turns(evaluator, []).loss.shape == (0,)
    assert torch.get_num_threads() >= 1


def test_sgf_reads_as_the_same_match_as_mat(tmp_path):
    """A 5-point match GNU Backgammon 1.07 played against itself (one side with noise), saved by it as
    both ``.mat`` (``export match mat``) and ``.sgf`` (``save match``): the same turns, cube decisions and
    results from either file."""
    data = ROOT / "tests" / "data" / "analysis"
    mat, sgf = read_match_file(data / "gnubg_5point.mat"), read_match_file(data / "gnubg_5point.sgf")
    assert mat.errors == [] and sgf.errors == [] and mat.length == sgf.length == 5

    def content(match):
        return [([(t.player, t.board, t.dice, t.after, t.cube) for t in game.turns],
                 [(c.player, c.board, c.cube, c.doubled, c.response, c.rules) for c in game.cube_points],
                 game.winner, game.points, game.crawford, game.players) for game in match.games]

    assert content(mat) == content(sgf) and len(sgf.games) == 2
    assert sgf.games[1].crawford and not sgf.games[1].cube_points  # 4-0 to 5: the Crawford game
    text = (data / "gnubg_5point.sgf").read_text()
    spoiled = text.replace(";B[41abae]", ";B[41abq!]", 1)
    (tmp_path / "bad.sgf").write_text(spoiled)
    bad = read_match_file(tmp_path / "bad.sgf")
    line = text[: text.index(";B[41abae]")].count("\n") + 1
    assert [game.number for game in bad.games] == [2] and bad.errors[0].startswith(f"{tmp_path / 'bad.sgf'}:{line}:")
