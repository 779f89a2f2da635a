"""GNU Backgammon as a labeller (``gnubg:N``): its probabilities for the side to move, in our order, on
golden positions and against our own model; a dataset relabelled by it through the CLI; its mistakes
refused in one line. Skipped without GNU Backgammon's bindings (``pip install gnubg-nn``)."""

from __future__ import annotations

import pytest
import torch
from helpers import compile_mode

from bgtrain.arena.gnubg import load_bindings
from bgtrain.cli import main
from bgtrain.datasets import read_manifest
from bgtrain.datasets.labellers import GnubgLabeller, labeller_from_description, labeller_from_spec
from bgtrain.datasets.shards import read_shard
from bgtrain.generation.reading import plan_from_dict
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.evaluator import Evaluator
from engine.random_play import sample_positions
from engine.rules import STANDARD

try:
    load_bindings()
except ValueError:
    pytest.skip("GNU Backgammon's Python bindings are not installed", allow_module_level=True)


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):
        yield


def board_of(mover: dict[int, int], opponent: dict[int, int]) -> torch.Tensor:
    """A board from the mover's side: ``mover`` its checkers by its own point, ``opponent`` the other
    side's by the mover's numbering (negative counts on the board)."""
    row = [0] * 28
    for point, count in mover.items():
        row[point] = count
    for point, count in opponent.items():
        row[point] = -count
    return torch.tensor([row], dtype=torch.int8)


def test_the_side_to_move_is_the_one_labelled():
    # X to move has one checker left, on its 1 point; O has all 15 on X's 19 point (O's own 6 point),
    # none borne off. X bears off with any roll: a gammon.
    #
    #   O: 19 x15 ...................................... X: 1 x1, 14 off
    winning = board_of({1: 1}, {19: 15})
    targets, errors = GnubgLabeller(0).label(winning)
    assert targets[0].tolist() == pytest.approx([1.0, 1.0, 0.0, 0.0, 0.0], abs=1e-4)
    assert errors.abs().sum() == 0
    # X to move has all 15 on its 19 point, none home; O has one checker left, on X's 24 point (its
    # own 1 point), 14 off. X cannot bear off this roll; O bears off next: X loses a gammon.
    #
    #   X: 19 x15 ...................................... O: 24 x1, 14 off
    losing = board_of({19: 15}, {24: 1})
    targets, _ = GnubgLabeller(1).label(losing)
    assert targets[0, 0] < 0.02 and targets[0, 3] > 0.95


def test_gnubg_and_our_model_agree_on_who_is_ahead():
    boards, _ = sample_positions(200, 5, STANDARD, "cpu")
    ours = Evaluator.from_path("checkpoints/bgtrain-default.pt").probabilities(boards, 0)
    theirs, _ = labeller_from_spec("gnubg:0", "unused").label(boards)
    assert theirs.shape == (200, 5) and theirs.dtype == torch.float32
    correlation = torch.corrcoef(torch.stack([cubeless_equity(ours.double()), cubeless_equity(theirs.double())]))
    assert correlation[0, 1] > 0.95


def test_a_labeller_rebuilt_from_its_description_labels_the_same():
    boards, _ = sample_positions(12, 8, STANDARD, "cpu")
    labeller = labeller_from_spec("gnubg:1", "unused")
    assert labeller.describe() == {"kind": "gnubg", "ply": 1, "package": labeller.evaluator.bindings.package}
    again = labeller_from_description(labeller.describe(), evaluator=None)
    assert torch.equal(again.label(boards)[0], labeller.label(boards)[0])


@pytest.mark.parametrize("spec", ["gnubg:3", "gnubg:one", "gnubg:"])
def test_a_ply_gnubg_has_not_is_refused(spec):
    with pytest.raises(ValueError, match="gnubg") as refused:
        labeller_from_spec(spec, "unused")
    assert "\n" not in str(refused.value)


def test_cli_relabels_a_dataset_with_gnubg(tmp_path, capsys):
    source, out = tmp_path / "source", tmp_path / "gnubg"
    assert main(["dataset", "generate", "--model", "checkpoints/bgtrain-default.pt", "--out", str(source),
                 "--positions", "12", "--shard-size", "6", "--games", "16", "--select-ply", "0",
                 "--labeller", "ply:0", "--no-progress", "--seed", "2"]) == 0
    assert main(["dataset", "relabel", str(source), "--out", str(out), "--labeller", "gnubg:1", "--no-progress"]) == 0
    manifest = read_manifest(out)
    assert manifest["labeller"]["kind"] == "gnubg" and manifest["labeller"]["ply"] == 1
    bindings = load_bindings()
    from bgtrain.arena.gnubg import to_gnubg_board

    for entry in manifest["shards"]:
        shard = read_shard(out / entry["file"], entry)
        for board, target, zero_ply in zip(shard["positions"].tolist(), shard["targets"], shard["zero_ply"]):
            gnubg_board = to_gnubg_board(board)
            assert target.tolist() == pytest.approx(bindings.probabilities(gnubg_board, 1), abs=1e-6)
            assert zero_ply.tolist() == pytest.approx(bindings.probabilities(gnubg_board, 0), abs=1e-6)
    capsys.readouterr()
    assert main(["dataset", "plays", str(source), "--out", str(tmp_path / "plays"), "--labeller", "gnubg:1"]) == 2
    error = capsys.readouterr().err
    assert "the labeller's model picks the plays" in error and error.count("\n") == 1


def test_a_plan_may_label_with_gnubg_but_not_pick_plays_with_it(tmp_path):
    from test_generation_pipeline import tiny_data

    data = tiny_data(tmp_path)
    data["relabel"].append({"name": "gnubg-s1", "source": data["datasets"][0]["name"], "labeller": "gnubg:2"})
    assert plan_from_dict(data).relabel[-1].labeller == "gnubg:2"
    data = tiny_data(tmp_path)
    data["plays"] = [{"name": "plays-s1", "source": data["datasets"][0]["name"], "labeller": "gnubg:1"}]
    with pytest.raises(ValueError, match="the plays' model labels them"):
        plan_from_dict(data)


def test_gnubg_labels_of_a_variant_it_does_not_play_are_refused(tmp_path, capsys):
    out = tmp_path / "dutch"
    assert main(["dataset", "generate", "--model", "checkpoints/bgtrain-dutch.pt", "--out", str(out), "--positions",
                 "6", "--labeller", "gnubg:0", "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert "labels backgammon and nackgammon positions, not 'dutch'" in error and error.count("\n") == 1
    assert not out.exists()
