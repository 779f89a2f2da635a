"""Rollouts in chunks of trials: a progress bar with the running equity, and early stopping.

``rollout_in_chunks`` calls the core ``rollout`` on consecutive trial ranges (``chunk`` trials each,
every position at once) and merges them exactly. After each chunk it updates the bar (tqdm, the outer
loop only) and stops once every position's headline equity (cubeful with the cube, else cubeless) has a
standard error at or below ``target_error``. A chunk that is a multiple of 36 trials ends on a
complete stratum of first rolls (``bgtrain.rollout.dice``), so an early stop keeps the stratification
of every completed chunk.
"""

from __future__ import annotations

import torch
from tqdm import tqdm

from bgtrain.rollout.play import DEFAULT_SETTINGS, RolloutSettings, rollout
from bgtrain.rollout.result import RolloutResult
from bgtrain.values.evaluator import Evaluator

DEFAULT_CHUNK = 1296  # one complete stratification of the first two rolls per chunk


def rollout_in_chunks(
    evaluator: Evaluator,
    boards: torch.Tensor,
    settings: RolloutSettings = DEFAULT_SETTINGS,
    *,
    seed: int = 0,
    trials: int = 1296,
    chunk: int = DEFAULT_CHUNK,
    target_error: float | None = None,
    progress: bool = False,
    description: str = "rollout",
    sign: float = 1.0,
    **options,
) -> RolloutResult:
    """``rollout`` of trials ``[0, trials)`` in chunks of ``chunk``, stopping early at ``target_error``.

    ``sign``: -1 shows the equity on the bar from the other side's view (candidate plays are rolled out
    from the opponent's side). ``options`` go to ``rollout`` (``streams``, ``cubes``, ``leaf``).
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, not {trials!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive number of trials, not {chunk!r}")
    if target_error is not None and not target_error > 0:
        raise ValueError(f"the target standard error must be > 0, not {target_error!r}")
    merged: RolloutResult | None = None
    with tqdm(total=trials, desc=description, unit="trial", disable=not progress, leave=False) as bar:
        while merged is None or merged.trials < trials:
            done = 0 if merged is None else merged.trials
            part = rollout(evaluator, boards, settings, seed=seed, first_trial=done,
                           trials=min(chunk, trials - done), **options)
            merged = part if merged is None else RolloutResult.merge([merged, part])
            equity, error = merged.headline()
            bar.update(part.trials)
            bar.set_postfix_str(f"equity {sign * float(equity[0]):+.4f} ± {float(error[0]):.4f}")
            if target_reached(merged, target_error):
                break
    return merged


def target_reached(result: RolloutResult, target_error: float | None) -> bool:
    """The stopping rule, checked after each chunk: every position's headline equity has a standard
    error at or below ``target_error`` (never with a single trial, whose error is unknown)."""
    if target_error is None or result.trials < 2:
        return False
    return float(result.headline()[1].max()) <= target_error
