"""What a dataset's manifest claims is checked, never trusted (the second reliability probe, cases D52-D63,
S4-S10): one writer at a time, listed shards verified by size and sha256 on resume, on ``dataset info``
and on training's first read, relabels redone when their source shard changed, and damaged shards or
impossible labels named in one line."""

from __future__ import annotations

import io
import json

import pytest
import torch
from helpers import compile_mode, tiny_dataset, tiny_evaluator

from bgtrain.cli import main
from bgtrain.datasets import PlyLabeller, load_datasets, read_manifest
from bgtrain.datasets.generate import GenerationSettings
from bgtrain.datasets.relabel import relabel_dataset
from bgtrain.datasets.shards import DATASET_LOCK, SHARD_FORMAT, read_shard
from bgtrain.directory_lock import directory_lock
from bgtrain.values.evaluator import Evaluator

SETTINGS = GenerationSettings(positions=30, shard_size=10, seed=5, games_in_parallel=16, burn_in_turns=4,
                              sample_rate=0.5, select_ply=0)


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):
        yield


@pytest.fixture(scope="module")
def evaluator() -> Evaluator:
    return tiny_evaluator(0)


def generate(directory, evaluator, **options):
    return tiny_dataset(directory, evaluator, SETTINGS, ply=0, **options)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, evaluator):
    directory = tmp_path_factory.mktemp("reference") / "data"
    generate(directory, evaluator)
    return directory


def copy_of(reference, tmp_path, name="data"):
    import shutil

    return shutil.copytree(reference, tmp_path / name)


def test_a_second_writer_is_refused(tmp_path, evaluator):
    # D63: two generations into one directory both reported success, and one's shards were lost.
    with (directory_lock(tmp_path / "data", DATASET_LOCK, "bgtrain dataset"),
          pytest.raises(ValueError, match="in use by another bgtrain dataset process")):
        generate(tmp_path / "data", evaluator)
    assert not (tmp_path / "data" / "manifest.json").exists()
    assert generate(tmp_path / "data", evaluator)["positions"] == 30  # the lock is gone with its holder


def test_manifest_entries_record_size_and_hash(reference):
    import hashlib

    for entry in read_manifest(reference)["shards"]:
        data = (reference / entry["file"]).read_bytes()
        assert entry["bytes"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_a_truncated_or_deleted_listed_shard_is_written_again(tmp_path, reference, evaluator, capsys):
    # D52, D53: the rerun reported "30 positions in 3 shards" over a half shard or a missing one.
    data = copy_of(reference, tmp_path)
    shard0 = data / "shard_00000.pt"
    shard0.write_bytes(shard0.read_bytes()[: shard0.stat().st_size // 2])
    (data / "shard_00001.pt").unlink()
    generate(data, evaluator)
    err = capsys.readouterr().err
    assert "listed shard 0 is damaged" in err and "listed shard 1 is damaged (missing)" in err
    for name in ("shard_00000.pt", "shard_00001.pt", "shard_00002.pt"):
        assert (data / name).read_bytes() == (reference / name).read_bytes(), name
    assert untimed(read_manifest(data)) == untimed(read_manifest(reference))


def untimed(manifest):
    return [{k: v for k, v in entry.items() if k not in ("seconds", "label_seconds")} for entry in manifest["shards"]]


def test_info_and_training_read_verify_the_shards(tmp_path, reference, capsys):
    data = copy_of(reference, tmp_path)
    assert main(["dataset", "info", str(data)]) == 0
    capsys.readouterr()
    shard = data / "shard_00001.pt"
    raw = bytearray(shard.read_bytes())
    raw[-40] ^= 0xFF  # same size, other content
    shard.write_bytes(bytes(raw))
    assert main(["dataset", "info", str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "shard_00001.pt is damaged: its sha256" in err
    with pytest.raises(ValueError, match="shard_00001.pt is damaged"):
        load_datasets([data])


def _rewrite(path, **changes):
    payload = torch.load(path, weights_only=True)
    payload.update(changes)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    path.write_bytes(buffer.getvalue())


def test_damaged_shards_are_named_in_one_line(tmp_path, reference):
    data = copy_of(reference, tmp_path)
    path = data / "shard_00000.pt"
    original = path.read_bytes()
    path.write_bytes(original[: len(original) // 2])  # D54, S10: truncated
    with pytest.raises(ValueError, match=r"shard_00000.pt is not a readable dataset shard \(damaged or truncated"):
        read_shard(path)
    path.write_bytes(original)
    _rewrite(path, evil=io.StringIO("not a tensor"))  # D57: an object weights_only refuses
    with pytest.raises(ValueError, match="shard_00000.pt is not a bgtrain dataset shard: it holds objects"):
        read_shard(path)
    path.write_bytes(original)
    positions = torch.load(path, weights_only=True)["positions"]
    _rewrite(path, positions=positions[:, :27].contiguous())  # S4: positions of the wrong width
    with pytest.raises(ValueError, match=r"'positions' is int8\[10, 27\], not int8\[10, 28\]"):
        read_shard(path)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 1.5])
def test_labels_that_are_not_probabilities_are_refused_by_shard_and_row(tmp_path, reference, bad):
    # S5 (a NaN crashed training mid-epoch), S6 (+inf was clamped to 1 and trained on).
    data = copy_of(reference, tmp_path)
    path = data / "shard_00002.pt"
    targets = torch.load(path, weights_only=True)["targets"].clone()
    targets[7, 1] = bad
    _rewrite(path, targets=targets)
    with pytest.raises(ValueError, match=r"shard_00002.pt: row 7 of 10 has the labels .* finite and in \[0, 1\]"):
        read_shard(path)
    assert torch.load(path, weights_only=True)["format"] == SHARD_FORMAT


def test_relabel_redoes_a_shard_whose_source_changed(tmp_path, reference, evaluator, capsys):
    # D58: an edited source_sha256 passed; D59: a stale shard from a changed source was kept.
    source = copy_of(reference, tmp_path, "source")
    labeller = PlyLabeller(evaluator, 0, "teacher")
    relabel_dataset(tmp_path / "new", source, labeller, progress=False)
    manifest_path = tmp_path / "new" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    true_hash = manifest["shards"][0]["source_sha256"]
    manifest["shards"][0]["source_sha256"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))
    relabel_dataset(tmp_path / "new", source, labeller, progress=False)
    assert "listed shard 0 is stale" in capsys.readouterr().err
    assert read_manifest(tmp_path / "new")["shards"][0]["source_sha256"] == true_hash

    # The source's shard 0 replaced by shard 1's positions (its manifest updated to match).
    (source / "shard_00000.pt").write_bytes((source / "shard_00001.pt").read_bytes())
    origin = json.loads((source / "manifest.json").read_text())
    origin["shards"][0].update(bytes=origin["shards"][1]["bytes"], sha256=origin["shards"][1]["sha256"])
    (source / "manifest.json").write_text(json.dumps(origin))
    relabel_dataset(tmp_path / "new", source, labeller, progress=False)
    assert "listed shard 0 is stale" in capsys.readouterr().err
    relabelled = read_shard(tmp_path / "new" / "shard_00000.pt")
    assert torch.equal(relabelled["positions"], read_shard(source / "shard_00001.pt")["positions"])


def test_dataset_options_are_checked_in_one_line(tmp_path, capsys):
    # D31, D32, D33: an overflow message naming nothing, and two tracebacks.
    common = ["dataset", "generate", "--out", str(tmp_path / "x"), "--positions", "10"]
    for flags, message in ((["--seed", str(2**70)], "argument --seed: 1180591620717411303424 is out of range"),
                           (["--threads", "-1"], "argument --threads: must be at least 1, not -1"),
                           (["--device", "foo"], "argument --device: 'foo'")):
        assert main([*common, *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err
    assert main(["dataset", "relabel", str(tmp_path), "--out", str(tmp_path / "y"), "--threads", "0"]) == 2


def test_generate_and_relabel_default_to_one_teacher():
    from bgtrain.cli import build_parser

    parser = build_parser("dataset")
    generate_args = parser.parse_args(["dataset", "generate", "--out", "d", "--positions", "1"])
    relabel_args = parser.parse_args(["dataset", "relabel", "s", "--out", "d"])
    assert generate_args.model == relabel_args.model == "checkpoints/bgtrain-plus.pt"
