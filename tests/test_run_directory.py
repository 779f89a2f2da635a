"""Nothing a user made is lost: a run directory is refused, locked, resumed in place, and a resume
logs what an uninterrupted run logs (the probe cases of the faults issue, data loss and resume)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil

import pytest
import torch

from bgtrain.cli import main
from bgtrain.training.run_directory import LOCK_NAME, RunDirectory, resume_directory

TINY = [
    "--config", "configs/quick.toml", "--no-progress", "model.hidden=[8]", "selfplay.games_in_parallel=16",
    "train.lr_schedule=constant", "train.total_games=32", "evaluation.every_games=32", "evaluation.games=8",
    "evaluation.opponent=random", "checkpoint.every_games=32", "checkpoint.every_seconds=0.0",
]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A run of 32 games, finished (latest.pt, final.pt, checkpoints/)."""
    out = tmp_path_factory.mktemp("runs") / "first"
    assert main(["train", "--out", str(out), *TINY]) == 0
    return out


def test_a_second_run_into_the_same_directory_is_refused_and_loses_nothing(finished_run, tmp_path, capsys):
    out = tmp_path / "copy"
    shutil.copytree(finished_run, out)
    before = {path.relative_to(out): digest(path) for path in out.rglob("*") if path.is_file()}
    capsys.readouterr()
    assert main(["train", "--out", str(out), *TINY]) == 2
    err = one_line(capsys)
    assert "already holds a run" in err and "--resume" in err and "--overwrite" in err
    after = {path.relative_to(out): digest(path) for path in out.rglob("*") if path.is_file()}
    assert after == before
    # --overwrite replaces it: the old checkpoints go, the new run's stay.
    assert main(["train", "--out", str(out), "--overwrite", *TINY]) == 0
    assert (out / "final.pt").exists() and len(list((out / "checkpoints").glob("games_*.pt"))) >= 1


def test_resume_of_a_moved_run_continues_where_its_checkpoint_is(finished_run, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(finished_run, moved)
    original = {path: digest(path) for path in finished_run.rglob("*.pt")}
    assert resume_directory(moved / "latest.pt") == moved
    assert resume_directory(moved / "checkpoints" / "games_0000000032.pt") == moved
    assert main(["train", "--resume", str(moved / "latest.pt"), "--no-progress", "train.total_games=48"]) == 0
    assert torch.load(moved / "final.pt", weights_only=False)["counters"]["games"] >= 48
    assert {path: digest(path) for path in finished_run.rglob("*.pt")} == original  # the original is untouched
    assert (moved / "command.txt").read_text().count("bgtrain train") == 2  # a block per start


def test_a_second_process_is_refused_and_a_dead_one_leaves_no_lock(finished_run, tmp_path, capsys):
    out = tmp_path / "busy"
    out.mkdir()
    descriptor = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as another bgtrain train would hold it
    try:
        capsys.readouterr()
        assert main(["train", "--out", str(out), *TINY]) == 2
        assert "in use by another bgtrain train process" in one_line(capsys)
    finally:
        os.close(descriptor)  # what the OS does when that process dies, however it dies
    RunDirectory(out).acquire(resuming=False, overwrite=False).release()


def test_resume_refuses_changes_that_cannot_apply_and_applies_the_others(finished_run, tmp_path, capsys):
    latest = str(finished_run / "latest.pt")
    for override, key in (("--variant=hypergammon", "run.variant"), ("model.hidden=[16]", "model.hidden"),
                          ("model.encoder=tesauro_plus", "model.encoder"), ("train.optimizer=sgd", "train.optimizer"),
                          ("selfplay.games_in_parallel=8", "selfplay.games_in_parallel")):
        words = override.split("=") if override.startswith("--") else [override]
        capsys.readouterr()
        assert main(["train", "--resume", latest, "--no-progress", *words]) == 2, override
        err = one_line(capsys)
        assert f"{key} cannot change on resume" in err, err
    from bgtrain.training.config import load_config
    from bgtrain.training.td import Run

    config = load_config(finished_run / "config.toml", ["train.weight_decay=0.25", "train.total_games=64"])
    run = Run.resume(finished_run / "latest.pt", config)
    assert all(group["weight_decay"] == 0.25 for group in run.optimizer.param_groups)


def test_a_resumed_run_logs_and_evaluates_as_an_uninterrupted_one(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    settings = [word for word in TINY if word != "train.total_games=32"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert main(["train", "--out", str(straight), *settings, "train.total_games=64"]) == 0
    assert main(["train", "--out", str(split), *settings, "train.total_games=32"]) == 0
    latest = torch.load(split / "latest.pt", weights_only=False)
    assert latest["training"]["previous_weights"] is not None and latest["training"]["tensorboard"]
    assert main(["train", "--resume", str(split / "latest.pt"), "--no-progress", "train.total_games=64"]) == 0
    finals = [torch.load(out / "final.pt", weights_only=False) for out in (straight, split)]
    strengths = [{k: v for k, v in final["strength"].items() if k != "train_seconds"} for final in finals]
    assert "previous" in strengths[1] and strengths[0] == strengths[1]

    def points(out):
        events = EventAccumulator(str(out / "tensorboard"))
        events.Reload()
        return {(tag, event.step): round(event.value, 6) for tag in events.Tags()["scalars"]
                if not tag.startswith("charts/games_per_second") and tag != "eval/train_seconds"
                for event in events.Scalars(tag)}

    assert points(straight) == points(split)


def test_temporary_files_of_a_killed_run_are_removed_and_a_damaged_latest_points_at_a_checkpoint(
        finished_run, tmp_path, capsys):
    out = tmp_path / "damaged"
    shutil.copytree(finished_run, out)
    stale = out / ".latest.pt.999999999.tmp"
    stale.write_bytes(b"partial")
    (out / "latest.pt").write_bytes(b"truncated")
    capsys.readouterr()
    assert main(["train", "--resume", str(out / "latest.pt"), "--no-progress", "train.total_games=48"]) == 2
    err = one_line(capsys)
    assert "newest intact checkpoint" in err and "games_0000000032.pt" in err
    newest = max((out / "checkpoints").glob("games_*.pt"))
    assert main(["train", "--resume", str(newest), "--no-progress", "train.total_games=48"]) == 0
    assert not stale.exists()


def test_a_resume_into_another_run_is_refused(finished_run, tmp_path, capsys):
    other = tmp_path / "other"
    shutil.copytree(finished_run, other)
    before = digest(other / "latest.pt")
    capsys.readouterr()
    assert main(["train", "--resume", str(finished_run / "latest.pt"), "--out", str(other), "--no-progress",
                 "train.total_games=48"]) == 2
    assert "already holds a run" in one_line(capsys) and digest(other / "latest.pt") == before
