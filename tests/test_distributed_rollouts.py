"""``bgtrain rollout --dice`` and ``--target-se`` on any executor (``bgtrain.distributed.rollouts``): the
candidate plays of a roll on common dice and an early-stopped rollout give the in-process numbers to
the bit, on Ray as in process, and a ``--work-dir`` rollout of candidate plays resumes from its shards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import compile_mode

from bgtrain.cli import main
from bgtrain.distributed.rollouts import rollout_distributed, rollout_plays_distributed
from bgtrain.rollout import RolloutSettings
from bgtrain.rollout.chunks import rollout_in_chunks, target_reached
from bgtrain.rollout.plays import rollout_plays
from bgtrain.values.evaluator import Evaluator
from engine.position_id import decode_position_id

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "checkpoints" / "bgtrain-default.pt")
START = "4HPwATDgc/ABMA"
SETTINGS = RolloutSettings(truncate=3)


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):
        yield


@pytest.fixture(scope="module")
def evaluator() -> Evaluator:
    return Evaluator.from_path(MODEL)  # the databases a worker's evaluator has too


def same_rollout(a, b) -> bool:
    arrays = ("boards", "outcomes", "raw_outcomes", "plies", "streams")
    return (all(torch.equal(getattr(a, name), getattr(b, name)) for name in arrays)
            and (a.first_trial, a.settings, a.seed, a.rules) == (b.first_trial, b.settings, b.seed, b.rules))


def same_plays(a, b) -> bool:
    return (a.plays == b.plays and torch.equal(a.afterstates, b.afterstates)
            and a.evaluator_equities == b.evaluator_equities and same_rollout(a.result, b.result))


def test_candidate_plays_on_ray_are_the_in_process_rollout(workers, evaluator, tmp_path):
    board = decode_position_id(START)
    here = rollout_plays(evaluator, board, (2, 1), SETTINGS, top=3, seed=4, trials=72)
    assert len(here.plays) == 3 and torch.equal(here.result.streams, torch.zeros(3, dtype=torch.int64))
    there = rollout_plays_distributed(evaluator, MODEL, board, (2, 1), SETTINGS, top=3, seed=4, trials=72,
                                      chunk=36, executor=workers, work_dir=tmp_path / "plays")
    assert same_plays(here, there)
    assert torch.equal(here.differences()[0], there.differences()[0])


def test_pruned_luck_on_ray_is_the_in_process_rollout(workers):
    # The workers rebuild the model with its pruning networks from the recipe, and the setting from its description.
    model = str(ROOT / "checkpoints" / "bgtrain-gen9-deep.pt")
    settings = RolloutSettings(truncate=3, pruned_luck=True)
    boards = torch.stack([decode_position_id(START), decode_position_id("4OvgATDgc+QBUA")])
    here = rollout_in_chunks(Evaluator.from_path(model), boards, settings, seed=3, trials=72, chunk=36)
    there = rollout_distributed(model, boards, settings, seed=3, trials=72, chunk=36, executor=workers)
    assert same_rollout(here, there)


def _error_after(result, trials: int) -> float:
    return float(result.select_trials(0, trials).headline()[1].max())


def test_an_early_stopped_rollout_on_ray_stops_where_it_stops_in_process(workers, evaluator):
    boards = torch.stack([decode_position_id(START), decode_position_id("4OvgATDgc+QBUA")])
    options = {"seed": 9, "trials": 252, "chunk": 36}
    whole = rollout_in_chunks(evaluator, boards, SETTINGS, **options)
    # A target met at the end of the third chunk of 36 (and perhaps earlier): stop where it is first met.
    target = _error_after(whole, 108)
    expected = next(trials for trials in range(36, 253, 36) if _error_after(whole, trials) <= target)
    assert expected < 252
    here = rollout_in_chunks(evaluator, boards, SETTINGS, target_error=target, **options)
    assert here.trials == expected and target_reached(here, target)
    assert same_rollout(here, whole.select_trials(0, expected))
    there = rollout_distributed(MODEL, boards, SETTINGS, target_error=target, executor=workers, **options)
    assert workers.pending() == 0, "the chunks in flight at the stop are dropped"
    again = rollout_distributed(MODEL, boards, SETTINGS, seed=9, trials=72, chunk=36, executor=workers)
    assert same_rollout(there, here)
    assert same_rollout(again, whole.select_trials(0, 72)), "the executor is reusable after an early stop"


def _rollout_json(capsys, *extra) -> dict:
    assert main(["rollout", START, "--dice", "21", "--top", "2", "--trials", "72", "--truncate", "3", "--seed", "5",
                 "--model", MODEL, "--json", "--quiet", *extra]) == 0
    report = json.loads(capsys.readouterr().out)
    report.pop("seconds")
    report.pop("executor", None)
    return report


def test_candidate_plays_resume_from_a_work_directory(capsys, tmp_path):
    here = _rollout_json(capsys)
    work_dir = tmp_path / "work"
    assert _rollout_json(capsys, "--work-dir", str(work_dir), "--chunk", "36") == here
    shards = sorted(work_dir.glob("shard_*.npz"))
    assert len(shards) == 2
    kept = shards[0].stat().st_mtime_ns
    shards[1].unlink()  # as a killed run leaves it: one chunk done
    assert _rollout_json(capsys, "--work-dir", str(work_dir), "--chunk", "36") == here
    assert shards[0].stat().st_mtime_ns == kept, "a chunk on disk is read, not rolled out again"
    assert shards[1].exists()


def test_target_se_through_a_work_directory_is_the_in_process_rollout(capsys, tmp_path):
    base = ["--target-se", "0.05", "--chunk", "36", "--trials", "360"]
    here = _rollout_json(capsys, *base)
    assert here["trials_played"] < 360
    assert _rollout_json(capsys, *base, "--work-dir", str(tmp_path / "work")) == here


def test_pruned_luck_through_a_work_directory_is_the_in_process_rollout(capsys, tmp_path):
    # The setting and the model's pruning networks reach the chunks' workers (its recipe and settings).
    model = ["--model", str(ROOT / "checkpoints" / "bgtrain-gen9-deep.pt")]
    here = _rollout_json(capsys, *model, "--pruned-luck")
    assert here["settings"]["pruned_luck"]
    assert _rollout_json(capsys, *model, "--pruned-luck", "--work-dir", str(tmp_path / "work"), "--chunk", "36") == here
    full = _rollout_json(capsys, *model)
    assert full["plays"] != here["plays"]  # the same games, another luck


def test_a_distributed_chunk_must_keep_whole_strata(capsys, tmp_path):
    assert main(["rollout", START, "--dice", "31", "--trials", "72", "--chunk", "50", "--model", MODEL,
                 "--work-dir", str(tmp_path), "--quiet"]) == 2
    assert "multiple of 36" in capsys.readouterr().err
