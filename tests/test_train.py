"""TD(lambda) targets, exact resume, and the classic eligibility-trace form."""

from __future__ import annotations

import pytest
import torch
from helpers import random_boards

from bgtrain.commands.train import train
from bgtrain.outcomes import flip_outcomes, terminal_outcomes
from bgtrain.training.config import load_config
from bgtrain.training.td import Run, Turn, lambda_returns


def turn(next_value, ended=False, points=1, truncated=False) -> Turn:
    value = torch.tensor([next_value], dtype=torch.float32)
    return Turn(
        board=torch.zeros(1, 28, dtype=torch.int8),
        next_value=value,
        ended=torch.tensor([ended]),
        outcome=terminal_outcomes(torch.tensor([points])),
        truncated=torch.tensor([truncated]),
    )


V1 = [0.6, 0.2, 0.01, 0.1, 0.0]
V2 = [0.3, 0.05, 0.0, 0.2, 0.02]
V3 = [0.9, 0.4, 0.1, 0.01, 0.0]


def test_lambda_return_by_hand():
    lam = 0.5
    returns = lambda_returns([turn(V1), turn(V2), turn(V3)], lam)
    newest = flip_outcomes(torch.tensor([V3]))
    middle = flip_outcomes((1 - lam) * torch.tensor([V2]) + lam * newest)
    oldest = flip_outcomes((1 - lam) * torch.tensor([V1]) + lam * middle)
    for got, want in zip(returns, [oldest, middle, newest]):
        assert torch.allclose(got, want)


def test_game_end_gives_the_exact_outcome_and_cuts_the_return():
    returns = lambda_returns([turn(V1), turn(V2, ended=True, points=2), turn(V3)], 0.7)
    assert torch.equal(returns[1], terminal_outcomes(torch.tensor([2])))
    # The turn before the win: its side lost a gammon (the next mover won it).
    expected = flip_outcomes(0.3 * torch.tensor([V1]) + 0.7 * returns[1])
    assert torch.allclose(returns[0], expected)
    assert returns[0][0, 0] < 0.5  # mostly a loss for the side that moved before the winner


def test_truncated_game_bootstraps_and_is_not_a_loss():
    returns = lambda_returns([turn(V1), turn(V2, truncated=True), turn(V3)], 0.7)
    assert torch.allclose(returns[1], flip_outcomes(torch.tensor([V2])))
    assert not torch.equal(returns[1], terminal_outcomes(torch.tensor([-1])))


def recursive_lambda_returns(turns: list[Turn], td_lambda: float) -> list[torch.Tensor]:
    """The defining recursion, turn by turn from the newest: the oracle for ``lambda_returns``."""
    returns, later = [], None
    for turn in reversed(turns):
        ahead = turn.next_value if later is None else (1 - td_lambda) * turn.next_value + td_lambda * later
        ahead = torch.where(turn.truncated.unsqueeze(1), turn.next_value, ahead)
        mover_ahead = flip_outcomes(ahead)
        if turn.extra_roll is not None:
            mover_ahead = torch.where(turn.extra_roll.unsqueeze(1), ahead, mover_ahead)
        later = torch.where(turn.ended.unsqueeze(1), turn.outcome, mover_ahead)
        returns.append(later)
    return returns[::-1]


@pytest.mark.parametrize("extra_rolls", [False, True])
def test_lambda_returns_equal_the_recursion_on_random_buffers(extra_rolls):
    generator = torch.Generator().manual_seed(7)
    slots, length = 64, 17
    turns = []
    for _ in range(length):
        ended = torch.rand(slots, generator=generator) < 0.1
        points = torch.randint(1, 4, (slots,), generator=generator) * (1 - 2 * torch.randint(0, 2, (slots,), generator=generator))
        turns.append(
            Turn(
                board=torch.zeros(slots, 28, dtype=torch.int8),
                next_value=torch.rand(slots, 5, generator=generator),
                ended=ended,
                outcome=terminal_outcomes(points),
                truncated=~ended & (torch.rand(slots, generator=generator) < 0.05),
                extra_roll=(torch.rand(slots, generator=generator) < 0.2) if extra_rolls else None,
            )
        )
    expected = recursive_lambda_returns(turns, 0.7)
    got = lambda_returns(turns, 0.7)
    assert len(got) == length
    for want, have in zip(expected, got):
        torch.testing.assert_close(have, want)
    # The oldest few alone, as the training loop asks for them.
    for want, have in zip(expected[:3], lambda_returns(turns, 0.7, 3)):
        torch.testing.assert_close(have, want)


def tiny_config(tmp_path, name, *extra):
    return load_config(
        "configs/quick.toml",
        [
            f"run.out_dir={tmp_path}",
            f"run.name={name}",
            "model.hidden=[8]",
            "selfplay.games_in_parallel=16",
            "train.lr_schedule=constant",
            "train.total_games=96",
            "evaluation.every_games=0",
            "evaluation.games=8",
            "checkpoint.every_games=48",
            "checkpoint.every_seconds=0.0",
            "checkpoint.keep_last=0",
            *extra,
        ],
    )


def final_weights(path):
    return torch.load(path, weights_only=False)["weights"]


def test_resume_continues_exactly(tmp_path):
    straight = train(tiny_config(tmp_path, "straight"), progress=False)
    # The same run, stopped at its first checkpoint and resumed from it.
    train(tiny_config(tmp_path, "split", "train.total_games=48"), progress=False)
    resumed = train(tiny_config(tmp_path, "split"), resume=tmp_path / "split" / "latest.pt", progress=False)
    first, second = final_weights(straight), final_weights(resumed)
    assert first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key
    counters = torch.load(resumed, weights_only=False)["counters"]
    assert counters["games"] >= 96


def test_a_run_starts_from_a_checkpoints_weights_and_plays_it_first(tmp_path):
    """``[train] init_from``: the network starts as the checkpoint's, the first evaluation plays the starting
    model as "previous", a resume does not need the starting file, and a network of another shape is refused."""
    source = train(tiny_config(tmp_path, "source", "train.total_games=48"), progress=False)
    run = Run(tiny_config(tmp_path, "start", f"train.init_from={source}"))
    for key, value in final_weights(source).items():
        assert torch.equal(run.network.state_dict()[key], value), key
    assert run.previous_network is not None
    assert torch.equal(run.previous_network.state_dict()["output_layer.bias"], final_weights(source)["output_layer.bias"])

    moved = tmp_path / "moved.pt"
    source.rename(moved)
    config = tiny_config(tmp_path, "continued", f"train.init_from={moved}", "train.total_games=48",
                         "evaluation.every_games=48")
    final = train(config, progress=False)
    assert "previous" in torch.load(final, weights_only=False)["strength"]
    moved.rename(tmp_path / "gone.pt")  # the resume loads the run's own checkpoint, not init_from
    train(tiny_config(tmp_path, "continued", f"train.init_from={moved}", "train.total_games=96",
                      "evaluation.every_games=48"),
          resume=tmp_path / "continued" / "latest.pt", progress=False)

    with pytest.raises(ValueError, match=r"\[train\] init_from = .* set \[model\] to match"):
        Run(tiny_config(tmp_path, "wrong", f"train.init_from={tmp_path / 'gone.pt'}", "model.hidden=[9]"))


def test_eligibility_traces_learn_and_change_the_weights(tmp_path):
    config = tiny_config(tmp_path, "traces", "train.method=eligibility_traces", "train.optimizer=sgd",
                         "train.learning_rate=0.1", "train.total_games=16")
    run = Run(config)
    before = {k: v.clone() for k, v in run.network.state_dict().items()}
    for _ in range(20):
        metrics = run.step()
    assert metrics["td_error"] > 0
    assert any(not torch.equal(before[k], v) for k, v in run.network.state_dict().items())
    assert all(torch.isfinite(v).all() for v in run.network.state_dict().values())


# --- learning-rate schedules, pruning, exploration -----------------------------------------------------


def schedule(tmp_path, *fields):
    return tiny_config(tmp_path, "schedule", "train.learning_rate=0.01", "train.total_games=1000", *fields)


def test_learning_rate_schedules(tmp_path):
    from bgtrain.training.schedule import td_learning_rate as learning_rate_at

    constant = schedule(tmp_path)
    assert [learning_rate_at(constant, games) for games in (0, 500, 1000, 5000)] == [0.01] * 4
    linear = schedule(tmp_path, "train.lr_schedule=linear", "train.lr_final_fraction=0.1")
    assert learning_rate_at(linear, 0) == pytest.approx(0.01)
    assert learning_rate_at(linear, 500) == pytest.approx(0.01 * 0.55)
    assert learning_rate_at(linear, 1000) == pytest.approx(0.001)
    assert learning_rate_at(linear, 4000) == pytest.approx(0.001)  # the end of the schedule holds
    cosine = schedule(tmp_path, "train.lr_schedule=cosine", "train.lr_final_fraction=0.2")
    assert learning_rate_at(cosine, 0) == pytest.approx(0.01)
    assert learning_rate_at(cosine, 500) == pytest.approx(0.01 * (0.2 + 0.8 * 0.5))
    assert learning_rate_at(cosine, 1000) == pytest.approx(0.002)
    inverse = schedule(tmp_path, "train.lr_schedule=inverse_sqrt", "train.lr_decay_games=300")
    assert learning_rate_at(inverse, 900) == pytest.approx(0.01 / 2)
    warm = schedule(tmp_path, "train.lr_schedule=linear", "train.lr_warmup_games=100")
    assert learning_rate_at(warm, 0) == 0.0
    assert learning_rate_at(warm, 50) == pytest.approx(0.005)
    assert learning_rate_at(warm, 100) == pytest.approx(learning_rate_at(linear, 100) / 0.91 * (1 - 0.9 * 0.1))


def test_pruning_keeps_the_newest_checkpoints(tmp_path):
    """``keep_last`` newest checkpoints up to the current count survive; later ones (another run's, in a
    reused directory) and other files are never touched; 0 keeps everything."""
    from bgtrain.training.run_directory import RunDirectory, checkpoint_name

    directory = RunDirectory(tmp_path)
    directory.checkpoints.mkdir(parents=True, exist_ok=True)
    names = [checkpoint_name(games) for games in (64, 128, 1024, 96, 100_000)]
    for name in names + ["notes.txt"]:
        (directory.checkpoints / name).write_bytes(b"x")
    directory.prune(2000, 0)  # 0 keeps them all
    assert len(list(directory.checkpoints.glob("games_*.pt"))) == 5
    directory.prune(2000, 2)
    assert sorted(path.name for path in directory.checkpoints.iterdir()) == sorted(
        [checkpoint_name(128), checkpoint_name(1024), checkpoint_name(100_000), "notes.txt"])


def test_exploration_plays_the_seeded_random_choice(tmp_path):
    """epsilon 0 plays the greedy agent's choice; otherwise each game explores with probability epsilon,
    its play then drawn by ``random_choice`` from the same generator."""
    from bgtrain.arena.agents import GreedyValueAgent
    from bgtrain.model.network import ValueNetwork
    from bgtrain.training.td import selfplay_turn
    from engine.dice import RandomDice
    from engine.game import new_games, play
    from engine.movegen import legal_afterstates
    from engine.random_play import random_choice
    from engine.rules import STANDARD

    torch.manual_seed(2)
    network = ValueNetwork("tesauro198", [16])
    dice = RandomDice(4)
    state = new_games(STANDARD, 256, dice)
    generator = torch.Generator().manual_seed(5)
    for _ in range(6):
        afterstates = legal_afterstates(state.board, state.dice)
        state = play(state, afterstates.select(random_choice(afterstates, generator)), STANDARD, dice)
    state = state.select(~state.game_over)
    afterstates = legal_afterstates(state.board, state.dice)
    greedy = afterstates.select(GreedyValueAgent.from_network(network, "net").choose(state, afterstates))
    for epsilon in (0.0, 0.3, 1.0):
        explore = torch.Generator().manual_seed(9)
        _, chosen = selfplay_turn(network, state, STANDARD, epsilon, explore)
        if epsilon == 0.0:
            assert torch.equal(chosen, greedy)
            continue
        again = torch.Generator().manual_seed(9)
        explores = torch.rand(state.batch_size, generator=again) < epsilon
        random = afterstates.select(random_choice(afterstates, again))
        assert torch.equal(chosen, torch.where(explores.unsqueeze(1), random, greedy))
        assert 0 < int(explores.sum()) <= state.batch_size
        assert bool((chosen != greedy).any(1).any())


# --- the eligibility-trace step by hand ------------------------------------------------------------


def test_one_eligibility_trace_step_by_hand(tmp_path):
    """Two online TD(lambda) steps for two game slots, against the rule written out with autograd:
    e = grad V_k(x_t) + lambda * (previous trace seen from this side), w += lr * mean over slots of
    sum_k delta_k e_k, with delta = flip(V(x_{t+1})) - V(x_t)."""
    from bgtrain.model.network import ValueNetwork
    from bgtrain.training.td import _FLIP_ORDER, _FLIP_SIGN, EligibilityTraces

    torch.manual_seed(7)
    network = ValueNetwork("tesauro198", [4])
    boards = torch.cat((random_boards(2, seed=1), random_boards(2, seed=2)))
    next_values = torch.rand(4, 5)
    lam, lr = 0.6, 0.05

    def record(rows: slice) -> Turn:
        return Turn(board=boards[rows], next_value=next_values[rows], ended=torch.zeros(2, dtype=torch.bool),
                    outcome=terminal_outcomes(torch.ones(2, dtype=torch.long)), truncated=torch.zeros(2, dtype=torch.bool))

    def gradients(weights: ValueNetwork, board: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        """grad V_k(board) for each output k, as {name: tensor}."""
        output = weights(board.unsqueeze(0)).squeeze(0)
        parameters = dict(weights.named_parameters())
        return [dict(zip(parameters, torch.autograd.grad(output[k], list(parameters.values()), retain_graph=True)))
                for k in range(5)]

    expected = ValueNetwork.from_args(network.model_args())
    expected.load_state_dict(network.state_dict())
    traces = [[None] * 5 for _ in range(2)]  # per slot, per output: {name: trace}
    for rows in (slice(0, 2), slice(2, 4)):
        step = {name: torch.zeros_like(p) for name, p in expected.named_parameters()}
        for slot in range(2):
            board, next_value = boards[rows][slot], next_values[rows][slot]
            with torch.no_grad():
                delta = flip_outcomes(next_value) - expected(board.unsqueeze(0)).squeeze(0)
            grads = gradients(expected, board)
            previous = list(traces[slot])
            for k in range(5):
                turned = previous[_FLIP_ORDER[k]]
                traces[slot][k] = {name: grads[k][name] + (lam * _FLIP_SIGN[k] * turned[name] if turned else 0.0)
                                   for name in grads[k]}
            for k in range(5):
                for name in step:
                    step[name] += float(delta[k]) * traces[slot][k][name] / 2
        with torch.no_grad():
            for name, parameter in expected.named_parameters():
                parameter.add_(lr * step[name])

    online = EligibilityTraces(network, 2, torch.device("cpu"))
    online.step(record(slice(0, 2)), lam, lr)
    online.step(record(slice(2, 4)), lam, lr)
    for (name, got), want in zip(network.named_parameters(), expected.parameters()):
        assert torch.allclose(got, want, atol=1e-6), name


# --- what training logs, and that the network can learn --------------------------------------------


def test_tensorboard_scalars_are_in_the_promised_namespaces(tmp_path):
    """README: charts/ (throughput, learning rate), losses/ (TD error), eval/ (points per game against
    pubeval and against the previous evaluation, with 95% intervals)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = tiny_config(tmp_path, "logged", "evaluation.every_games=48", "evaluation.games=8")
    train(config, progress=False)
    events = EventAccumulator(str(tmp_path / "logged" / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {tag.split("/")[0] for tag in tags} <= {"charts", "losses", "eval"}
    assert "charts/learning_rate" in tags and any(tag.startswith("losses/") for tag in tags)
    assert {"eval/pubeval_points_per_game", "eval/pubeval_interval95", "eval/previous_points_per_game",
            "eval/previous_interval95"} <= tags
    assert "hyperparameters" in str(events.Tags()["tensors"])


def test_the_network_can_fit_a_dozen_positions():
    """The value network and its loss can drive the error on a few positions to nearly nothing: the
    plumbing from board to gradient works (no frozen layer, no detached output)."""
    from bgtrain.model.network import ValueNetwork

    torch.manual_seed(0)
    network = ValueNetwork("tesauro198", [32])
    board = random_boards(12, seed=8)
    target = torch.rand(12, 5)
    optimizer = torch.optim.Adam(network.parameters(), lr=0.01)
    for _ in range(400):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(network(board), target)
        loss.backward()
        optimizer.step()
    assert loss.item() < 1e-3
    assert torch.allclose(network.evaluate(board), network(board).detach(), atol=1e-5)
