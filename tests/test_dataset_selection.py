"""``bgtrain dataset select``: the positions where a dataset's label and its model's 0-ply disagree."""

from __future__ import annotations

import pytest
import torch
from helpers import compile_mode, tiny_dataset, tiny_evaluator

from bgtrain.cli import main
from bgtrain.datasets import PlyLabeller, load_datasets, read_manifest
from bgtrain.datasets.generate import GenerationSettings, generate_dataset
from bgtrain.datasets.relabel import relabel_dataset
from bgtrain.datasets.selection import SelectionSettings, part_directories, select_disagreements
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.evaluator import Evaluator

SOURCE = GenerationSettings(positions=80, shard_size=40, seed=3, games_in_parallel=24, burn_in_turns=10,
                            sample_rate=0.5, select_ply=0)


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):  # small batches: compiling the engine would cost more than it saves
        yield


@pytest.fixture(scope="module")
def teacher() -> Evaluator:
    return tiny_evaluator(2)


@pytest.fixture(scope="module")
def source(tmp_path_factory, teacher):
    directory = tmp_path_factory.mktemp("source")
    tiny_dataset(directory, teacher, SOURCE, ply=1)
    return directory


def rows_of(data) -> list[tuple]:
    return sorted(tuple(row) for row in torch.cat([data.positions.long(), (data.targets * 1e6).round().long()], 1).tolist())


def test_the_disagreeing_positions_are_all_kept_and_the_others_at_the_rate(source, tmp_path):
    data = load_datasets(source)
    difference = (cubeless_equity(data.targets) - cubeless_equity(data.zero_ply)).abs()
    threshold = float(difference.median())  # half the positions disagree by more
    settings = SelectionSettings(threshold=threshold, keep=0.0, parts=3, shard_size=7, seed=4)
    manifests = select_disagreements(source, tmp_path / "sel", settings)
    parts = [load_datasets(directory) for directory in part_directories(tmp_path / "sel", 3)]
    kept = [row for part in parts for row in rows_of(part)]
    assert sorted(kept) == rows_of(data.where(difference > threshold))
    assert all(len(part) for part in parts) and all(max(s["positions"] for s in m["shards"]) <= 7 for m in manifests)
    everything = select_disagreements(source, tmp_path / "all", SelectionSettings(threshold=threshold, keep=1.0,
                                                                                 parts=1, seed=4))
    assert everything[0]["positions"] == len(data) and (tmp_path / "all" / "manifest.json").exists()  # one part: OUT
    # The labels travel unchanged, and the manifest says how the positions were chosen.
    manifest = read_manifest(tmp_path / "sel-0")
    assert manifest["labeller"] == read_manifest(source)["labeller"]
    assert manifest["settings"]["selected"]["threshold"] == threshold


def test_a_rerun_keeps_the_selection_and_another_one_is_refused(source, tmp_path):
    settings = SelectionSettings(threshold=0.01, keep=0.5, parts=2, shard_size=10, seed=9)
    first = select_disagreements(source, tmp_path / "sel", settings)
    (tmp_path / "sel-1" / "manifest.json").unlink()  # killed before its second part was listed
    again = select_disagreements(source, tmp_path / "sel", settings)
    assert again == first
    with pytest.raises(ValueError, match="holds another dataset"):
        select_disagreements(source, tmp_path / "sel", SelectionSettings(threshold=0.01, keep=0.5, seed=10))


def test_against_a_second_teacher_the_positions_where_the_two_labels_disagree(source, tmp_path):
    """``against``: a relabelling of the source by another teacher; its labels take the 0-ply's place."""
    data = load_datasets(source)
    second = tmp_path / "second"
    relabel_dataset(second, source, PlyLabeller(tiny_evaluator(5), 1, "other"), progress=False)
    other = load_datasets(second)
    difference = (cubeless_equity(data.targets) - cubeless_equity(other.targets)).abs()
    threshold = float(difference.median())
    against_zero_ply = (cubeless_equity(data.targets) - cubeless_equity(data.zero_ply)).abs() > threshold
    assert not torch.equal(difference > threshold, against_zero_ply)  # the two rules choose differently here
    settings = SelectionSettings(threshold=threshold, keep=0.0, parts=1, shard_size=9, seed=2)
    select_disagreements(source, tmp_path / "sel", settings, against=second)
    assert rows_of(load_datasets(tmp_path / "sel")) == rows_of(data.where(difference > threshold))  # the source's labels
    selected = read_manifest(tmp_path / "sel")["settings"]["selected"]
    assert selected["against"] == str(second) and selected["against_labeller"]["model"] == "other"
    # Another dataset's positions, or a part of them, are refused: the rows would not be the same positions.
    part = tmp_path / "part"
    select_disagreements(source, part, SelectionSettings(threshold=0.0, keep=1.0, parts=1, seed=1))
    with pytest.raises(ValueError, match="does not hold the source's positions row for row"):
        select_disagreements(source, tmp_path / "bad", settings, against=part)


def test_cli_select(source, teacher, tmp_path, capsys):
    assert main(["dataset", "select", str(source), "--out", str(tmp_path / "s"), "--parts", "1",
                 "--threshold", "0", "--keep", "0"]) == 0
    assert "disagree" in capsys.readouterr().out
    assert read_manifest(tmp_path / "s")["settings"]["selected"]["parts"] == 1
    assert main(["dataset", "select", str(source), "--out", str(tmp_path / "x"), "--keep", "1.5"]) == 2
    assert "keep must be a probability" in capsys.readouterr().err
    zero = tmp_path / "zero"
    generate_dataset(zero, teacher, PlyLabeller(teacher, 0, "tiny"), SOURCE, "tiny", progress=False)
    assert main(["dataset", "select", str(zero), "--out", str(tmp_path / "z")]) == 2
    assert "labelled at 0-ply" in capsys.readouterr().err
    # Against a second labelling even 0-ply labels disagree (zero holds source's positions: same self-play),
    # and a dataset of other positions (the shuffled selection s) is refused.
    assert main(["dataset", "select", str(zero), "--out", str(tmp_path / "t"), "--parts", "1", "--against", str(source),
                 "--threshold", "0", "--keep", "0"]) == 0
    assert f"the labels of {source} disagree" in capsys.readouterr().out
    assert main(["dataset", "select", str(source), "--out", str(tmp_path / "u"), "--against", str(tmp_path / "s")]) == 2
    assert "row for row" in capsys.readouterr().err
