"""Batched rollouts: many positions x many trials played in lock step on the engine.

``rollout(evaluator, boards, settings, seed=, first_trial=, trials=)`` (``play``) is the core: a plain
seeded function whose per-trial results depend only on (seed, dice stream, trial index), so trial
ranges computed apart merge exactly (``RolloutResult.merge``). ``rollout_in_chunks`` (``chunks``) adds
progress and early stopping at a target standard error; ``rollout_plays`` (``plays``) rolls out the
candidate plays of a roll with common dice.

Modules: ``dice`` (quasi-random, stratified dice), ``play`` (the lock-step trials), ``variance``
(luck of each roll), ``cubeful`` (the cube inside a trial), ``leaves`` (exact leaves: the bear-off
database, a hook for others), ``batching`` (batch-invariant evaluation), ``result`` (per-trial results
and statistics), ``chunks`` and ``plays``.
"""

from __future__ import annotations

from bgtrain.rollout.leaves import BearoffLeaf, ExactLeaf, exact_leaf
from bgtrain.rollout.play import RolloutSettings, rollout
from bgtrain.rollout.result import RolloutResult, mean_and_error

__all__ = [
    "BearoffLeaf",
    "ExactLeaf",
    "RolloutResult",
    "RolloutSettings",
    "exact_leaf",
    "mean_and_error",
    "rollout",
]
