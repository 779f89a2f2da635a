"""Phase networks: routing by phase, the save/load round trip, the evaluator and agents on them, and
the ONNX export (a torch.where on the phase) against the PyTorch model."""

from __future__ import annotations

import pytest
import torch
from helpers import compile_mode, random_boards

from bgtrain.model.checkpoint import save_checkpoint
from bgtrain.model.combine import combine_checkpoints
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from bgtrain.training.config import Config, config_to_dict
from bgtrain.values.evaluator import Evaluator
from engine.board import flip_board
from engine.position_kinds import PHASE_NAMES as PHASES
from engine.position_kinds import PositionKind, position_kinds, position_phases
from engine.rules import STANDARD


def networks(seed: int = 0) -> dict[str, ValueNetwork]:
    torch.manual_seed(seed)
    return {name: ValueNetwork(encoder, (8,)).eval()
            for name, encoder in zip(PHASES, ("tesauro_plus", "tesauro198", "tesauro198"))}


def boards() -> torch.Tensor:
    mixed = torch.cat((random_boards(300, seed=1), random_boards(100, seed=2, race=True)))
    return torch.cat((mixed, flip_board(mixed)))


def test_position_phases_match_position_kinds():
    board = boards()
    kinds = position_kinds(board)
    expected = torch.full_like(kinds, PositionKind.CONTACT)
    expected[kinds == PositionKind.CRASHED] = PositionKind.CRASHED
    expected[(kinds == PositionKind.RACE) | (kinds == PositionKind.BEAROFF)] = PositionKind.RACE
    phase = position_phases(board)
    assert torch.equal(phase, expected)
    assert {PositionKind.CONTACT, PositionKind.CRASHED, PositionKind.RACE} <= set(phase.tolist())
    assert torch.equal(position_phases(flip_board(board)), phase)  # the same from both sides


def test_rows_go_to_their_phase_network():
    parts = networks()
    model = PhaseNetwork(parts)
    board = boards()
    phase = position_phases(board)
    got = model.evaluate(board)
    flipped = model.evaluate_flipped(board)
    for name in PHASES:
        rows = phase == PositionKind[name.upper()]
        torch.testing.assert_close(got[rows], parts[name].evaluate(board[rows]))
        torch.testing.assert_close(flipped[rows], parts[name].evaluate(flip_board(board[rows])), atol=1e-5, rtol=0)
    torch.testing.assert_close(model(board), got, atol=1e-5, rtol=0)


def test_save_load_and_the_tools(tmp_path):
    parts = networks(1)
    paths = []
    for name, network in parts.items():
        path = tmp_path / f"{name}.pt"
        save_checkpoint(path, {"model": network.model_args(), "weights": network.state_dict(),
                               "config": config_to_dict(Config()), "counters": {}, "rules": "backgammon"})
        paths.append(path)
    combined = combine_checkpoints(*paths, tmp_path / "phases.pt")
    loaded = load_model(combined)
    loaded, payload = loaded.model, loaded.payload
    assert payload["model"]["kind"] == "phases"
    board = boards()
    torch.testing.assert_close(loaded.evaluate(board), PhaseNetwork(parts).evaluate(board))
    # The evaluator (and so eval, bench and league) takes the file like any checkpoint.
    evaluator = Evaluator.from_path(combined, bearoff=False)
    with compile_mode("never"):
        assert evaluator.probabilities(board[:8], ply=1).shape == (8, 5)
        assert evaluator.best_moves(board[:8], torch.tensor([[3, 1]] * 8), ply=0).shape == (8,)
    # A phase model given for a phase gives its network of that phase: here the contact network of
    # `combined` with the other two phases swapped.
    swapped = load_model(combine_checkpoints(combined, paths[2], paths[1], tmp_path / "again.pt")).model
    crashed_network, race_network = swapped.phases["crashed"], swapped.phases["race"]
    assert swapped.phases["contact"].model_args() == parts["contact"].model_args()
    torch.testing.assert_close(crashed_network.evaluate(board), parts["race"].evaluate(board), atol=0, rtol=0)
    torch.testing.assert_close(race_network.evaluate(board), parts["crashed"].evaluate(board), atol=0, rtol=0)


def test_every_command_takes_a_phase_model(tmp_path, capsys):
    """The phase file through the command lines themselves (bench and league go through the
    executor's work units, which rebuild the model from its description on the worker)."""
    from bgtrain.cli import main

    paths = []
    for name, network in networks(2).items():
        path = tmp_path / f"{name}.pt"
        save_checkpoint(path, {"model": network.model_args(), "weights": network.state_dict(),
                               "config": config_to_dict(Config()), "counters": {}, "rules": "backgammon"})
        paths.append(path)
    model = str(combine_checkpoints(*paths, tmp_path / "phases.pt"))
    with compile_mode("never"):
        assert main(["bench", model, "pubeval", "--games", "8", "--threads", "1"]) == 0
        assert "8 cubeless money games" in capsys.readouterr().out
        assert main(["league", model, "pubeval", "random", "--games", "4", "--threads", "1",
                     "--out", str(tmp_path / "league")]) == 0
        assert main(["eval", "4HPwATDgc/ABMA", "--dice", "31", "--model", model]) == 0
        assert main(["benchmark", model, "--class", "race", "--threads", "1"]) == 0
        assert main(["rollout", "4HPwATDgc/ABMA", "--trials", "36", "--truncate", "2", "--model", model,
                     "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "race (2000)" in out and "equity" in out


@pytest.mark.slow
def test_onnx_export_routes_like_the_model(tmp_path):
    # About 50 s on the shared 2-core CPU: three traced networks and onnxruntime's check.
    pytest.importorskip("onnxruntime")
    from bgtrain.export import export_model
    from bgtrain.model.onnx_model import OnnxValueModel

    model = PhaseNetwork(networks(2))
    path = tmp_path / "phases.onnx"
    with compile_mode("never"):
        export_model(model, {}, path, "onnx")  # checked against model.evaluate to 1e-5 before writing
    board = boards()
    torch.testing.assert_close(OnnxValueModel(path).evaluate(board, STANDARD), model.evaluate(board),
                               atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="without --bare"):
        export_model(model, {}, tmp_path / "bare.onnx", "onnx", bare=True)


def test_the_combine_command_replaces_one_phase_of_a_model(tmp_path, capsys):
    from bgtrain.cli import main

    parts = networks(3)
    paths = []
    for games, (name, network) in enumerate(parts.items(), start=1):
        path = tmp_path / f"{name}.pt"
        save_checkpoint(path, {"model": network.model_args(), "weights": network.state_dict(),
                               "config": config_to_dict(Config()), "counters": {"games": games},
                               "rules": "backgammon"})
        paths.append(str(path))
    model = str(combine_checkpoints(*paths, tmp_path / "phases.pt"))
    out = str(tmp_path / "retrained.pt")
    # The race phase replaced by the contact network's checkpoint, the others taken from the phase model.
    assert main(["combine", "--contact", model, "--crashed", model, "--race", paths[0], "--out", out]) == 0
    printed = capsys.readouterr().out
    assert "race     tesauro_plus 8" in printed and f"from {paths[0]}" in printed and f"wrote {out}" in printed
    loaded = load_model(out)
    board = boards()
    for phase, expected in (("contact", "contact"), ("crashed", "crashed"), ("race", "contact")):
        torch.testing.assert_close(loaded.model.phases[phase].evaluate(board), parts[expected].evaluate(board),
                                   atol=0, rtol=0)
    assert loaded.payload["phase_counters"] == {"contact": {"games": 1}, "crashed": {"games": 2}, "race": {"games": 1}}
    assert loaded.payload["sources"] == {"contact": model, "crashed": model, "race": paths[0]}
    # Several checkpoints for a phase: an ensemble; a phase model's ensemble cannot join another.
    ensemble = str(tmp_path / "ensemble.pt")
    assert main(["combine", "--contact", *paths, "--crashed", model, "--race", model, "--out", ensemble]) == 0
    capsys.readouterr()
    assert load_model(ensemble).payload["model"]["phases"]["contact"]["kind"] == "ensemble"
    assert main(["combine", "--contact", ensemble, paths[0], "--crashed", model, "--race", model,
                 "--out", str(tmp_path / "nested.pt")]) == 2
    assert "cannot be a member of another" in capsys.readouterr().err
    assert main(["combine", "--contact", model, "--crashed", model, "--race", model, "--out", "x.onnx"]) == 2
    assert "named .pt" in capsys.readouterr().err
