"""`bgtrain train` end to end on a tiny budget: it writes what it promises, and a killed run resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bgtrain.cli import main
from bgtrain.model.loading import load_model

ROOT = Path(__file__).resolve().parent.parent

TINY = [
    "model.hidden=[8]",
    "selfplay.games_in_parallel=16",
    "train.total_games=64",
    "evaluation.every_games=32",
    "evaluation.games=10",
    "checkpoint.every_games=32",
    "checkpoint.every_seconds=0.0",
]


def test_train_writes_checkpoints_logs_and_config(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--config", "configs/quick.toml", "--out", str(out), "--no-progress", *TINY]) == 0
    assert (out / "config.toml").exists() and (out / "command.txt").exists()
    assert list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert list((out / "checkpoints").glob("games_*.pt"))
    payload = load_model(out / "final.pt").payload
    assert payload["counters"]["games"] >= 64
    assert "random" in payload["strength"] or "pubeval" in payload["strength"]
    assert payload["model"]["encoder"] == "tesauro198" and payload["config"]["model"]["hidden"] == [8]
    assert "final model" in capsys.readouterr().out


def test_flags_and_overrides_in_any_order(tmp_path, monkeypatch):
    """``--section.field value`` overrides, and the command's own flags after an override, both work."""
    from bgtrain.training.config import split_overrides

    seen = {}
    monkeypatch.setattr("bgtrain.commands.train.train", lambda config, **kwargs: seen.update(config=config, **kwargs) or "x")
    out = tmp_path / "ordered"
    assert main(["train", "--config", "configs/quick.toml", "model.hidden=[8]", "--train.learning_rate", "3e-4",
                 "--out", str(out), "--no-progress", "--selfplay.games_in_parallel=16"]) == 0
    config = seen["config"]
    assert config.train.learning_rate == 3e-4 and config.model.hidden == (8,)
    assert config.selfplay.games_in_parallel == 16 and config.run_dir == out and seen["progress"] is False
    assert split_overrides(["--a.b", "1", "--c", "x.y=[2]"]) == (["--c"], [("a", "b", "1"), ("x", "y", "[2]")])
    assert main(["train", "--config", "configs/quick.toml", "--train.learning_rate"]) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--config", "configs/quick.toml", "train.learnin_rate=1"], "learnin_rate"),
        (["--config", "configs/missing.toml"], "missing.toml"),
        (["--config", "configs/quick.toml", "train.td_lambda=2"], "td_lambda"),
        (["--resume", "configs/quick.toml"], "not a readable bgtrain checkpoint"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, capsys, args, message):
    assert main(["train", "--out", str(tmp_path / "bad"), "--no-progress", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_killed_run_resumes_from_its_last_checkpoint(tmp_path):
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "bgtrain.cli", "train", "--config", "configs/quick.toml", "--out", str(out),
               "--no-progress", "model.hidden=[8]", "selfplay.games_in_parallel=16", "train.total_games=100000",
               "evaluation.every_games=0", "checkpoint.every_games=64", "checkpoint.every_seconds=0.0"]
    process = subprocess.Popen(command, cwd=Path(__file__).parent.parent, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    latest = out / "latest.pt"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (out / "checkpoints").exists() or not latest.exists():
            assert time.monotonic() < deadline, "no checkpoint within two minutes"
            time.sleep(0.2)
        time.sleep(1.0)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    payload = load_model(latest).payload
    saved_games = payload["counters"]["games"]
    assert saved_games >= 64
    # A kill never leaves a half-written file under a checkpoint's name: every one of them loads.
    for checkpoint in (out / "checkpoints").glob("games_*.pt"):
        load_model(checkpoint)
    status = main(["train", "--resume", str(latest), "--no-progress", "train.total_games=" + str(saved_games + 32),
                   "evaluation.games=10"])
    assert status == 0
    final = load_model(out / "final.pt").payload
    assert final["counters"]["games"] >= saved_games + 32


def test_training_from_a_python_script(tmp_path, capsys):
    """``scripts/train_from_python.py`` on a tiny budget: it trains, benchmarks and exports through
    public names, and what it wrote loads."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_from_python", ROOT / "scripts" / "train_from_python.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    export = importlib.util.find_spec("onnx") is not None and importlib.util.find_spec("onnxruntime") is not None
    argv = ["--games", "128", "--bench-games", "20", "--out", str(tmp_path)] + ([] if export else ["--no-export"])
    assert script.main(argv) == 0
    out = capsys.readouterr().out
    final = tmp_path / "from_python" / "final.pt"
    payload = load_model(final).payload
    assert payload["counters"]["games"] >= 128 and payload["config"]["model"]["hidden"] == [40]
    assert "from_python vs pubeval" in out and "20 games" in out
    if export:
        assert load_model(final.with_suffix(".onnx")).model.model_args() == payload["model"]
