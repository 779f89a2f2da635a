"""Agents named on the command line (``bgtrain.arena.specs.make_agent``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from bgtrain.arena.agents import GreedyValueAgent, PubevalAgent, RandomAgent
from bgtrain.arena.specs import SPEC_FORMS, make_agent
from bgtrain.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.config import Config
from bgtrain.network import ValueNetwork
from engine.movegen import Afterstates, legal_afterstates
from engine.random_play import sample_positions
from engine.rules import STANDARD
from engine.state import State


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    torch.manual_seed(3)
    network = ValueNetwork("tesauro198", [8], "sigmoid")
    return save_checkpoint(tmp_path_factory.mktemp("specs") / "tiny.pt", checkpoint_payload(network, Config()))


def test_builtin_agents():
    assert isinstance(make_agent("random", STANDARD, "cpu", seed=1), RandomAgent)
    assert isinstance(make_agent("pubeval"), PubevalAgent)
    assert make_agent(" PubEval ").name == "pubeval"


def test_checkpoint_at_zero_ply_is_greedy(checkpoint):
    for spec in (str(checkpoint), f"{checkpoint}:0ply"):
        agent = make_agent(spec)
        assert isinstance(agent, GreedyValueAgent)
        assert agent.name == spec


def positions(count: int, seed: int) -> tuple[State, Afterstates]:
    boards, dice = sample_positions(count, seed, STANDARD, "cpu")
    state = State(boards, dice, torch.zeros(count, dtype=torch.int8), torch.zeros(count, dtype=torch.int32),
                  torch.zeros(count, dtype=torch.bool), torch.zeros(count, dtype=torch.int8))
    return state, legal_afterstates(boards, dice, STANDARD)


def test_checkpoint_at_one_ply_searches(checkpoint):
    agent = make_agent(f"{checkpoint}:1ply", bearoff=False)
    assert agent.name == f"{checkpoint}:1ply"
    assert agent.ply == 1
    state, afterstates = positions(3, seed=2)
    choice = agent.choose(state, afterstates)
    assert bool(((choice >= 0) & (choice < afterstates.counts)).all())


def test_onnx_export_is_an_agent(checkpoint, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from bgtrain.export import export_checkpoint

    path = tmp_path / "tiny.onnx"
    export_checkpoint(checkpoint, path, "onnx")
    onnx_agent = make_agent(str(path))
    torch_agent = make_agent(str(checkpoint))
    assert onnx_agent.name == str(path)
    # The same network chooses the same plays (up to float ties, which random weights do not make).
    state, afterstates = positions(300, seed=5)
    assert torch.equal(onnx_agent.choose(state, afterstates), torch_agent.choose(state, afterstates))


@pytest.mark.parametrize("spec", ["pubevl", "model.pth", "checkpoints/x.pt:2", "gnubg:fast", ""])
def test_unknown_spec_names_it_and_lists_the_forms(spec):
    with pytest.raises(ValueError) as error:
        make_agent(spec)
    message = str(error.value)
    assert f"unknown agent {spec!r}" in message
    for form in SPEC_FORMS:
        assert form in message


def test_gnubg_ply_out_of_range():
    with pytest.raises(ValueError, match="not 3ply"):
        make_agent("gnubg:3ply")


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        make_agent(str(tmp_path / "missing.pt"))


def test_gnubg_without_the_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gnubg_nn", None)  # makes `import gnubg_nn` fail
    monkeypatch.setitem(sys.modules, "gnubg", None)  # and the other bindings too
    with pytest.raises(ValueError, match=r"gnubg opponents need `pip install gnubg-nn`"):
        make_agent("gnubg:0ply")
