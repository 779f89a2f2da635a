"""The move-choice term: groups of a plays dataset's rows, the centred loss, the within-roll error, and a
supervised training that uses them (it lowers what a choice loses, resumes exactly, holds out whole groups)."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import compile_mode, tiny_dataset, tiny_evaluator, tiny_plays

from bgtrain.commands.train import train
from bgtrain.datasets import PlyLabeller, load_datasets
from bgtrain.datasets.generate import GenerationSettings
from bgtrain.datasets.relabel import relabel_dataset
from bgtrain.model.loading import load_model
from bgtrain.outcomes import cubeless_equity
from bgtrain.training.config import load_config
from bgtrain.training.heldout import split_dataset
from bgtrain.training.move_choices import (
    MoveChoiceGroups,
    sibling_loss,
    softmax_choice_loss,
    within_roll_error,
)


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):
        yield


@pytest.fixture(scope="module")
def plays(tmp_path_factory):
    """Every play of a roll of 40 self-play positions, labelled by a tiny teacher's 0-ply."""
    return tiny_plays(tmp_path_factory.mktemp("tiny"))[1]


def config_for(dataset, out, *overrides):
    return load_config("configs/supervised_gen1.toml", [
        f"supervised.datasets=['{dataset}']", f"run.out_dir={out.parent}", f"run.name={out.name}",
        "model.encoder=tesauro_plus", "model.hidden=[16]", "supervised.kinds=['contact','crashed','race','bearoff']",
        "supervised.heldout_fraction=0.0", "evaluation.games=2", "evaluation.benchmark=false", "checkpoint.keep_last=0",
        "supervised.batch_size=64", "supervised.learning_rate=1e-2", *overrides])


def test_the_loss_sees_only_differences_within_a_group():
    teacher = torch.tensor([0.1, 0.4, -0.2, 0.3, 0.9])
    segment = torch.tensor([0, 0, 0, 1, 1])
    shifted = teacher + torch.tensor([0.5, 0.5, 0.5, -2.0, -2.0])  # a constant a group: nothing to learn
    assert float(sibling_loss(shifted, teacher, segment, 2)) == pytest.approx(0.0, abs=1e-12)
    swapped = teacher[[1, 0, 2, 4, 3]]  # two plays of each group swapped
    # Group 0: differences (0.3, -0.3, 0) less their mean 0; group 1: (0.6, -0.6) less 0.
    expected = (0.3**2 + 0.3**2 + 0 + 0.6**2 + 0.6**2) / 5
    assert float(sibling_loss(swapped, teacher, segment, 2)) == pytest.approx(expected)


def test_the_softmax_term_reads_the_choice_and_matches_the_squares_for_small_differences():
    teacher = torch.tensor([0.10, 0.12, 0.60, 0.30, 0.31])
    segment = torch.tensor([0, 0, 0, 1, 1])
    shifted = teacher + torch.tensor([0.5, 0.5, 0.5, -2.0, -2.0])
    assert float(softmax_choice_loss(shifted, teacher, segment, 2, 0.02)) == pytest.approx(0.0, abs=1e-9)
    # Group 0's third play is 0.48 below the best (24 temperatures): valuing it 0.2 better changes no choice
    # and costs next to nothing; valuing it as good as the best costs as much as a swap of the top two.
    far = teacher + torch.tensor([0.0, 0.0, -0.2, 0.0, 0.0])
    near = teacher + torch.tensor([0.0, 0.0, -0.5, 0.0, 0.0])
    swapped = teacher[[1, 0, 2, 3, 4]]
    assert float(softmax_choice_loss(far, teacher, segment, 2, 0.02)) < 1e-6
    assert float(sibling_loss(far, teacher, segment, 2)) > 0.005  # the squares weigh it as any other error
    assert float(softmax_choice_loss(near, teacher, segment, 2, 0.02)) > float(
        softmax_choice_loss(swapped, teacher, segment, 2, 0.02))
    # Differences small against the temperature: the squares' value, the one weight serving both.
    generator = torch.Generator().manual_seed(0)
    groups = torch.arange(500).repeat_interleave(4)
    small = torch.randn(2000, generator=generator) * 0.002
    student = small + torch.randn(2000, generator=generator) * 0.002
    assert float(softmax_choice_loss(student, small, groups, 500, 0.1)) == pytest.approx(
        float(sibling_loss(student, small, groups, 500)), rel=0.02)


def test_within_roll_error_is_what_the_students_choice_loses():
    # Rows are seen by the side on roll after the play: the mover chooses the lowest equity.
    groups = torch.tensor([7, 7, 7, 2, 2, 5, -1])  # group 5 has one row and -1 none: no choice in either
    student = torch.tensor([0.1, 0.2, 0.3, 0.5, 0.4, 0.0, -9.0])
    teacher = torch.tensor([0.2, 0.1, 0.5, 0.0, 0.3, 1.0, 9.0])
    # Group 7: the student takes row 0 (teacher 0.2, best 0.1): loses 0.1; group 2: row 4 (0.3, best 0.0): 0.3.
    assert within_roll_error(student, teacher, groups) == pytest.approx(0.2)
    assert within_roll_error(teacher, teacher, groups) == 0.0
    assert math.isnan(within_roll_error(student[5:], teacher[5:], groups[5:]))


def test_groups_of_two_or_more_rows_are_drawn_whole():
    groups = torch.tensor([3, -1, 3, 9, 4, 4, 4, 3])
    choices = MoveChoiceGroups(groups)
    assert len(choices) == 2  # 3 and 4; 9 is alone
    rows, segment = choices.draw(50, torch.Generator().manual_seed(0))
    for index in range(50):
        drawn = rows[segment == index].tolist()
        assert sorted(drawn) in ([0, 2, 7], [4, 5, 6])
    assert {tuple(sorted(rows[segment == index].tolist())) for index in range(50)} == {(0, 2, 7), (4, 5, 6)}


def test_the_term_lowers_what_the_choices_lose_and_resumes_exactly(tmp_path, plays):
    data = load_datasets([plays])
    assert len(MoveChoiceGroups(data.groups)) >= 30  # the fixture holds real move choices

    def choice_error(final) -> float:
        network = load_model(final).model
        with torch.no_grad():
            return within_roll_error(cubeless_equity(network(data.positions)), cubeless_equity(data.targets),
                                     data.groups)

    plain = choice_error(train(config_for(plays, tmp_path / "plain", "supervised.epochs=30"), progress=False))
    ranked_config = config_for(plays, tmp_path / "ranked", "supervised.epochs=30", "supervised.sibling_weight=20.0",
                               "supervised.sibling_groups=8")
    ranked = choice_error(train(ranked_config, progress=False))
    assert ranked < 0.7 * plain, (ranked, plain)
    softmax_config = config_for(plays, tmp_path / "softmax", "supervised.epochs=30", "supervised.sibling_weight=20.0",
                                "supervised.sibling_groups=8", "supervised.sibling_loss='softmax'",
                                "supervised.sibling_temperature=0.05")
    assert choice_error(train(softmax_config, progress=False)) < 0.7 * plain

    short = config_for(plays, tmp_path / "whole", "supervised.epochs=2", "supervised.sibling_weight=5.0")
    whole = load_model(train(short, progress=False)).model
    middle = tmp_path / "whole" / "checkpoints" / "epoch_0001.pt"
    resumed = load_model(train(config_for(plays, tmp_path / "resumed", "supervised.epochs=2",
                                          "supervised.sibling_weight=5.0"), resume=middle, progress=False)).model
    for name, tensor in whole.state_dict().items():
        assert torch.equal(tensor, resumed.state_dict()[name]), name


def test_whole_groups_are_held_out_and_their_error_recorded(tmp_path, plays):
    config = config_for(plays, tmp_path / "held", "supervised.epochs=1", "supervised.heldout_fraction=0.3")
    training, held = split_dataset(load_datasets([plays]), config)
    assert len(held) and not set(training.groups.tolist()) & set(held.groups.tolist())
    payload = load_model(train(config, progress=False)).payload
    assert payload["strength"]["heldout_within_roll_error"] >= 0.0


def test_the_term_needs_groups(tmp_path):

    directory = tmp_path / "flat"
    teacher = tiny_evaluator(2)
    tiny_dataset(directory, teacher, GenerationSettings(positions=20, shard_size=20, seed=1, games_in_parallel=8,
                                                        burn_in_turns=4, sample_rate=0.5, select_ply=0))
    with pytest.raises(ValueError, match="sibling_weight needs a plays dataset"):
        train(config_for(directory, tmp_path / "run", "supervised.epochs=1", "supervised.sibling_weight=1.0"),
              progress=False)
    with pytest.raises(ValueError, match="sibling_weight = -1.0: must be >= 0"):
        config_for(directory, tmp_path / "run", "supervised.sibling_weight=-1.0")
    with pytest.raises(ValueError, match="sibling_loss = 'hinge': must be one of 'mse', 'softmax'"):
        config_for(directory, tmp_path / "run", "supervised.sibling_loss='hinge'")
    with pytest.raises(ValueError, match="sibling_temperature = 0.0: must be > 0"):
        config_for(directory, tmp_path / "run", "supervised.sibling_temperature=0.0")


def within_roll_error_script():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "within_roll_error", Path(__file__).resolve().parents[1] / "scripts" / "within_roll_error.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script.main


def test_the_script_scores_models_against_the_mean_of_a_references_teachers(tmp_path, plays, capsys):
    import json

    from helpers import tiny_checkpoint

    main = within_roll_error_script()
    teacher, other = tiny_checkpoint(tmp_path / "teacher.pt", seed=1), tiny_checkpoint(tmp_path / "other.pt", seed=9)
    out = tmp_path / "scores.json"
    assert main([str(teacher), str(other), "--datasets", str(plays), "--kinds", "contact", "--json", str(out)]) == 0
    first, second = json.loads(out.read_text())["results"]
    assert first["error"] == 0.0 and first["decisions"] >= 20  # the teacher loses nothing by its own labels
    assert second["error"] > 0.0 and second["paired"] == pytest.approx(second["error"])
    # A second labelling of the same rows: the teacher is the mean of both, so the first model loses too.
    again = tmp_path / "again"
    relabel_dataset(again, plays, PlyLabeller(tiny_evaluator(9), 0, "other"), progress=False)
    assert main([str(teacher), "--datasets", str(plays), str(again), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["results"][0]["error"] > 0.0
    capsys.readouterr()
    assert main([str(teacher), "--datasets", str(plays), str(tmp_path / "again"), "--kinds", "nowhere"]) == 2
    assert "--kinds: 'nowhere' is not a kind of position" in capsys.readouterr().err


def test_the_script_scores_a_trainings_held_out_choices(tmp_path, plays, capsys):
    import json

    from helpers import tiny_checkpoint

    from bgtrain.training.config import to_toml_text

    main = within_roll_error_script()
    teacher, other = tiny_checkpoint(tmp_path / "teacher.pt", seed=1), tiny_checkpoint(tmp_path / "other.pt", seed=9)
    config = config_for(plays, tmp_path / "run", "supervised.heldout_fraction=0.3", "supervised.heldout_by='position'",
                        f"supervised.datasets=['{plays}', '{plays}']")
    path = tmp_path / "config.toml"
    path.write_text(to_toml_text(config))
    out = tmp_path / "scores.json"
    assert main([str(teacher), str(other), "--heldout", str(path), "--kinds", "contact", "--json", str(out)]) == 0
    written = json.loads(out.read_text())
    first, second = written["results"]
    held = split_dataset(load_datasets([plays, plays]), config)[1]
    assert written["heldout"] == str(path) and first["decisions"] == int(torch.unique(held.groups).numel())
    assert first["error"] == 0.0 and second["error"] > 0.0  # the labels' teacher loses nothing on them
    assert "warning" not in capsys.readouterr().err
    path.write_text(to_toml_text(config_for(plays, tmp_path / "run", "supervised.heldout_fraction=0.3",
                                            f"supervised.datasets=['{plays}', '{plays}']")))
    assert main([str(teacher), "--heldout", str(path), "--kinds", "contact"]) == 0
    assert "held-out rows (" in capsys.readouterr().err  # by row, the copies leak: the split says so
    path.write_text(to_toml_text(config_for(plays, tmp_path / "run")))  # heldout_fraction 0: nothing held out
    assert main([str(teacher), "--heldout", str(path)]) == 2
    assert "no held-out move choice of the kinds ['contact']" in capsys.readouterr().err
