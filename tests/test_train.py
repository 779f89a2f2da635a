"""TD(lambda) targets, exact resume, and the classic eligibility-trace form."""

from __future__ import annotations

import pytest
import torch

from bgtrain.config import load_config
from bgtrain.outcomes import flip_outcomes, terminal_outcomes
from bgtrain.train import Run, Turn, lambda_returns, train


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
