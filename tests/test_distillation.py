"""Distillation: an ensemble's member written as a student's start, the agreement of two models per
phase, and the shipped distilled model: one network a phase that evaluates like generation 8."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import random_boards

from bgtrain.model.checkpoint import save_checkpoint
from bgtrain.model.combine import combine_checkpoints
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from bgtrain.training.config import Config, config_to_dict
from bgtrain.training.distillation import agreement, deepen, phase_member, widen, write_member, write_widened
from engine.board import flip_board
from engine.position_kinds import PHASE_NAMES as PHASES
from engine.position_kinds import PositionKind, position_phases

DISTILLED = Path("checkpoints") / "bgtrain-distilled.pt"
GENERATION_8 = Path("checkpoints") / "bgtrain-supervised.pt"
GENERATION_7 = Path("checkpoints") / "bgtrain-supervised-fast.pt"
POSITIONS = Path(__file__).parent / "data" / "selfplay_positions.npy"


def save(network, path, games: int):
    return save_checkpoint(path, {"model": network.model_args(), "weights": network.state_dict(),
                                  "config": config_to_dict(Config()), "counters": {"games": games},
                                  "rules": "backgammon"})


def boards() -> torch.Tensor:
    mixed = torch.cat((random_boards(300, seed=3), random_boards(100, seed=4, race=True)))
    return torch.cat((mixed, flip_board(mixed)))


def test_a_member_written_alone_evaluates_as_in_the_ensemble(tmp_path):
    torch.manual_seed(0)
    nets = [ValueNetwork(encoder, (8,)).eval() for encoder in ("tesauro198", "tesauro_plus", "gnubg_race")]
    paths = [save(net, tmp_path / f"member{index}.pt", games=index + 1) for index, net in enumerate(nets)]
    model_path = combine_checkpoints(paths, paths[0], paths[1:], tmp_path / "phases.pt")
    model = load_model(model_path).model
    board = boards()
    for phase, index, net in (("contact", 2, nets[2]), ("crashed", 0, nets[0]), ("race", 1, nets[2])):
        written = write_member(model_path, phase, index, tmp_path / f"{phase}.pt")
        loaded = load_model(written)
        member, payload = loaded.model, loaded.payload
        assert isinstance(member, ValueNetwork) and member.model_args() == net.model_args()
        torch.testing.assert_close(member.evaluate(board), net.evaluate(board), atol=0, rtol=0)
        assert payload["source"] == {"model": str(model_path), "phase": phase, "member": index}
    assert load_model(tmp_path / "contact.pt").payload["counters"]["games"] == 3  # that member's own counters
    assert phase_member(model, "crashed", 0) is model.phases["crashed"]  # a phase of one network
    with pytest.raises(ValueError, match="no member 3"):
        phase_member(model, "contact", 3)
    with pytest.raises(ValueError, match="unknown phase"):
        phase_member(model, "bearoff", 0)
    with pytest.raises(ValueError, match="not a phase model"):
        write_member(paths[0], "contact", 0, tmp_path / "bad.pt")


def test_a_widened_student_computes_what_it_did_and_its_new_units_train(tmp_path):
    torch.manual_seed(2)
    narrow = ValueNetwork("gnubg_contact", (16,)).eval()
    path = write_widened(save(narrow, tmp_path / "narrow.pt", games=7), 24, tmp_path / "wide.pt", seed=1)
    wide = load_model(path).model
    assert wide.hidden_sizes == (24,) and load_model(path).payload["config"]["model"]["hidden"] == [24]
    torch.testing.assert_close(wide.evaluate(boards()), narrow.evaluate(boards()), rtol=0, atol=1e-6)
    # The new units see the inputs (their input weights are not zero), so a gradient step moves their
    # output weights: the function changes from there.
    assert float(wide.hidden_layers[0].weight.detach()[16:].abs().sum()) > 0
    wide.forward(boards()).sum().backward()
    assert float(wide.output_layer.weight.grad[:, 16:].abs().sum()) > 0
    with pytest.raises(ValueError, match="not more than the network's 16"):
        widen(narrow, 16)
    with pytest.raises(ValueError, match="one hidden layer"):
        widen(ValueNetwork("tesauro198", (8, 4)), 12)


def test_a_member_widened_then_deepened_at_its_new_width_computes_what_it_did(tmp_path):
    """write_member(wider=...): widened first (zero output weights), then the identity layers of deepen at the new
    width: the start is still the member's function, and the checkpoint names both steps."""
    torch.manual_seed(4)
    shallow = ValueNetwork("gnubg_contact", (16,)).eval()
    paths = [save(shallow, tmp_path / "contact.pt", games=5), save(ValueNetwork("gnubg_race", (8,)), tmp_path / "race.pt", 1)]
    model_path = combine_checkpoints(paths[0], paths[0], paths[1], tmp_path / "phases.pt")
    loaded = load_model(write_member(model_path, "contact", 0, tmp_path / "wide.pt", deeper=1, seed=3, wider=24))
    assert loaded.model.hidden_sizes == (24, 24) and loaded.payload["config"]["model"]["hidden"] == [24, 24]
    assert loaded.payload["source"]["widened_to"] == 24 and loaded.payload["source"]["deepened_by"] == 1
    torch.testing.assert_close(loaded.model.evaluate(boards()), shallow.evaluate(boards()), rtol=0, atol=1e-6)


def test_a_deepened_student_computes_what_it_did_and_its_new_layer_trains(tmp_path):
    torch.manual_seed(3)
    shallow = ValueNetwork("gnubg_contact", (16,)).eval()
    paths = [save(shallow, tmp_path / "contact.pt", games=5), save(ValueNetwork("gnubg_race", (8,)), tmp_path / "race.pt", 1)]
    model_path = combine_checkpoints(paths[0], paths[0], paths[1], tmp_path / "phases.pt")
    path = write_member(model_path, "contact", 0, tmp_path / "deep.pt", deeper=2)
    loaded = load_model(path)
    deep = loaded.model
    assert deep.hidden_sizes == (16, 16, 16) and deep.activation_name == "sigmoid-relu"
    assert loaded.payload["config"]["model"]["hidden"] == [16, 16, 16]
    assert loaded.payload["source"]["deepened_by"] == 2
    torch.testing.assert_close(deep.evaluate(boards()), shallow.evaluate(boards()), rtol=0, atol=1e-6)
    deep.train()
    deep.forward(boards()).sum().backward()
    assert float(deep.hidden_layers[1].weight.grad.abs().sum()) > 0  # the new layers learn from the first step
    # Deepened again, a sigmoid-relu network keeps its function too; one whose outputs can be negative cannot.
    torch.testing.assert_close(deepen(deep, 1).eval().evaluate(boards()), shallow.evaluate(boards()), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="never negative"):
        deepen(ValueNetwork("tesauro198", (8,), "tanh"), 1)
    with pytest.raises(ValueError, match="number of layers"):
        deepen(shallow, 0)


def test_a_narrower_deepened_student_keeps_its_first_layer_and_starts_its_new_layers_from_its_seed(tmp_path):
    """deepen at a narrower width: no identity fits, so the new layer and the output layer are random (seeded),
    the member's first layer and output biases are kept, and the checkpoint says so."""
    torch.manual_seed(5)
    shallow = ValueNetwork("gnubg_contact", (16,)).eval()
    paths = [save(shallow, tmp_path / "contact.pt", games=5), save(ValueNetwork("gnubg_race", (8,)), tmp_path / "race.pt", 1)]
    model_path = combine_checkpoints(paths[0], paths[0], paths[1], tmp_path / "phases.pt")
    path = write_member(model_path, "contact", 0, tmp_path / "narrow.pt", deeper=1, width=4, seed=7)
    loaded = load_model(path)
    narrow = loaded.model
    assert narrow.hidden_sizes == (16, 4) and narrow.activation_name == "sigmoid-relu"
    assert loaded.payload["config"]["model"]["hidden"] == [16, 4]
    assert loaded.payload["source"]["deepened_by"] == 1 and loaded.payload["source"]["deepened_width"] == 4
    assert torch.equal(narrow.hidden_layers[0].weight, shallow.hidden_layers[0].weight)
    assert torch.equal(narrow.output_layer.bias, shallow.output_layer.bias)
    assert narrow.output_layer.weight.shape == (5, 4)
    assert narrow.hidden_layers[1].weight.detach().abs().sum() > 0 and narrow.output_layer.weight.detach().abs().sum() > 0
    # The same seed gives the same start whatever the global generator holds; another seed another start.
    torch.manual_seed(99)
    again = deepen(shallow, 1, 4, seed=7)
    other = deepen(shallow, 1, 4, seed=8)
    assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(), narrow.state_dict().values()))
    assert not torch.equal(other.hidden_layers[1].weight, narrow.hidden_layers[1].weight)
    # Its full width is the pass-through start; wider than the member has no meaning.
    torch.testing.assert_close(deepen(shallow, 1, 16).eval().evaluate(boards()), shallow.evaluate(boards()),
                               rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="a width of 32 units"):
        deepen(shallow, 1, 32)
    with pytest.raises(ValueError, match="a width of -1 units"):
        deepen(shallow, 1, -1)


def test_agreement_is_zero_with_itself_and_sees_a_changed_phase():
    torch.manual_seed(1)
    nets = {name: ValueNetwork("tesauro198", (8,)).eval() for name in PHASES}
    model = PhaseNetwork(nets)
    board = boards()
    same = agreement(model, model, board)
    assert set(same) == set(PHASES) and all(row["equity_max"] == 0.0 for row in same.values())
    assert sum(row["positions"] for row in same.values()) == board.shape[0]
    other = PhaseNetwork({**nets, "race": EnsembleNetwork([nets["race"], ValueNetwork("tesauro198", (8,)).eval()])})
    changed = agreement(other, model, board)
    assert changed["contact"]["equity_max"] == 0.0 and changed["crashed"]["equity_max"] == 0.0
    assert changed["race"]["equity_rms"] > 0.0


@pytest.mark.skipif(not DISTILLED.is_file(), reason="the distilled model is not in this checkout")
def test_the_shipped_distilled_model_is_one_network_a_phase_that_evaluates_like_generation_8():
    torch.set_num_threads(1)
    loaded = load_model(DISTILLED)
    student, payload = loaded.model, loaded.payload
    teacher = load_model(GENERATION_8).model
    assert isinstance(student, PhaseNetwork)
    assert all(type(student.phases[name]) is ValueNetwork for name in PHASES)
    assert payload["model"]["phases"]["contact"]["hidden"] == [512]
    # 2,000 positions (1,000 contact, 500 crashed, 500 race) from noisy self-play of bgtrain-plus.pt that
    # no student saw (runs/datasets/distil-check-s106, seed 106, the recipe of the students' datasets).
    board = torch.from_numpy(np.load(POSITIONS))
    assert set(position_phases(board).tolist()) == {int(PositionKind.CONTACT), int(PositionKind.CRASHED), int(PositionKind.RACE)}
    report = agreement(student, teacher, board)
    # Measured when it shipped, equity RMS against generation 8: contact 0.0089, crashed 0.0054, race
    # 0.0068; generation 7 (one network a phase, members of generation 8's ensembles) 0.0110, 0.0187, 0.0091.
    for name in PHASES:
        assert report[name]["equity_rms"] < 0.012, (name, report[name])
    single = load_model(GENERATION_7).model
    apart = agreement(single, teacher, board)
    for name in PHASES:
        assert report[name]["equity_rms"] < apart[name]["equity_rms"], (name, report[name], apart[name])
