"""Smoke tests of ``bgtrain bench`` and ``bgtrain league``, end to end on a tiny budget."""

from __future__ import annotations

import json
import sys

import pytest
from helpers import has_gnubg, tiny_checkpoint

from bgtrain.arena.duel import DuelResult
from bgtrain.arena.league import fit_ratings
from bgtrain.cli import main
from bgtrain.matfile import read_mat, replay_game


def test_bench_prints_and_writes_json(tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert main(["bench", "pubeval", "random", "--games", "40", "--json", str(path), "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "pubeval: +" in out and "points per game (95%)" in out and "games/s" in out
    report = json.loads(path.read_text())
    assert report["agent_a"] == "pubeval" and report["agent_b"] == "random"
    assert report["games"] == 40 and report["mode"] == "money_cubeless"
    assert report["points_per_game"] > 1.0  # pubeval crushes random (about +2.5 over many games)
    for key in ("interval95", "a_win", "a_gammon", "a_backgammon", "b_win", "b_gammon", "b_backgammon",
                "games_per_second", "seed"):
        assert key in report


def test_bench_is_reproducible_and_saves_games(tmp_path, capsys):
    first, second = tmp_path / "1.json", tmp_path / "2.json"
    games = tmp_path / "games"
    main(["bench", "pubeval", "random", "--games", "6", "--seed", "3", "--json", str(first), "--threads", "1",
          "--save-games", str(games)])
    main(["bench", "pubeval", "random", "--games", "6", "--seed", "3", "--json", str(second), "--threads", "1"])
    one, two = json.loads(first.read_text()), json.loads(second.read_text())
    assert one["points_per_game"] == two["points_per_game"]
    files = sorted(games.glob("*.mat"))
    assert len(files) == 1 == len(one["saved_games"])
    match = read_mat(files[0])
    assert len(match.games) == 6
    total = sum(replay_game(game).points * (1 if replay_game(game).winner == 0 else -1) for game in match.games)
    assert total / 6 == pytest.approx(one["points_per_game"])


@pytest.mark.parametrize("argv, message", [
    (["bench", "pubeval", "nosuchbot", "--games", "4"], "unknown agent 'nosuchbot'"),
    (["bench", "pubeval", "random", "--games", "0"], "argument --games: must be at least 1"),
    (["bench", "pubeval", "random", "--cube", "--match", "7"], "--cube is for money play"),
    (["league", "pubeval", "--games", "4"], "at least two agents"),
    (["league", "pubeval", "pubeval", "--games", "4"], "named twice"),
])
def test_user_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_league_writes_table_json_and_plot(tmp_path, capsys):
    out = tmp_path / "league"
    assert main(["league", "pubeval", "random", "pubeval", "--games", "4", "--out", str(out)]) == 2  # duplicate
    capsys.readouterr()
    assert main(["league", "pubeval", "random", str(tmp_path / "none.pt"), "--games", "4"]) == 2
    capsys.readouterr()
    third = "gnubg:0ply" if has_gnubg() else str(tiny_checkpoint(tmp_path / "tiny.pt"))
    assert main(["league", "pubeval", "random", third, "--games", "8", "--out", str(out), "--threads", "1"]) == 0
    text = capsys.readouterr().out
    assert "rating" in text
    report = json.loads((out / "league.json").read_text())
    assert len(report["agents"]) == 3 and len(report["matches"]) == 3
    assert abs(sum(entry["rating"] for entry in report["ratings"].values())) < 1e-5
    assert len(report["points_per_game"]) == 3 and report["points_per_game"][0][0] is None
    plots = list(out.glob("league.png")) + list(out.glob("league.svg"))
    assert len(plots) == 1 and plots[0].stat().st_size > 1000


def test_league_plot_without_matplotlib_is_an_svg(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    out = tmp_path / "league"
    assert main(["league", "pubeval", "random", "--games", "4", "--out", str(out), "--threads", "1"]) == 0
    svg = (out / "league.svg").read_text()
    assert svg.startswith("<svg") and "pubeval" in svg and "ratings" in svg


@pytest.mark.parametrize("flags, mode", [(["--cube"], "money_cubeful"), (["--match", "3"], "match_3")])
def test_cubeful_bench_runs_and_saves_games(flags, mode, tmp_path, capsys):
    path, games = tmp_path / "cube.json", tmp_path / "games"
    argv = ["bench", str(tiny_checkpoint(tmp_path / "tiny.pt")), "pubeval", "--games", "4", "--threads", "1",
            "--json", str(path), "--save-games", str(games), *flags]
    assert main(argv) == 0
    assert "doubles per game" in capsys.readouterr().out
    report = json.loads(path.read_text())
    assert report["mode"] == mode and report["units"] == 4
    for saved in report["saved_games"]:
        for game in read_mat(saved).games:
            replay_game(game)


def _match(a: str, b: str, ppg: float, interval: float = 0.05) -> DuelResult:
    return DuelResult(a, b, 1000, ppg, interval, 0.5, 0.1, 0.0, 0.5, 0.1, 0.0)


def test_ratings_recover_consistent_results():
    truth = {"x": 0.6, "y": 0.1, "z": -0.7}
    names = list(truth)
    matches = [_match(a, b, truth[a] - truth[b]) for i, a in enumerate(names) for b in names[i + 1 :]]
    ratings, intervals = fit_ratings(names, matches)
    assert ratings == pytest.approx([0.6, 0.1, -0.7])
    assert all(0 < h < 0.05 for h in intervals)
    two, _ = fit_ratings(["a", "b"], [_match("a", "b", 0.4)])
    assert two == pytest.approx([0.2, -0.2])
    # A more precise match pulls the fit towards itself.
    noisy = [_match("x", "y", 0.5, 0.01), _match("y", "z", 0.8, 0.5), _match("x", "z", 1.0, 0.5)]
    ratings, _ = fit_ratings(names, noisy)
    assert ratings[0] - ratings[1] == pytest.approx(0.5, abs=0.01)


def test_no_cube_in_a_variant_without_one(capsys):
    assert main(["bench", "random", "random", "--variant", "acey-deucey", "--cube", "--games", "2"]) == 2
    assert "acey-deucey is played without a doubling cube" in capsys.readouterr().err
    assert main(["bench", "random", "random", "--variant", "acey-deucey", "--games", "2", "--threads", "1"]) == 0
