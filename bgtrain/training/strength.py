"""The strength check of a model in training, shared by both methods: seat-swapped matches against the
configured opponent (pubeval or random) and, for TD, against the previous evaluation's weights; their
points per game with 95% intervals go to TensorBoard (``eval/``) and the progress bar."""

from __future__ import annotations

import copy
from typing import Any

from bgtrain.arena.agents import GreedyValueAgent, PubevalAgent, RandomAgent
from bgtrain.arena.duel import DuelResult, play_duel
from engine.rules import Rules


def evaluate_strength(network, config, rules: Rules, opponent_network=None) -> dict[str, Any]:
    """The benchmark matches of the periodic strength check (``bgtrain.arena.duel``): a result per
    opponent (``DuelResult.as_dict``), by the opponent's name or ``previous``."""
    evaluation = config.evaluation
    device = next(network.parameters()).device
    frozen = copy.deepcopy(network).eval()
    agent = GreedyValueAgent.from_network(frozen, "model", rules)
    opponent = PubevalAgent(rules) if evaluation.opponent == "pubeval" else RandomAgent(evaluation.seed, device)
    results: dict[str, DuelResult] = {
        evaluation.opponent: play_duel(agent, opponent, evaluation.games, evaluation.seed, rules, device)
    }
    if opponent_network is not None:
        previous = GreedyValueAgent.from_network(opponent_network, "previous", rules)
        results["previous"] = play_duel(agent, previous, evaluation.games, evaluation.seed + 1, rules, device)
    return {name: result.as_dict() for name, result in results.items()}


def log_strength(writer, strength: dict[str, Any], step: int) -> None:
    """Each match's points per game, 95% interval and win rate under ``eval/``; the training seconds
    when the strength records them."""
    for name, result in strength.items():
        if isinstance(result, dict):
            writer.add_scalar(f"eval/{name}_points_per_game", result["points_per_game"], step)
            writer.add_scalar(f"eval/{name}_interval95", result["interval95"], step)
            writer.add_scalar(f"eval/{name}_win_rate", result["a_win"], step)
    if "train_seconds" in strength:
        writer.add_scalar("eval/train_seconds", strength["train_seconds"], step)


def strength_text(strength: dict[str, Any]) -> str:
    """``"; vs pubeval +0.123±0.045"`` for a progress bar, or "" before the first check."""
    for name in ("pubeval", "random"):
        if name in strength:
            result = strength[name]
            return f"; vs {name} {result['points_per_game']:+.3f}±{result['interval95']:.3f}"
    return ""
