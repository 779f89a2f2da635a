"""``bgtrain play`` on the command line: refusals in one line, and the server it starts serving the page."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from bgtrain.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_variant_must_be_the_models(tmp_path, capsys):
    standard = str(ROOT / "checkpoints/bgtrain-default.pt")
    assert main(["play", "--variant", "nackgammon", "--model", standard, "--no-browser",
                 "--save", str(tmp_path / "s.json")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0
    assert "bgtrain play: error:" in error and "trained for 'backgammon', not for 'nackgammon'" in error
    assert main(["play", "--variant", "no-such-game", "--no-browser", "--save", str(tmp_path / "s.json")]) == 2
    assert "unknown variant 'no-such-game'" in capsys.readouterr().err


def test_missing_web_packages_name_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # "import uvicorn" now fails
    assert main(["play", "--no-browser"]) == 2
    error = capsys.readouterr().err.strip()
    assert error == "bgtrain play: error: bgtrain play needs uvicorn: pip install 'bgtrain[web]'"


def test_the_command_resumes_the_saved_session_and_serves_the_page(tmp_path):
    pytest.importorskip("uvicorn")
    from bgtrain.values.evaluator import Evaluator
    from bgtrain.web.dice import SeededDice
    from bgtrain.web.game import Session, Settings

    save = tmp_path / "session.json"
    session = Session(Evaluator.from_path(ROOT / "checkpoints/bgtrain-default.pt", bearoff=False), Settings(),
                      SeededDice(3), save_path=save)
    session.roll()  # saved after the action
    command = [sys.executable, "-m", "bgtrain.cli", "play", "--no-browser", "--port", "0", "--save", str(save)]
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("bgtrain play: resuming against"), line
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        page = urllib.request.urlopen(url, timeout=10).read().decode()
        assert '<svg id="board"' in page and "/static/board.js" in page
        assert "class BoardView" in urllib.request.urlopen(url + "static/board.js", timeout=10).read().decode()
        saved = json.loads(urllib.request.urlopen(url + "session.json", timeout=10).read())
        assert saved["events"] == json.loads(save.read_text())["events"] and saved["events"]
    finally:
        process.terminate()
        process.wait(10)


def test_bad_settings_and_positions_are_one_line_refusals(tmp_path, capsys):
    save = str(tmp_path / "s.json")
    for arguments, message in [
        (["--position", "nonsense"], "position ID 'nonsense'"),
        (["--clock", "1e999"], "clock_seconds must be a number of seconds"),
        (["--tutor-threshold", "5"], "tutor_threshold must be an equity from 0 to 1, not 5.0"),
    ]:
        assert main(["play", "--no-browser", "--new", "--save", save, *arguments]) == 2
        error = capsys.readouterr().err.strip()
        assert error.count("\n") == 0 and error.startswith("bgtrain play: error:") and message in error, error


def test_position_starts_the_game_there(tmp_path):
    pytest.importorskip("uvicorn")
    import argparse

    from bgtrain.commands.play import add_arguments, build_session

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--new", "--save", str(tmp_path / "s.json"), "--clock", "0",
                              "--position", "XGID=-CCC------------------ccc-:1:1:1:00:0:0:0:0:10"])
    _, session, _ = build_session(args)
    # XG's bottom player (you) on roll, owning a 2-cube: before the roll, free to redouble.
    assert session.setup["turn"] == 0 and session.phase == "roll" and session.turn == 0
    assert (session.cube_value, session.cube_owner) == (2, 0) and session.board[1:4] == (3, 3, 3)
