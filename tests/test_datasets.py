"""Datasets: shard k depends only on (seed, k); a generation stopped after one shard and rerun gives the
same dataset as an uninterrupted one; the format round-trips; the CLI writes and summarises one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import compile_mode, tiny_dataset, tiny_evaluator

from bgtrain.cli import main
from bgtrain.datasets import PlyLabeller, load_datasets, read_manifest
from bgtrain.datasets.generate import GenerationSettings
from bgtrain.datasets.shards import SHARD_FIELDS, read_shard
from bgtrain.values.evaluator import Evaluator

SETTINGS = GenerationSettings(positions=50, shard_size=20, seed=3, games_in_parallel=24, burn_in_turns=6,
                              sample_rate=0.5, select_ply=1, select_threshold=0.02, keep_agreeing=0.3)


@pytest.fixture(autouse=True)
def op_by_op():
    # Small batches: compiling the engine's kernels would cost more than it saves.
    with compile_mode("never"):
        yield


@pytest.fixture(scope="module")
def evaluator() -> Evaluator:
    return tiny_evaluator(0)


def generate(directory, evaluator, settings=SETTINGS, **options):
    return tiny_dataset(directory, evaluator, settings, ply=1, **options)


def test_generation_is_resumable_and_deterministic(tmp_path, evaluator):
    whole = generate(tmp_path / "whole", evaluator)
    assert [shard["positions"] for shard in whole["shards"]] == [20, 20, 10]
    assert whole["positions"] == 50 and whole["labeller"] == {"kind": "ply", "ply": 1, "model": "tiny"}

    # Stopped after its first shard (as a kill would leave it), then rerun with the same settings.
    partial = generate(tmp_path / "resumed", evaluator, stop_after_shards=1)
    assert len(partial["shards"]) == 1
    (tmp_path / "resumed" / "shard_00001.pt").write_bytes(b"half-written")  # never listed: rewritten
    resumed = generate(tmp_path / "resumed", evaluator)
    assert [s["index"] for s in resumed["shards"]] == [0, 1, 2]
    for shard in range(3):
        a = read_shard(tmp_path / "whole" / f"shard_{shard:05d}.pt")
        b = read_shard(tmp_path / "resumed" / f"shard_{shard:05d}.pt")
        for name in SHARD_FIELDS:
            assert torch.equal(a[name], b[name]), (shard, name)

    # Another seed gives other positions.
    other = generate(tmp_path / "other", evaluator, GenerationSettings(**{**SETTINGS.__dict__, "seed": 4}))
    assert other["positions"] == 50
    assert not torch.equal(load_datasets(tmp_path / "other").positions, load_datasets(tmp_path / "whole").positions)


def test_dataset_contents(tmp_path, evaluator):
    generate(tmp_path / "data", evaluator)
    data = load_datasets([tmp_path / "data"])
    assert data.positions.dtype == torch.int8 and data.positions.shape == (50, 28)
    assert data.targets.shape == (50, 5) and data.standard_errors.abs().sum() == 0
    # The targets are the labeller's 1-ply values, the zero_ply column the 0-ply ones.
    torch.testing.assert_close(data.targets, evaluator.probabilities(data.positions, 1).clamp(0, 1))
    torch.testing.assert_close(data.zero_ply, evaluator.probabilities(data.positions, 0))
    # Every position has checkers of both sides and is no finished game.
    assert ((data.positions[:, 1:26] > 0).any(1) & (data.positions[:, 0:25] < 0).any(1)).all()


def test_the_first_shards_of_a_dataset(tmp_path, evaluator):
    from bgtrain.datasets.shards import dataset_spec

    generate(tmp_path / "data", evaluator)  # shards of 20, 20 and 10 positions
    whole = load_datasets([tmp_path / "data"])
    first_two = load_datasets([f"{tmp_path / 'data'}@2"])
    assert len(first_two) == 40 and first_two.sources[0]["positions"] == 40
    assert [shard["index"] for shard in first_two.sources[0]["shards"]] == [0, 1]
    assert torch.equal(first_two.positions, whole.positions[:40])
    with pytest.raises(ValueError, match="has only 3 of its first 4 shards"):
        load_datasets([f"{tmp_path / 'data'}@4"])
    assert dataset_spec("runs/a@b/data") == (Path("runs/a@b/data"), None)
    assert dataset_spec("runs/data@0") == (Path("runs/data@0"), None)
    # DIR@A:B: shards A to B - 1, the next part of a dataset.
    assert dataset_spec("runs/data@2") == (Path("runs/data"), range(2))
    assert dataset_spec("runs/data@1:3") == (Path("runs/data"), range(1, 3))
    assert dataset_spec("runs/data@3:3") == (Path("runs/data@3:3"), None)
    last_two = load_datasets([f"{tmp_path / 'data'}@1:3"])
    assert [shard["index"] for shard in last_two.sources[0]["shards"]] == [1, 2]
    assert len(last_two) == 30 and torch.equal(last_two.positions, whole.positions[20:])
    with pytest.raises(ValueError, match="has only 2 of its shards 1 to 3 complete"):
        load_datasets([f"{tmp_path / 'data'}@1:4"])


def test_a_dataset_with_other_settings_is_refused(tmp_path, evaluator):
    generate(tmp_path / "data", evaluator, stop_after_shards=1)
    with pytest.raises(ValueError, match="another settings"):
        generate(tmp_path / "data", evaluator, GenerationSettings(**{**SETTINGS.__dict__, "epsilon": 0.5}))


def test_kinds_keeps_only_those_positions(tmp_path, evaluator):
    from engine.position_kinds import PositionKind, position_kinds

    # A random network races its checkers past each other often enough for a small race-only set.
    settings = GenerationSettings(**{**SETTINGS.__dict__, "positions": 12, "shard_size": 6, "select_ply": 0,
                                     "burn_in_turns": 30, "kinds": ["race"]})
    assert settings.kinds == ("race",)
    manifest = generate(tmp_path / "race", evaluator, settings)
    assert manifest["settings"]["kinds"] == ["race"]
    data = load_datasets([tmp_path / "race"])
    assert data.positions.shape[0] == 12
    assert (position_kinds(data.positions) == PositionKind.RACE).all()
    # The same settings resume the same dataset; a manifest from before ``kinds`` reads as every kind.
    assert generate(tmp_path / "race", evaluator, settings)["positions"] == 12
    generate(tmp_path / "all", evaluator, stop_after_shards=1)
    path = tmp_path / "all" / "manifest.json"
    old = json.loads(path.read_text())
    del old["settings"]["kinds"]
    path.write_text(json.dumps(old))
    assert len(generate(tmp_path / "all", evaluator)["shards"]) == 3
    with pytest.raises(ValueError, match="unknown kind 'racing'"):
        GenerationSettings(positions=1, kinds=("racing",))
    with pytest.raises(ValueError, match="unknown kind 'bearoff'; known: contact, crashed, race"):
        GenerationSettings(positions=1, kinds=("race", "bearoff"))  # never a candidate: it would not end


def test_cli_generate_and_info(tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(["dataset", "generate", "--model", "checkpoints/bgtrain-default.pt", "--out", str(out),
                 "--positions", "30", "--shard-size", "15", "--games", "16", "--select-ply", "0",
                 "--labeller", "ply:0", "--no-progress", "--seed", "2"])
    assert code == 0
    manifest = read_manifest(out)
    assert manifest["positions"] == 30 and manifest["source_model"] == "checkpoints/bgtrain-default.pt"
    assert main(["dataset", "info", str(out)]) == 0
    assert "30 positions in 2 of 2 shards" in capsys.readouterr().out
    assert main(["dataset", "info", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shards_planned"] == 2
    assert main(["dataset", "generate", "--out", str(out), "--positions", "10", "--labeller", "best"]) == 2
    assert "unknown labeller" in capsys.readouterr().err


def test_the_rollout_labeller_gives_rollout_means_and_their_errors(evaluator):
    from bgtrain.datasets import labeller_from_spec
    from bgtrain.datasets.labellers import RolloutLabeller, labeller_from_description
    from engine.position_id import decode_position_id

    boards = torch.stack([decode_position_id("4HPwATDgc/ABMA"), decode_position_id("4OvgATDgc+QBUA"),
                          decode_position_id("sGfwATDgc/ABMA")])
    labeller = RolloutLabeller(evaluator, 36, truncate=2, model="tiny")
    targets, errors = labeller.label(boards)
    assert targets.shape == errors.shape == (3, 5) and targets.dtype == errors.dtype == torch.float32
    assert bool((errors[:, 0] > 0).all()), "a rollout's win probability has a positive standard error"
    assert bool(((targets >= 0) & (targets <= 1)).all())
    # Two plies and then the 0-ply value: the mean stays near the evaluator's own estimate.
    assert float((targets[:, 0] - evaluator.probabilities(boards, 0)[:, 0]).abs().max()) < 0.25
    again, _ = labeller.label(boards)
    assert torch.equal(again, targets), "a batch's label depends on the batch alone"
    assert labeller.describe() == {"kind": "rollout", "trials": 36, "truncate": 2, "ply": 0, "seed": 0,
                                   "model": "tiny"}
    with pytest.raises(ValueError, match="unknown or repeated option"):
        labeller_from_spec("rollout:36:depth=3", "unused.pt")
    with pytest.raises(ValueError, match="at least 2 trials"):
        RolloutLabeller(evaluator, 1)

    # batch=B: B positions at a time, each part labelled as a call of its own; said in the description
    # only when set (the descriptions of datasets labelled before stay as they were).
    # (Five plies: 36 stratified trials play the same first two rolls whatever the seed.)
    whole = RolloutLabeller(evaluator, 36, truncate=5, model="tiny")
    in_parts = RolloutLabeller(evaluator, 36, truncate=5, model="tiny", batch=2)
    targets, errors = in_parts.label(boards)
    first, second = whole.label(boards[:2]), whole.label(boards[2:])
    assert torch.equal(targets, torch.cat((first[0], second[0])))
    assert torch.equal(errors, torch.cat((first[1], second[1])))
    assert not torch.equal(targets, whole.label(boards)[0]), "other parts, other dice"
    assert torch.equal(in_parts.label(boards[:2])[0], first[0]), "a call within the batch is one part"
    assert in_parts.describe() == {**whole.describe(), "batch": 2}
    rebuilt = labeller_from_description(in_parts.describe(), evaluator)
    assert rebuilt.batch == 2 and torch.equal(rebuilt.label(boards)[0], targets)
    assert labeller_from_spec("rollout:36:truncate=2:batch=64", "checkpoints/bgtrain-default.pt").batch == 64
    with pytest.raises(ValueError, match="batch must be a positive number of positions"):
        labeller_from_spec("rollout:36:batch=0", "checkpoints/bgtrain-default.pt")
    with pytest.raises(ValueError, match="batch=B"):
        labeller_from_spec("rollout:36:batch=many", "checkpoints/bgtrain-default.pt")


def test_relabel_gives_the_same_positions_new_labels_and_resumes(tmp_path, evaluator):
    from bgtrain.datasets.relabel import relabel_dataset
    from engine.position_kinds import PositionKind

    # Shards of 20, 20 and 10, labelled at 1-ply; a long burn-in, so that some positions are races.
    generate(tmp_path / "source", evaluator, GenerationSettings(**{**SETTINGS.__dict__, "burn_in_turns": 40}))
    source = load_datasets([tmp_path / "source"])
    teacher = tiny_evaluator(5)
    labeller = PlyLabeller(teacher, 0, "teacher")

    whole = relabel_dataset(tmp_path / "whole", tmp_path / "source", labeller, progress=False)
    data = load_datasets([tmp_path / "whole"])
    assert torch.equal(data.positions, source.positions) and torch.equal(data.kinds, source.kinds)
    # The new teacher's values, not the source's labels.
    torch.testing.assert_close(data.targets, teacher.probabilities(source.positions, 0).clamp(0, 1))
    torch.testing.assert_close(data.zero_ply, teacher.probabilities(source.positions, 0))
    assert not torch.allclose(data.targets, source.targets)
    assert whole["labeller"] == {"kind": "ply", "ply": 0, "model": "teacher"}
    assert whole["source_model"] == "tiny" and whole["relabelled"]["labeller"]["ply"] == 1
    assert whole["relabelled"]["from"] == str(tmp_path / "source")
    assert [shard["positions"] for shard in whole["shards"]] == [20, 20, 10]
    assert all(len(shard["source_sha256"]) == 64 for shard in whole["shards"])

    # Killed after one shard, a half-written next shard left behind: the rerun completes it exactly.
    relabel_dataset(tmp_path / "resumed", tmp_path / "source", labeller, progress=False, stop_after_shards=1)
    (tmp_path / "resumed" / "shard_00001.pt").write_bytes(b"half-written")
    relabel_dataset(tmp_path / "resumed", tmp_path / "source", labeller, progress=False)
    for name in SHARD_FIELDS:
        assert torch.equal(getattr(load_datasets([tmp_path / "resumed"]), name), getattr(data, name)), name

    # One kind only: the source's contact positions, in their order.
    contact = relabel_dataset(tmp_path / "contact", tmp_path / "source", labeller, ("contact",), progress=False)
    keep = source.kinds == PositionKind.CONTACT
    assert 0 < contact["positions"] == int(keep.sum()) < len(source)
    assert torch.equal(load_datasets([tmp_path / "contact"]).positions, source.positions[keep])
    # Another labeller, other kinds, or the source itself as the output are refused.
    with pytest.raises(ValueError, match="another labeller"):
        relabel_dataset(tmp_path / "contact", tmp_path / "source", PlyLabeller(teacher, 1, "teacher"), ("contact",),
                        progress=False)
    with pytest.raises(ValueError, match="another relabelled"):
        relabel_dataset(tmp_path / "contact", tmp_path / "source", labeller, ("race",), progress=False)
    with pytest.raises(ValueError, match="its own directory"):
        relabel_dataset(tmp_path / "source", tmp_path / "source", labeller, progress=False)
    with pytest.raises(ValueError, match="unknown kind 'bearoff'"):
        relabel_dataset(tmp_path / "x", tmp_path / "source", labeller, ("bearoff",), progress=False)


def test_relabel_of_the_first_shards_labels_those_alone_and_is_its_own_dataset(tmp_path, evaluator):
    from bgtrain.datasets.relabel import relabel_dataset

    generate(tmp_path / "source", evaluator)  # shards of 20, 20 and 10
    source = load_datasets([tmp_path / "source"])
    labeller = PlyLabeller(tiny_evaluator(5), 0, "teacher")

    part = relabel_dataset(tmp_path / "part", f"{tmp_path / 'source'}@2", labeller, progress=False)
    assert [shard["index"] for shard in part["shards"]] == [0, 1] and part["shards_planned"] == 2
    assert part["relabelled"]["from"] == str(tmp_path / "source")  # the directory, the count beside it
    assert part["relabelled"]["first_shards"] == 2 and part["relabelled"]["source_shards"] == [0, 1]
    data = load_datasets([tmp_path / "part"])
    assert torch.equal(data.positions, source.positions[:40])
    torch.testing.assert_close(data.targets, labeller.evaluator.probabilities(source.positions[:40], 0).clamp(0, 1))
    # Rerun, it is complete; another count is another dataset; more shards than the source has are refused.
    assert relabel_dataset(tmp_path / "part", f"{tmp_path / 'source'}@2", labeller, progress=False) == part
    with pytest.raises(ValueError, match="another relabelled"):
        relabel_dataset(tmp_path / "part", f"{tmp_path / 'source'}@3", labeller, progress=False)
    with pytest.raises(ValueError, match="has only 3 of its first 4 shards"):
        relabel_dataset(tmp_path / "more", f"{tmp_path / 'source'}@4", labeller, progress=False)
    # SOURCE@A:B: shards A to B - 1, the same shard numbers as the source's.
    rest = relabel_dataset(tmp_path / "rest", f"{tmp_path / 'source'}@2:3", labeller, progress=False)
    assert [shard["index"] for shard in rest["shards"]] == [2] and rest["shards_planned"] == 1
    assert rest["relabelled"]["shard_range"] == [2, 3] and "first_shards" not in rest["relabelled"]
    both = load_datasets([tmp_path / "part", tmp_path / "rest"])
    assert torch.equal(both.positions, source.positions)
    torch.testing.assert_close(both.targets, labeller.evaluator.probabilities(source.positions, 0).clamp(0, 1))
    # The whole source, written as before: no first_shards in its manifest.
    assert "first_shards" not in relabel_dataset(tmp_path / "all", tmp_path / "source", labeller,
                                                 progress=False)["relabelled"]


def test_cli_relabel(tmp_path, capsys):
    source = tmp_path / "source"
    assert main(["dataset", "generate", "--model", "checkpoints/bgtrain-default.pt", "--out", str(source),
                 "--positions", "12", "--shard-size", "6", "--games", "16", "--select-ply", "0",
                 "--labeller", "ply:0", "--no-progress", "--seed", "2"]) == 0
    out = tmp_path / "relabelled"
    assert main(["dataset", "relabel", str(source), "--out", str(out), "--model", "checkpoints/bgtrain-plus.pt",
                 "--labeller", "ply:0", "--no-progress"]) == 0
    assert "12 positions of" in capsys.readouterr().out
    manifest = read_manifest(out)
    assert manifest["labeller"]["model"] == "checkpoints/bgtrain-plus.pt"
    assert manifest["source_model"] == "checkpoints/bgtrain-default.pt"
    assert main(["dataset", "relabel", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "no dataset at" in capsys.readouterr().err
    # SOURCE@N: its first N shards only.
    assert main(["dataset", "relabel", f"{source}@1", "--out", str(tmp_path / "first"), "--model",
                 "checkpoints/bgtrain-plus.pt", "--labeller", "ply:0", "--no-progress"]) == 0
    assert "6 positions of" in capsys.readouterr().out
    assert read_manifest(tmp_path / "first")["relabelled"]["first_shards"] == 1
    # SOURCE@A:B: its shards A to B - 1, here the second alone.
    assert main(["dataset", "relabel", f"{source}@1:2", "--out", str(tmp_path / "second"), "--model",
                 "checkpoints/bgtrain-plus.pt", "--labeller", "ply:0", "--no-progress"]) == 0
    assert "6 positions of" in capsys.readouterr().out
    assert read_manifest(tmp_path / "second")["relabelled"]["shard_range"] == [1, 2]
    assert main(["dataset", "relabel", f"{source}@1:3", "--out", str(tmp_path / "past"), "--labeller", "ply:0"]) == 2
    assert "has only 1 of its shards 1 to 2 complete" in capsys.readouterr().err
    assert main(["dataset", "relabel", f"{source}@5", "--out", str(tmp_path / "five"), "--labeller", "ply:0"]) == 2
    assert "has only 2 of its first 5 shards" in capsys.readouterr().err


class RecordingAgent:
    """Pubeval's plays, remembering the seat and board of every game it was asked to move in."""

    def __init__(self) -> None:
        from bgtrain.arena.agents import PubevalAgent

        self.name, self.agent, self.seats, self.boards = "recording", PubevalAgent(), [], []

    def choose(self, state, afterstates):
        self.seats.append(state.seat.clone())
        self.boards.append(state.board.clone())
        return self.agent.choose(state, afterstates)


def test_against_an_opponent_only_the_models_turns_are_taken(tmp_path, evaluator, monkeypatch):
    import bgtrain.datasets.generate as generate_module
    from engine.rules import STANDARD

    settings = GenerationSettings(**{**SETTINGS.__dict__, "select_ply": 0, "opponent": "pubeval"})
    whole = generate(tmp_path / "whole", evaluator, settings)
    assert whole["settings"]["opponent"] == "pubeval" and whole["positions"] == 50
    # Resumable and deterministic as self-play is, and other positions than self-play's.
    generate(tmp_path / "resumed", evaluator, settings, stop_after_shards=1)
    generate(tmp_path / "resumed", evaluator, settings)
    positions = load_datasets(tmp_path / "whole").positions
    assert torch.equal(load_datasets(tmp_path / "resumed").positions, positions)
    self_play = generate(tmp_path / "self", evaluator, GenerationSettings(**{**SETTINGS.__dict__, "select_ply": 0}))
    assert "opponent" not in self_play["settings"]  # self-play manifests read as before opponents existed
    assert not torch.equal(load_datasets(tmp_path / "self").positions, positions)
    with pytest.raises(ValueError, match="another settings"):
        generate(tmp_path / "self", evaluator, settings)
    # A random opponent draws from each shard's own stream: a resumed run makes the same shards.
    random_opponent = GenerationSettings(**{**settings.__dict__, "opponent": "random"})
    generate(tmp_path / "random", evaluator, random_opponent)
    generate(tmp_path / "random-resumed", evaluator, random_opponent, stop_after_shards=1)
    generate(tmp_path / "random-resumed", evaluator, random_opponent)
    assert torch.equal(load_datasets(tmp_path / "random-resumed").positions,
                       load_datasets(tmp_path / "random").positions)

    # The opponent moves seat 1 alone, and none of the positions it moved from is a candidate.
    recording = RecordingAgent()
    monkeypatch.setattr(generate_module, "make_agent", lambda spec, rules, seed: recording)
    generate(tmp_path / "recorded", evaluator, settings)
    assert torch.equal(load_datasets(tmp_path / "recorded").positions, positions)
    assert len(recording.seats) > 20 and all(bool((seats == 1).all()) for seats in recording.seats)
    start = tuple(STANDARD.start_board("cpu").tolist())  # either seat may open a game from it
    asked = {tuple(board) for boards in recording.boards for board in boards.tolist()} - {start}
    taken = {tuple(board) for board in positions.tolist()} - {start}
    assert len(asked) > 200 and len(taken) > 40 and not asked & taken


def test_cli_generate_against_an_opponent_refuses_an_unknown_one_and_info_names_it(tmp_path, capsys):
    code = main(["dataset", "generate", "--model", "checkpoints/bgtrain-default.pt", "--out", str(tmp_path / "d"),
                 "--positions", "10", "--opponent", "gnubg:7ply", "--no-progress"])
    assert code == 2
    assert "gnubg plays at 0ply, 1ply, 2ply, not 7ply" in capsys.readouterr().err
    assert not (tmp_path / "d" / "manifest.json").exists()
    out = tmp_path / "against"
    assert main(["dataset", "generate", "--model", "checkpoints/bgtrain-default.pt", "--out", str(out), "--positions",
                 "12", "--games", "8", "--select-ply", "0", "--labeller", "ply:0", "--opponent", "pubeval",
                 "--no-progress"]) == 0
    assert main(["dataset", "info", str(out)]) == 0
    assert "games: the source model against pubeval, its own turns" in capsys.readouterr().out
