"""CUDA against the CPU, for the day a GPU is lent (``python scripts/check_gpu.py`` runs these and the
CUDA benchmarks): training steps, evaluation at 0 and 1 ply, 2-ply search, and a whole tiny run.
Marked ``gpu`` and skipped without CUDA. Where the arithmetic allows, results are equal to the CPU's
(move generation, choices); float sums in another order agree to 1e-5."""

from __future__ import annotations

import pytest
import torch

from bgtrain.commands.train import train
from bgtrain.model.network import ValueNetwork
from bgtrain.training.config import load_config
from bgtrain.training.td import Run
from bgtrain.values.evaluator import Evaluator
from engine.movegen import legal_afterstates
from engine.random_play import sample_positions

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

TINY = ["model.hidden=[16]", "selfplay.games_in_parallel=32", "train.total_games=64", "train.minibatch_size=0",
        "evaluation.every_games=0", "evaluation.games=8", "evaluation.opponent=random",
        "checkpoint.every_games=0", "checkpoint.every_seconds=0.0"]


def network() -> ValueNetwork:
    torch.manual_seed(3)
    return ValueNetwork("tesauro198", (32,)).eval()


def test_move_generation_on_cuda_equals_the_cpu():
    boards, dice = sample_positions(3000, seed=21)
    cpu = legal_afterstates(boards, dice)
    cuda = legal_afterstates(boards.cuda(), dice.cuda())
    assert torch.equal(cpu.counts, cuda.counts.cpu())
    for index in range(0, boards.shape[0], 97):
        mine = cpu.boards[cpu.offsets[index] : cpu.offsets[index] + cpu.counts[index]]
        theirs = cuda.boards[cuda.offsets[index] : cuda.offsets[index] + cuda.counts[index]].cpu()
        assert {tuple(row) for row in mine.tolist()} == {tuple(row) for row in theirs.tolist()}


def test_evaluation_and_search_on_cuda_equal_the_cpu():
    model = network()
    cpu = Evaluator.from_network(model, bearoff=False)
    cuda = Evaluator.from_network(network().cuda(), bearoff=False)
    boards, dice = sample_positions(400, seed=5)
    for ply, count in ((0, 400), (1, 40)):
        assert torch.allclose(cpu.probabilities(boards[:count], ply),
                              cuda.probabilities(boards[:count].cuda(), ply).cpu(), atol=1e-5)
    few, rolls = boards[:6], dice[:6]
    plays_cpu = cpu.hint(few, rolls, 2, limit=3)
    plays_cuda = cuda.hint(few.cuda(), rolls.cuda(), 2, limit=3)
    for mine, theirs in zip(plays_cpu, plays_cuda):
        assert mine[0].equity == pytest.approx(theirs[0].equity, abs=1e-4)
        assert [move.ply for move in mine] == [move.ply for move in theirs]


def test_a_training_update_on_cuda_equals_the_cpu(tmp_path):
    config = load_config("configs/quick.toml", [f"run.out_dir={tmp_path}", *TINY])
    cpu = Run(config)
    while not cpu.buffer or len(cpu.buffer) < config.train.buffer_turns + config.train.update_every_turns - 1:
        cpu.step()
    cuda = Run(load_config("configs/quick.toml", [f"run.out_dir={tmp_path}", *TINY, "run.device=cuda"]))
    cuda.network.load_state_dict(cpu.network.state_dict())
    cuda.optimizer.load_state_dict(cpu.optimizer.state_dict())
    cuda.buffer = [type(turn)(**{k: (v.cuda() if isinstance(v, torch.Tensor) else v) for k, v in vars(turn).items()})
                   for turn in cpu.buffer]
    metrics_cpu, metrics_cuda = cpu.update(1e-3), cuda.update(1e-3)  # one full-batch step on the same targets
    assert metrics_cpu["loss"] == pytest.approx(metrics_cuda["loss"], rel=1e-4)
    for name, value in cpu.network.state_dict().items():
        assert torch.allclose(value, cuda.network.state_dict()[name].cpu(), atol=1e-5), name


def test_a_tiny_run_on_cuda_trains_and_loads_on_the_cpu(tmp_path):
    from bgtrain.model.loading import load_model

    final = train(load_config("configs/quick.toml", [f"run.out_dir={tmp_path}", "run.name=cuda", *TINY,
                                                     "run.device=cuda"]), progress=False)
    loaded = load_model(final)
    loaded, payload = loaded.model, loaded.payload
    assert payload["counters"]["games"] >= 64
    assert all(torch.isfinite(value).all() for value in loaded.state_dict().values())
