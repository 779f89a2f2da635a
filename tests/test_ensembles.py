"""Ensembles: the mean of their members' outcome probabilities, alone or as one phase of a phase model,
through the checkpoint round trip, the evaluator, the agents and the exports."""

from __future__ import annotations

import pytest
import torch
from helpers import compile_mode, random_boards

from bgtrain.arena.specs import make_agent
from bgtrain.model.checkpoint import save_checkpoint
from bgtrain.model.combine import combine_checkpoints
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from bgtrain.outcomes import cubeless_equity
from bgtrain.training.config import Config, config_to_dict
from engine.board import flip_board
from engine.position_kinds import PositionKind, position_phases
from engine.rules import STANDARD


def members(seed: int, count: int = 3) -> list[ValueNetwork]:
    torch.manual_seed(seed)
    return [ValueNetwork(encoder, (8,)).eval() for encoder in ("tesauro198", "tesauro_plus", "gnubg_race")[:count]]


def boards() -> torch.Tensor:
    mixed = torch.cat((random_boards(300, seed=3), random_boards(100, seed=4, race=True)))
    return torch.cat((mixed, flip_board(mixed)))


def save(network, path):
    return save_checkpoint(path, {"model": network.model_args(), "weights": network.state_dict(),
                                  "config": config_to_dict(Config()), "counters": {"games": 10}, "rules": "backgammon"})


def test_the_mean_of_the_members():
    nets = members(0)
    ensemble = EnsembleNetwork(nets)
    board = boards()
    mean = sum(net.evaluate(board) for net in nets) / 3
    torch.testing.assert_close(ensemble.evaluate(board), mean)
    torch.testing.assert_close(ensemble.evaluate_flipped(board), ensemble.evaluate(flip_board(board)), atol=1e-5,
                               rtol=0)
    torch.testing.assert_close(ensemble(board), mean, atol=1e-5, rtol=0)
    # Still cumulative probabilities: win >= win gammon >= win backgammon, lose gammon >= lose backgammon.
    probs = ensemble.evaluate(board)
    assert bool((probs[:, 0] >= probs[:, 1]).all() and (probs[:, 1] >= probs[:, 2]).all())
    assert bool((probs[:, 3] >= probs[:, 4]).all())
    # Its equity is the members' mean equity.
    torch.testing.assert_close(cubeless_equity(probs), sum(cubeless_equity(net.evaluate(board)) for net in nets) / 3)
    with pytest.raises(ValueError, match="at least two"):
        EnsembleNetwork(nets[:1])
    with pytest.raises(ValueError, match="single networks"):
        EnsembleNetwork([ensemble, nets[0]])


def test_checkpoint_round_trip_alone_and_as_a_phase(tmp_path):
    nets = members(1)
    alone = save(EnsembleNetwork(nets), tmp_path / "ensemble.pt")
    loaded = load_model(alone)
    loaded, payload = loaded.model, loaded.payload
    assert payload["model"]["kind"] == "ensemble" and len(payload["model"]["members"]) == 3
    board = boards()
    torch.testing.assert_close(loaded.evaluate(board), EnsembleNetwork(nets).evaluate(board))

    # A phase model whose contact phase is an ensemble of three checkpoints.
    paths = [save(net, tmp_path / f"member{index}.pt") for index, net in enumerate(nets)]
    combined = combine_checkpoints(paths, paths[1], [paths[2]], tmp_path / "phases.pt")
    loaded = load_model(combined)
    model, payload = loaded.model, loaded.payload
    assert payload["model"]["phases"]["contact"]["kind"] == "ensemble"
    assert payload["sources"]["contact"] == [str(path) for path in paths]
    assert payload["sources"]["crashed"] == str(paths[1]) and payload["counters"]["games"] == 50
    expected = PhaseNetwork({"contact": EnsembleNetwork(nets), "crashed": nets[1], "race": nets[2]})
    torch.testing.assert_close(model.evaluate(board), expected.evaluate(board))
    contact = position_phases(board) == PositionKind.CONTACT
    torch.testing.assert_close(model.evaluate(board)[contact], EnsembleNetwork(nets).evaluate(board[contact]))
    with pytest.raises(ValueError, match="ensemble already"):
        combine_checkpoints([alone, paths[0]], paths[1], paths[2], tmp_path / "again.pt")
    # The agents take it like any checkpoint.
    agent = make_agent(str(combined), bearoff=False)
    assert agent.static.value.network.phases["contact"].model_args()["kind"] == "ensemble"


@pytest.mark.slow
def test_onnx_export_averages_like_the_model(tmp_path):
    # About a minute on the shared 2-core CPU: five traced networks and onnxruntime's check.
    pytest.importorskip("onnxruntime")
    from bgtrain.export import export_model
    from bgtrain.model.onnx_model import OnnxValueModel

    nets = members(2)
    board = boards()
    for name, model in (("ensemble", EnsembleNetwork(nets)),
                        ("phases", PhaseNetwork({"contact": EnsembleNetwork(nets), "crashed": nets[0],
                                                 "race": EnsembleNetwork(nets[1:])}))):
        path = tmp_path / f"{name}.onnx"
        with compile_mode("never"):
            export_model(model, {}, path, "onnx")  # checked against model.evaluate to 1e-5 before writing
        torch.testing.assert_close(OnnxValueModel(path).evaluate(board, STANDARD), model.evaluate(board),
                                   atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="an ensemble has no single encoded input"):
        export_model(EnsembleNetwork(nets), {}, tmp_path / "bare.onnx", "onnx", bare=True)


def test_the_weight_average_of_networks_of_one_shape(tmp_path, capsys):
    from bgtrain.cli import main

    torch.manual_seed(5)
    nets = [ValueNetwork("tesauro198", (8,)).eval() for _ in range(3)]
    paths = [str(save(net, tmp_path / f"step{index}.pt")) for index, net in enumerate(nets)]
    out = str(tmp_path / "averaged.pt")
    assert main(["combine", "--contact", *paths, "--crashed", *paths[:2], "--race", paths[2], "--average",
                 "--out", out]) == 0
    assert "tesauro198 8 (mean of 3)" in capsys.readouterr().out
    loaded = load_model(out)
    model, payload = loaded.model, loaded.payload
    # One network a phase, each parameter the members' mean; the race phase, given one, is that one.
    assert payload["averaged"] == ["contact", "crashed"] and payload["sources"]["contact"] == paths
    assert payload["model"]["phases"]["contact"] == nets[0].model_args()
    for phase, members in (("contact", nets), ("crashed", nets[:2]), ("race", nets[2:])):
        for key, value in model.phases[phase].state_dict().items():
            torch.testing.assert_close(value, sum(net.state_dict()[key] for net in members) / len(members))
    # Not the ensemble: the mean of the weights evaluates otherwise than the mean of the outputs.
    board = boards()
    assert not torch.allclose(model.phases["contact"].evaluate(board), EnsembleNetwork(nets).evaluate(board))
    # A network averaged with copies of itself is itself (to the rounding of (w + w + w) / 3).
    same = combine_checkpoints([paths[0]] * 3, paths[0], paths[0], tmp_path / "same.pt", average=True)
    torch.testing.assert_close(load_model(same).model.evaluate(board), nets[0].evaluate(board), atol=1e-6, rtol=0)
    # Networks of other shapes cannot be averaged: a one-line error naming both.
    other = str(save(ValueNetwork("tesauro198", (16,)), tmp_path / "wider.pt"))
    assert main(["combine", "--contact", paths[0], other, "--crashed", paths[0], "--race", paths[0], "--average",
                 "--out", str(tmp_path / "mixed.pt")]) == 2
    error = capsys.readouterr().err
    assert f"{other}:" in error and "cannot be averaged" in error and error.count("\n") == 1
