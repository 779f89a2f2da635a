"""Agents named on the command line (``bgtrain.arena.specs.make_agent``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from helpers import tiny_checkpoint

from bgtrain.arena.agents import GreedyValueAgent, PubevalAgent, RandomAgent
from bgtrain.arena.specs import SPEC_FORMS, make_agent
from engine.movegen import Afterstates, legal_afterstates
from engine.random_play import sample_positions
from engine.rules import STANDARD
from engine.state import State


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_checkpoint(tmp_path_factory.mktemp("specs") / "tiny.pt", seed=3)


def test_builtin_agents():
    assert isinstance(make_agent("random", STANDARD, "cpu", seed=1), RandomAgent)
    assert isinstance(make_agent("pubeval"), PubevalAgent)
    assert make_agent(" PubEval ").name == "pubeval"


def test_checkpoint_at_zero_ply_is_greedy(checkpoint):
    for spec in (str(checkpoint), f"{checkpoint}:0ply"):
        agent = make_agent(spec)
        assert isinstance(agent, GreedyValueAgent)
        assert agent.name == spec
        # With the bear-off databases and clamps, as GNU Backgammon's 0-ply plays; bare on request.
        assert agent.static.bearoff is not None and agent.static.two_sided is not None and agent.static.clamps
        bare = make_agent(spec, bearoff=False).static
        assert bare.bearoff is None and bare.two_sided is None and not bare.clamps


def test_zero_ply_plays_bearoffs_from_the_database(checkpoint):
    from bgtrain.values.evaluator import Evaluator

    # Random bear-offs: each side's 15 checkers spread over its home points or already off.
    generator = torch.Generator().manual_seed(11)
    count = 200
    boards = torch.zeros(count, 28, dtype=torch.int8)
    for side, points in ((1, range(1, 7)), (-1, range(19, 25))):
        homes = torch.randint(0, len(points) + 1, (count, 15), generator=generator)  # the last bin: off
        for slot, point in enumerate(points):
            boards[:, point] = side * (homes == slot).sum(1).to(torch.int8)
    keep = (boards[:, 1:7] > 0).any(1) & (boards[:, 19:25] < 0).any(1)
    boards = boards[keep]
    dice = torch.randint(1, 7, (boards.shape[0], 2), generator=generator)
    state = State(boards, dice, torch.zeros(boards.shape[0], dtype=torch.int8),
                  torch.zeros(boards.shape[0], dtype=torch.int32), torch.zeros(boards.shape[0], dtype=torch.bool),
                  torch.zeros(boards.shape[0], dtype=torch.int8))
    afterstates = legal_afterstates(boards, dice, STANDARD)
    agent = make_agent(str(checkpoint))
    # The evaluator's 0-ply move choice, which answers bear-offs from its databases ...
    evaluator = Evaluator.from_path(checkpoint)
    assert torch.equal(agent.choose(state, afterstates), evaluator.choose(afterstates, 0))
    # ... is not what the tiny random network alone would play.
    bare = make_agent(str(checkpoint), bearoff=False)
    assert not torch.equal(bare.choose(state, afterstates), agent.choose(state, afterstates))


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
