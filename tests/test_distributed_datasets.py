"""Dataset generation and relabelling on Ray (``bgtrain.distributed.datasets``): the same shard files to
the byte as an in-process generation or relabelling, for a ply and a rollout labeller and for plays; a
partial dataset is completed without its listed shards being made again; a killed worker's shard is made
again and written once; bad addresses and a missing Ray are one-line errors of ``bgtrain dataset
generate``; ``bgtrain dataset relabel --executor ray`` writes the in-process dataset."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers import compile_mode

from bgtrain.cli import main
from bgtrain.datasets.generate import GenerationSettings, generate_dataset
from bgtrain.datasets.labellers import labeller_from_spec
from bgtrain.datasets.plays import PlaySelection
from bgtrain.datasets.relabel import relabel_dataset
from bgtrain.datasets.shards import read_manifest, read_shard
from bgtrain.distributed.datasets import generate_dataset_distributed, relabel_dataset_distributed
from bgtrain.model.checkpoint import save_checkpoint
from bgtrain.model.network import ValueNetwork
from bgtrain.training.config import load_config
from bgtrain.values.evaluator import Evaluator
from engine.position_kinds import PositionKind, position_kinds

SETTINGS = GenerationSettings(positions=30, shard_size=10, seed=5, games_in_parallel=16, burn_in_turns=4,
                              sample_rate=0.5, select_ply=1, select_threshold=0.02, keep_agreeing=0.3)
TIMING = ("seconds", "label_seconds")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def op_by_op():
    # Small batches: compiling the engine's kernels would cost more than it saves.
    with compile_mode("never"):
        yield


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    torch.manual_seed(7)
    network = ValueNetwork("tesauro198", (8,))
    path = tmp_path_factory.mktemp("model") / "tiny.pt"
    save_checkpoint(path, {"model": network.model_args(), "weights": network.state_dict(),
                           "config": {"run": {"variant": load_config(None).run.variant}}, "counters": {}})
    return str(path)


def in_process(directory, model_path: str, spec: str, settings: GenerationSettings = SETTINGS, **options) -> dict:
    """What ``bgtrain dataset generate`` does without an executor (the ply labeller on the self-play
    evaluator, the rollout labeller on its own)."""
    evaluator = Evaluator.from_path(model_path)
    labeller = labeller_from_spec(spec, model_path) if spec.startswith("rollout") else None
    if labeller is None:
        from bgtrain.datasets import PlyLabeller

        labeller = PlyLabeller(evaluator, int(spec.split(":")[1]), model_path)
    return generate_dataset(directory, evaluator, labeller, settings, model_path, progress=False, **options)


def description(spec: str, model_path: str) -> dict:
    return labeller_from_spec(spec, model_path).describe()


def assert_same_dataset(a, b) -> None:
    manifest_a, manifest_b = read_manifest(a), read_manifest(b)
    for shard_a, shard_b in zip(manifest_a["shards"], manifest_b["shards"], strict=True):
        assert {k: v for k, v in shard_a.items() if k not in TIMING} == \
               {k: v for k, v in shard_b.items() if k not in TIMING}
        assert (a / shard_a["file"]).read_bytes() == (b / shard_b["file"]).read_bytes(), shard_a["file"]
    assert {k: v for k, v in manifest_a.items() if k != "shards"} == {k: v for k, v in manifest_b.items() if k != "shards"}


@pytest.mark.parametrize("spec", ["ply:1", "rollout:12:truncate=2"])
def test_shards_made_on_ray_are_the_in_process_files_to_the_byte(workers, tmp_path, model_path, spec):
    manifest = in_process(tmp_path / "here", model_path, spec)
    assert [shard["positions"] for shard in manifest["shards"]] == [10, 10, 10]
    generate_dataset_distributed(tmp_path / "ray", model_path, description(spec, model_path), SETTINGS,
                                 model_path, workers, progress=False)
    assert_same_dataset(tmp_path / "here", tmp_path / "ray")
    if spec.startswith("rollout"):
        assert read_manifest(tmp_path / "ray")["labeller"]["kind"] == "rollout"


def test_games_against_an_opponent_made_by_an_executor_are_the_in_process_files(tmp_path, model_path):
    against = GenerationSettings(**{**SETTINGS.__dict__, "opponent": "pubeval"})
    in_process(tmp_path / "here", model_path, "ply:1", against)
    generate_dataset_distributed(tmp_path / "executor", model_path, description("ply:1", model_path), against,
                                 model_path, progress=False)
    assert_same_dataset(tmp_path / "here", tmp_path / "executor")
    assert read_manifest(tmp_path / "executor")["settings"]["opponent"] == "pubeval"


def test_a_partial_dataset_is_completed_without_remaking_its_shards(tmp_path, model_path):
    in_process(tmp_path / "whole", model_path, "ply:1")
    partial = tmp_path / "partial"
    in_process(partial, model_path, "ply:1", stop_after_shards=1)  # as a killed driver leaves it
    kept = (partial / "shard_00000.pt").stat()
    (partial / "shard_00001.pt").write_bytes(b"half-written")  # not in the manifest: made again
    generate_dataset_distributed(partial, model_path, description("ply:1", model_path), SETTINGS, model_path,
                                 stop_after_shards=1, progress=False)
    assert [shard["index"] for shard in read_manifest(partial)["shards"]] == [0, 1]
    generate_dataset_distributed(partial, model_path, description("ply:1", model_path), SETTINGS, model_path,
                                 progress=False)
    assert (partial / "shard_00000.pt").stat().st_mtime_ns == kept.st_mtime_ns, "a listed shard is kept"
    assert_same_dataset(tmp_path / "whole", partial)


def test_a_killed_workers_shard_is_made_again_and_written_once(workers, tmp_path, model_path):
    from bgtrain.distributed import datasets

    spec = "rollout:12:truncate=2"  # shards slow enough to be killed while they are made
    in_process(tmp_path / "here", model_path, spec)
    written = []
    record = datasets.record_shard

    def record_and_kill(directory, manifest, entry):
        written.append(entry["index"])
        record(directory, manifest, entry)
        if len(written) == 1:  # shard 0 is in; shard 2 has just started on the first worker
            for actor in workers.actors:
                ray.kill(actor)

    ray = pytest.importorskip("ray")
    retried = workers.retried
    try:
        datasets.record_shard = record_and_kill
        generate_dataset_distributed(tmp_path / "ray", model_path, description(spec, model_path), SETTINGS,
                                     model_path, workers, progress=False)
    finally:
        datasets.record_shard = record
    assert workers.retried > retried, "the workers were killed while they held shards"
    assert written == [0, 1, 2]
    assert_same_dataset(tmp_path / "here", tmp_path / "ray")


def test_an_executor_labels_with_the_self_play_model(tmp_path, model_path):
    with pytest.raises(ValueError, match="labels with the self-play model"):
        generate_dataset_distributed(tmp_path, model_path, description("ply:1", model_path), SETTINGS, "other.pt")


@pytest.fixture(scope="module")
def source(tmp_path_factory, model_path) -> Path:
    """Three shards of ten positions, labelled at 0-ply: what a relabelling starts from."""
    directory = tmp_path_factory.mktemp("source") / "source"
    in_process(directory, model_path, "ply:1")
    return directory


@pytest.mark.parametrize(("spec", "kinds", "plays"), [("ply:1", (), None), ("rollout:12:truncate=2", ("contact",), None),
                                                      ("ply:0", (), PlaySelection(top=2, others=1.0, seed=3))])
def test_shards_relabelled_on_ray_are_the_in_process_files_to_the_byte(workers, tmp_path, model_path, source, spec,
                                                                       kinds, plays):
    labeller = labeller_from_spec(spec, model_path)
    here = relabel_dataset(tmp_path / "here", source, labeller, kinds, progress=False, plays=plays)
    assert len(here["shards"]) == 3 and here["positions"] > 0
    relabel_dataset_distributed(tmp_path / "ray", source, model_path, labeller.describe(), kinds, plays, workers,
                                progress=False)
    assert_same_dataset(tmp_path / "here", tmp_path / "ray")
    if plays is None:  # the same positions, new labels
        assert here["positions"] == sum(count for shard in read_manifest(source)["shards"]
                                        for kind, count in shard["kinds"].items() if not kinds or kind in kinds)


def test_a_plays_dataset_relabelled_on_ray_keeps_its_groups_as_in_process(workers, tmp_path, model_path, source):
    labeller = labeller_from_spec("ply:0", model_path)
    relabel_dataset(tmp_path / "plays", source, labeller, progress=False, plays=PlaySelection(top=3, others=1.0, seed=5))
    second = labeller_from_spec("ply:1", model_path)
    relabel_dataset(tmp_path / "here", tmp_path / "plays", second, ("contact", "crashed"), progress=False)
    relabel_dataset_distributed(tmp_path / "ray", tmp_path / "plays", model_path, second.describe(),
                                ("contact", "crashed"), None, workers, progress=False)
    assert_same_dataset(tmp_path / "here", tmp_path / "ray")
    for entry in read_manifest(tmp_path / "plays")["shards"]:  # the source's rows of those kinds, groups and all
        made, relabelled = read_shard(tmp_path / "plays" / entry["file"]), read_shard(tmp_path / "ray" / entry["file"])
        kept = position_kinds(made["positions"]) >= int(PositionKind.CRASHED)  # crashed and contact
        assert kept.any() and torch.equal(relabelled["groups"], made["groups"][kept])


def test_a_partial_relabelling_is_completed_in_process_without_relabelling_its_shards(tmp_path, model_path, source):
    labeller = labeller_from_spec("ply:1", model_path)
    relabel_dataset(tmp_path / "whole", source, labeller, progress=False)
    partial = tmp_path / "partial"
    relabel_dataset(partial, source, labeller, progress=False, stop_after_shards=1)  # as a killed driver leaves it
    kept = (partial / "shard_00000.pt").stat()
    relabel_dataset_distributed(partial, source, model_path, labeller.describe(), progress=False)
    assert (partial / "shard_00000.pt").stat().st_mtime_ns == kept.st_mtime_ns, "a listed shard is kept"
    assert_same_dataset(tmp_path / "whole", partial)
    # The first shards of a source (SOURCE@N), as in process.
    relabel_dataset(tmp_path / "first-here", f"{source}@2", labeller, progress=False)
    relabel_dataset_distributed(tmp_path / "first", f"{source}@2", model_path, labeller.describe(), progress=False)
    assert_same_dataset(tmp_path / "first-here", tmp_path / "first")
    assert len(read_manifest(tmp_path / "first")["shards"]) == 2
    with pytest.raises(ValueError, match="labels with 'other.pt', not the model given"):
        relabel_dataset_distributed(tmp_path / "x", source, model_path, {**labeller.describe(), "model": "other.pt"})


def test_the_cli_relabel_and_plays_name_a_bad_address_in_one_line(tmp_path, model_path, source, capsys):
    for action in ("relabel", "plays"):
        assert main(["dataset", action, str(source), "--out", str(tmp_path / action), "--model", model_path,
                     "--executor", "ray", "--address", "127.0.0.1:1", "--no-progress"]) == 2
        error = capsys.readouterr().err
        assert error.strip().count("\n") == 0 and "no Ray cluster answers there" in error, error


@pytest.mark.slow  # about a minute: a worker actor starts for the command
def test_the_cli_relabels_on_ray_as_in_process(workers, tmp_path, model_path, source, capsys):
    # The cluster the workers fixture started; the command joins it (one worker, half a CPU).
    import ray

    address = ray.get_runtime_context().gcs_address
    common = ["dataset", "relabel", str(source), "--model", model_path, "--labeller", "ply:1", "--kinds", "contact",
              "--no-progress", "--threads", "1"]
    assert main([*common, "--out", str(tmp_path / "here")]) == 0
    assert main([*common, "--out", str(tmp_path / "ray"), "--executor", "ray", "--address", address,
                 "--workers", "1", "--worker-cpus", "0.5"]) == 0
    assert f"labelled by ply:1 of {model_path}" in capsys.readouterr().out
    assert_same_dataset(tmp_path / "here", tmp_path / "ray")


def _generate(out, *extra) -> list[str]:
    return ["dataset", "generate", "--model", "checkpoints/bgtrain-default.pt", "--out", str(out), "--positions", "8",
            "--shard-size", "4", "--games", "8", "--select-ply", "0", "--labeller", "ply:0", "--no-progress", *extra]


def test_the_cli_reports_a_bad_address_and_a_missing_ray_in_one_line(tmp_path, monkeypatch, capsys):
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "bgtrain.cli", *_generate(tmp_path / "a", "--executor", "ray",
                                                                             "--address", "127.0.0.1:1")],
                          check=False, env=environment, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no Ray cluster answers there" in done.stderr
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(_generate(tmp_path / "b", "--executor", "ray")) == 2
    error = capsys.readouterr().err
    assert error.strip().count("\n") == 0 and "needs Ray, which is not installed" in error
    assert main(_generate(tmp_path / "c", "--address", "auto")) == 2
    assert "use it with --executor ray" in capsys.readouterr().err


@pytest.mark.slow
def test_the_cli_on_ray_writes_the_in_process_dataset(cluster, tmp_path):
    address = cluster.get_runtime_context().gcs_address
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "BGTRAIN_COMPILE": "never"}
    for name, extra in (("here", []), ("ray", ["--executor", "ray", "--address", address, "--workers", "2", "--worker-cpus", "0.5"])):
        subprocess.run([sys.executable, "-m", "bgtrain.cli", *_generate(tmp_path / name, "--threads", "1", *extra)],
                       env=environment, check=True, capture_output=True, cwd=ROOT)
    assert_same_dataset(tmp_path / "here", tmp_path / "ray")
    assert json.loads((tmp_path / "ray" / "manifest.json").read_text())["positions"] == 8


@pytest.mark.slow
def test_a_killed_driver_on_ray_resumes_from_its_manifest(cluster, tmp_path):
    address = cluster.get_runtime_context().gcs_address
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "BGTRAIN_COMPILE": "never"}

    def command(out, *extra):
        arguments = _generate(out, "--threads", "1", *extra)
        arguments[arguments.index("--positions") + 1] = "24"  # six shards of 4
        return [sys.executable, "-m", "bgtrain.cli", *arguments]

    subprocess.run(command(tmp_path / "here"), env=environment, check=True, capture_output=True, cwd=ROOT)
    on_ray = command(tmp_path / "ray", "--executor", "ray", "--address", address, "--workers", "1", "--worker-cpus", "0.5")
    process = subprocess.Popen(on_ray, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    manifest = tmp_path / "ray" / "manifest.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if manifest.exists() and len(json.loads(manifest.read_text())["shards"]) >= 2:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    listed = len(read_manifest(tmp_path / "ray")["shards"])
    assert 2 <= listed < 6, "killed after some shards and before the end"
    subprocess.run(on_ray, env=environment, check=True, capture_output=True, cwd=ROOT)
    assert_same_dataset(tmp_path / "here", tmp_path / "ray")
