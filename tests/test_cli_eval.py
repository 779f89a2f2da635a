"""`bgtrain eval` end to end: text and JSON output, dice from an XGID, and one-line errors."""

from __future__ import annotations

import json

import pytest
import torch

from bgtrain.cli import main
from bgtrain.model import shipped as shipped_models
from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.network import ValueNetwork
from bgtrain.outcomes import cubeless_equity
from bgtrain.training.config import Config, RunConfig
from bgtrain.values.bearoff import build_bearoff_database, default_path
from bgtrain.values.bearoff_two_sided import build_two_sided_database
from bgtrain.values.bearoff_two_sided import default_path as two_sided_default_path

START = "4HPwATDgc/ABMA"
START_XGID_52 = "XGID=-b----E-C---eE---c-e----B-:0:0:1:52:0:0:0:0:10"


@pytest.fixture(scope="module")
def small_database():
    return build_bearoff_database(3)


@pytest.fixture(scope="module")
def small_two_sided():
    return build_two_sided_database(2)


@pytest.fixture(autouse=True)
def small_bearoff_cache(tmp_path, monkeypatch, small_database, small_two_sided):
    """Small bear-off databases where the evaluator looks for the cached ones, so that no test builds
    (or reads) the real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    small_database.save(default_path())
    small_two_sided.save(two_sided_default_path())


def save_model(path, **model_changes):
    torch.manual_seed(5)
    network = ValueNetwork("tesauro198", (16,))
    payload = checkpoint_payload(network, Config())
    payload["model"] = {**payload["model"], **model_changes}
    save_checkpoint(path, payload)
    return str(path)


@pytest.fixture
def model(tmp_path):
    return save_model(tmp_path / "model.pt")


def test_text_output(model, capsys):
    assert main(["eval", START, "--dice", "31", "--model", model]) == 0
    out = capsys.readouterr().out
    assert "Position ID: 4HPwATDgc/ABMA" in out and "X to play 31" in out
    assert "Equity" in out and "0-ply" in out
    assert "8/5 6/5" in out and "24/23 13/10" in out
    rows = [line for line in out.splitlines() if line[:6].strip().isdigit()]
    assert len(rows) == 16  # the 16 distinct plays of 31 from the start


def test_json_output(model, capsys):
    assert main(["eval", START, "--dice", "3-1", "--ply", "1", "--model", model, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["position"]["position_id"] == START and report["position"]["dice"] == [3, 1]
    assert report["ply"] == 1 and report["model"] == model
    probabilities = report["evaluation"]["probabilities"]
    assert set(probabilities) == {"win", "win_gammon", "win_backgammon", "lose_gammon", "lose_backgammon"}
    equity = float(cubeless_equity(torch.tensor(list(probabilities.values()))))
    assert report["evaluation"]["equity"] == pytest.approx(equity, abs=1e-5)
    hint = report["hint"]
    assert [row["rank"] for row in hint] == list(range(1, 17))
    assert hint[0]["difference"] == 0.0 and all(row["difference"] <= 0 or row["ply"] < 1 for row in hint)
    assert {row["ply"] for row in hint} <= {0, 1} and hint[0]["ply"] == 1
    assert "8/5 6/5" in {row["play"] for row in hint}


def test_xgid_brings_its_dice(model, capsys):
    assert main(["eval", START_XGID_52, "--model", model, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["position"]["format"] == "xgid" and report["position"]["dice"] == [5, 2]
    assert "13/11 13/8" in {row["play"] for row in report["hint"]}
    # Without dice there is no hint.
    assert main(["eval", START, "--model", model, "--json"]) == 0
    assert "hint" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["4HPwATDgc/ABM"], "neither a GNU Backgammon position ID"),
        (["4HPwATDgc/AB!A"], "position ID"),
        (["XGID=-b----E-C---eE---c-e----B-:0:0:1:52:0:0:0:0"], "not 10"),
        ([START, "--dice", "71"], "dice"),
        ([START, "--ply", "-1"], "--ply"),
    ],
)
def test_user_errors_are_one_line(model, capsys, arguments, message):
    assert main(["eval", *arguments, "--model", model]) == 2
    error = capsys.readouterr().err
    assert error.startswith("bgtrain eval: error: ") and message in error and error.count("\n") == 1


def test_model_errors(tmp_path, capsys, monkeypatch):
    assert main(["eval", START, "--model", str(tmp_path / "missing.pt")]) == 2
    assert "no checkpoint at" in capsys.readouterr().err
    foreign = save_model(tmp_path / "foreign.pt", encoder="someone-elses-encoder")
    assert main(["eval", START, "--model", foreign]) == 2
    assert "someone-elses-encoder" in capsys.readouterr().err
    old = save_model(tmp_path / "old.pt", encoder_version=-1)
    assert main(["eval", START, "--model", old]) == 2
    assert "version" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(shipped_models, "STANDARD_MODEL", tmp_path / "no-such-default.pt")
    assert main(["eval", START]) == 2
    assert "no model: pass --model PATH" in capsys.readouterr().err


def test_cube_decision_follows_the_money_game_and_the_match_score(model, capsys):
    assert main(["eval", START, "--model", model, "--json"]) == 0
    money = json.loads(capsys.readouterr().out)["cube"]
    assert money["game"] == "money" and money["cube"] == {"value": 1, "owner": "centred"}
    assert money["equities"]["double_pass"] == 1.0
    assert set(money["costs"]) == {"no_double", "double", "take", "pass"}
    # The same position as an XGID of a 7-point match at 2-4 with the player on roll owning a 2-cube.
    xgid = "XGID=-b----E-C---eE---c-e----B-:1:1:1:00:2:4:0:7:10"
    assert main(["eval", xgid, "--model", model, "--json"]) == 0
    match = json.loads(capsys.readouterr().out)["cube"]
    assert match["game"] == "7-point match, 2-4" and match["cube"] == {"value": 2, "owner": "mover"}
    assert 0.0 < match["match_winning_chances"]["cubeless"] < 1.0
    # Options override what the input says; the Crawford game has no cube.
    assert main(["eval", START, "--model", model, "--json", "--match", "5", "--score", "4-2", "--crawford"]) == 0
    crawford = json.loads(capsys.readouterr().out)["cube"]
    assert crawford["equities"]["double_take"] is None and "ouble" not in crawford["action"].replace("Never double", "")


def test_cube_text_and_errors(model, capsys):
    assert main(["eval", START, "--model", model, "--cube", "2", "--owner", "opponent"]) == 0
    assert "Cube decision (money, cube 2 opponent" in capsys.readouterr().out
    assert main(["eval", START, "--model", model, "--score", "2-4"]) == 2
    assert "need --match" in capsys.readouterr().err
    assert main(["eval", START, "--model", model, "--cube", "3"]) == 2
    assert "power of two" in capsys.readouterr().err


def test_checkers_in_hand_and_checkers_left_scoring(model, tmp_path, capsys):
    """Acey-deucey from the start: all checkers in hand (--hand), valued by checkers left, no cube."""
    empty = "AAAAAAAAAAAAAA"
    standard = model
    torch.manual_seed(5)
    network = ValueNetwork("tesauro198", (16,))
    model = str(tmp_path / "acey.pt")
    save_checkpoint(model, checkpoint_payload(network, Config(run=RunConfig(variant="acey-deucey"))))
    assert main(["eval", empty, "--variant", "acey-deucey", "--hand", "15,15", "--dice", "21", "--model", model,
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["position"]["in_hand"] == [15, 15] and "cube" not in report
    probabilities = report["evaluation"]["probabilities"]
    assert probabilities["win_backgammon"] == 0 and probabilities["lose_backgammon"] == 0
    equity = 2 * probabilities["win"] - 1 + 14 * (probabilities["win_gammon"] - probabilities["lose_gammon"])
    assert report["evaluation"]["equity"] == pytest.approx(equity, abs=1e-5)
    # Every play enters from the hand; the extra-roll plays leave as few as 9 checkers in hand.
    assert all(row["play"].startswith("bar/") for row in report["hint"])
    assert min(row["in_hand"][0] for row in report["hint"]) == 9
    assert any(row["extra_roll"] for row in report["hint"])
    assert main(["eval", empty, "--variant", "acey-deucey", "--hand", "15,15", "--dice", "21", "--model", model]) == 0
    assert "(rolls again)" in capsys.readouterr().out
    # Without the checkers in hand nobody has a checker: the error says how to give them.
    assert main(["eval", empty, "--variant", "acey-deucey", "--model", model]) == 2
    assert "--hand M,O" in capsys.readouterr().err
    assert main(["eval", START, "--hand", "1,0", "--model", standard]) == 2
    assert "no checkers are in hand in backgammon" in capsys.readouterr().err
