"""Ctrl-C and SIGTERM during training write ``latest.pt`` before the run stops, and it resumes to the
weights of an uninterrupted run (TD at a turn, supervised inside an epoch); a second signal stops at once."""

from __future__ import annotations

import os
import signal

import pytest
import torch
from helpers import compile_mode, random_boards
from test_train import final_weights, tiny_config

import bgtrain.training.supervised
from bgtrain.commands.train import train
from bgtrain.datasets.shards import FORMAT_VERSION, MANIFEST_FORMAT, write_manifest, write_shard
from bgtrain.training.config import load_config
from bgtrain.training.stop_signals import StopRequested, StopSignals
from bgtrain.training.td import Run
from engine.position_kinds import position_kinds


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):
        yield


def assert_same_weights(first, second):
    first, second = final_weights(first), final_weights(second)
    assert first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key


def test_td_run_saves_latest_on_sigint_and_resumes_to_the_same_weights(tmp_path, monkeypatch):
    # The handler the process had (Python's default, or SIG_IGN under a shell that ignores SIGINT).
    before = signal.getsignal(signal.SIGINT)
    straight = train(tiny_config(tmp_path, "straight"), progress=False)
    steps = {"count": 0}
    original_step = Run.step

    def step_then_interrupt(self):
        steps["count"] += 1
        if steps["count"] == 100:  # a Ctrl-C in the middle of the run, between two checkpoints
            os.kill(os.getpid(), signal.SIGINT)
        return original_step(self)

    monkeypatch.setattr(Run, "step", step_then_interrupt)
    with pytest.raises(StopRequested) as stopped:
        train(tiny_config(tmp_path, "split"), progress=False)
    monkeypatch.setattr(Run, "step", original_step)
    assert stopped.value.exit_status == 130 and "bgtrain train --resume" in str(stopped.value)
    latest = tmp_path / "split" / "latest.pt"
    saved = torch.load(latest, weights_only=False)
    assert 0 < saved["counters"]["games"] < 96
    assert saved["counters"]["turns"] == 100 and saved["training"] is not None
    assert not (tmp_path / "split" / "final.pt").exists()
    assert signal.getsignal(signal.SIGINT) is before  # the handlers are given back
    resumed = train(tiny_config(tmp_path, "split"), resume=latest, progress=False)
    assert_same_weights(straight, resumed)


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny")
    positions = random_boards(64, seed=1)
    targets = torch.rand(64, 5, generator=torch.Generator().manual_seed(0)).sort(dim=1, descending=True).values
    entry = write_shard(directory, 0, {"positions": positions, "targets": targets, "standard_errors": torch.zeros(64, 5),
                                       "zero_ply": targets, "kinds": position_kinds(positions).to(torch.int8)})
    write_manifest(directory, {"format": MANIFEST_FORMAT, "format_version": FORMAT_VERSION,
                               "labeller": {"kind": "test"}, "source_model": "", "shards": [entry]})
    return directory


def supervised_config(dataset, out):
    return load_config("configs/supervised_gen1.toml", [
        f"supervised.datasets=['{dataset}']", f"run.out_dir={out.parent}", f"run.name={out.name}",
        "model.encoder=tesauro_plus", "model.hidden=[16]", "supervised.kinds=['contact','crashed','race','bearoff']",
        "supervised.epochs=3", "supervised.batch_size=16", "supervised.checkpoint_every_epochs=1000",
        "evaluation.games=2", "checkpoint.keep_last=0"])


def test_supervised_run_saves_mid_epoch_on_sigterm_and_resumes_to_the_same_weights(tmp_path, tiny_dataset,
                                                                                    monkeypatch):
    straight = train(supervised_config(tiny_dataset, tmp_path / "straight"), progress=False)
    original = bgtrain.training.supervised.supervised_learning_rate

    def rate_then_terminate(config, step, steps_per_epoch):
        if step == 5:  # epoch 2 (4 steps an epoch), after its first minibatch
            os.kill(os.getpid(), signal.SIGTERM)
        return original(config, step, steps_per_epoch)

    monkeypatch.setattr(bgtrain.training.supervised, "supervised_learning_rate", rate_then_terminate)
    with pytest.raises(StopRequested) as stopped:
        train(supervised_config(tiny_dataset, tmp_path / "split"), progress=False)
    monkeypatch.setattr(bgtrain.training.supervised, "supervised_learning_rate", original)
    assert stopped.value.exit_status == 143 and "SIGTERM" in str(stopped.value)
    latest = tmp_path / "split" / "latest.pt"
    saved = torch.load(latest, weights_only=False)
    assert saved["counters"]["epochs"] == 1 and saved["counters"]["steps"] == 6
    assert saved["training"]["within_epoch"]["start"] == 32
    resumed = train(supervised_config(tiny_dataset, tmp_path / "split"), resume=latest, progress=False)
    assert_same_weights(straight, resumed)


def test_a_second_signal_stops_at_once():
    before = signal.getsignal(signal.SIGINT)
    stop = StopSignals().install()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.received == signal.SIGINT
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        stop.restore()
    assert signal.getsignal(signal.SIGINT) is before


def test_the_command_line_reports_the_save_with_the_signal_status(monkeypatch, capsys):
    import bgtrain.commands.train
    from bgtrain.cli import main

    def stopped(args):
        raise StopRequested(signal.SIGTERM, "saved runs/x/latest.pt at 1,234 games")

    monkeypatch.setattr(bgtrain.commands.train, "run", stopped)
    assert main(["train", "--config", "configs/quick.toml"]) == 143
    err = capsys.readouterr().err.strip()
    assert err == "bgtrain train: interrupted (SIGTERM: saved runs/x/latest.pt at 1,234 games)"


def test_a_finished_run_prints_what_it_reached(tmp_path, tiny_dataset, capsys):
    # The newcomer's report: supervised training ended without a word on what it reached.
    from bgtrain.commands.train import training_summary
    from bgtrain.model.checkpoint import load_checkpoint

    final = train(supervised_config(tiny_dataset, tmp_path / "summary"), progress=False)
    line = training_summary(load_checkpoint(final))
    assert line.startswith("trained 3 epochs (183 positions) in ") and "held-out loss " in line
    assert "vs pubeval " in line and "points per game (95%, 2 games)" in line
    assert training_summary({"counters": {"games": 1234, "train_seconds": 75.0}, "strength": {}}) == \
        "trained 1,234 games in 1:15"
