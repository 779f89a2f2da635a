"""Rollouts as jobs of seeded trial chunks, on any executor, resumable from shards.

``ROLLOUT_CHUNK``: trials ``first_trial .. first_trial + trials - 1`` of every position. Context: the
model (``model_recipe``: a checkpoint's architecture and weights as numpy arrays, or an ONNX export's
bytes, its variant and the bear-off databases' bytes; no path), the rollout settings, the boards, their dice streams and
cubes. Task: ``seed``, ``first_trial``, ``trials``. Result: the chunk's per-trial arrays
(``outcomes``/``raw_outcomes float64[P, T, 5]``, ``plies int32[P, T]``, and with the cube
``cubeful``/``raw_cubeful float64[P, T]``), float64 so that nothing is rounded on the way back.

A trial's values depend only on (seed, dice stream, trial index) and the evaluator (whose evaluation is
batch-invariant, ``bgtrain.rollout.batching``), so the chunks merge (``RolloutResult.merge``) into
exactly the result of one in-process ``rollout`` of all the trials, wherever and in whatever order the
chunks ran. Chunks are multiples of 36 trials, so each covers whole strata of first rolls
(``bgtrain.rollout.dice``).

``rollout_plays_distributed`` rolls out the candidate plays of one roll (``bgtrain rollout --dice``) as
such a rollout of their afterstates, all on one dice stream (common dice). ``target_error`` stops at
the first chunk boundary where every standard error is small enough, the in-process rule
(``bgtrain rollout --target-se``).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from bgtrain.cube import CubeState
from bgtrain.distributed.duels import sharded_results
from bgtrain.distributed.executor import Executor, InProcessExecutor, WorkUnit
from bgtrain.distributed.payloads import (
    database_files,
    install_databases,
    model_file_recipe,
    model_from_recipe,
    pruning_from_recipe,
)
from bgtrain.distributed.shards import ShardStore
from bgtrain.rollout.chunks import target_reached
from bgtrain.rollout.play import RolloutSettings, rollout
from bgtrain.rollout.plays import PlaysRollout, candidate_rollout, plays_rollout
from bgtrain.rollout.result import RolloutResult
from engine.variants import get_rules

STRATUM = 36  # one first roll of each kind: a chunk of a multiple of this keeps the stratification
DEFAULT_DISTRIBUTED_CHUNK = 324
_ARRAYS = ("outcomes", "raw_outcomes", "plies", "cubeful", "raw_cubeful")


def model_recipe(model: str | Path) -> dict:
    """What a worker needs to rebuild the evaluator of the model file ``model``, all read here, once:
    the model (``bgtrain.distributed.payloads``: weights as numpy arrays, an ONNX export's bytes) and
    the bear-off databases' bytes."""
    return {**model_file_recipe(model), "databases": database_files()}


def evaluator_from_recipe(recipe: dict, device: str):
    from bgtrain.values.evaluator import Evaluator

    install_databases(recipe.get("databases"))
    return Evaluator.from_network(model_from_recipe(recipe, device), get_rules(recipe["variant"]),
                                  pruning=pruning_from_recipe(recipe, device))


def rollout_context(recipe: dict, boards: torch.Tensor, settings: RolloutSettings, streams: torch.Tensor,
                    cubes: list[CubeState]) -> dict:
    return {"recipe": recipe, "settings": settings.describe(), "boards": boards.cpu().numpy(),
            "streams": streams.cpu().numpy(), "cubes": [[cube.value, cube.owner] for cube in cubes]}


def _prepare_rollout(context: dict, device: str) -> dict:
    # torch.tensor copies: arrays from the object store are read-only.
    return {"evaluator": evaluator_from_recipe(context["recipe"], device),
            "settings": RolloutSettings(**context["settings"]),
            "boards": torch.tensor(context["boards"], device=device),
            "streams": torch.tensor(context["streams"], device=device),
            "cubes": [CubeState(value, owner) for value, owner in context["cubes"]]}


def roll_chunk(prepared: dict, task: dict) -> dict:
    result = rollout(prepared["evaluator"], prepared["boards"], prepared["settings"], seed=task["seed"],
                     first_trial=task["first_trial"], trials=task["trials"], streams=prepared["streams"],
                     cubes=prepared["cubes"])
    return {name: getattr(result, name).cpu().numpy() for name in _ARRAYS if getattr(result, name) is not None}


ROLLOUT_CHUNK = WorkUnit("rollout_chunk", _prepare_rollout, roll_chunk)


def default_trial_chunk(trials: int, workers: int) -> int:
    """A chunk of whole strata, at most ``DEFAULT_DISTRIBUTED_CHUNK`` trials, small enough that each of
    ``workers`` workers gets one (the chunks merge to the same result whatever their size)."""
    strata = math.ceil(trials / (STRATUM * max(1, workers)))
    return min(DEFAULT_DISTRIBUTED_CHUNK, STRATUM * max(1, strata))


def trial_chunks(trials: int, chunk: int) -> list[tuple[int, int]]:
    """``(first_trial, trials)`` of each chunk; every chunk but the last is ``chunk`` trials."""
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, not {trials!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1 or chunk % STRATUM:
        raise ValueError(f"a distributed rollout's chunk must be a positive multiple of {STRATUM} trials, not {chunk!r}")
    return [(first, min(chunk, trials - first)) for first in range(0, trials, chunk)]


def rollout_distributed(model: str | Path, boards: torch.Tensor, settings: RolloutSettings, *, seed: int = 0,
                        trials: int = 1296, chunk: int = DEFAULT_DISTRIBUTED_CHUNK,
                        cubes: CubeState | list[CubeState] | None = None, streams: torch.Tensor | None = None,
                        executor: Executor | None = None, work_dir=None, recipe: dict | None = None,
                        target_error: float | None = None) -> RolloutResult:
    """``rollout`` of trials ``[0, trials)`` of ``boards`` on the model file ``model``, as chunks of
    ``chunk`` trials run by ``executor`` (default: in process); with ``work_dir``, each chunk is a shard
    and a rerun resumes. The same numbers as one in-process ``rollout`` with the same seed.

    ``target_error``: stop after the first chunk (in trial order) at whose end every headline equity's
    standard error is at most this (``bgtrain.rollout.chunks.target_reached``), the rule
    ``rollout_in_chunks`` applies after each of its chunks: with the same chunk size, the same trials.
    The chunks already in flight then are dropped (on a cluster, up to a window of chunks run in vain)."""
    if target_error is not None and not target_error > 0:
        raise ValueError(f"the target standard error must be > 0, not {target_error!r}")
    executor = executor or InProcessExecutor()
    bounds = trial_chunks(trials, chunk)
    boards = boards.to(torch.int8).cpu()
    positions = boards.shape[0]
    streams = torch.arange(positions) if streams is None else torch.as_tensor(streams, dtype=torch.int64).cpu()
    cube_states = [cubes] * positions if isinstance(cubes, CubeState) else list(cubes or [CubeState()] * positions)
    if len(cube_states) != positions:
        raise ValueError(f"{len(cube_states)} cube states for {positions} positions")
    recipe = recipe or model_recipe(model)
    store = None
    if work_dir is not None:
        job = {"kind": "rollout", "model": str(model), "boards": boards.tolist(), "streams": streams.tolist(),
               "cubes": [[cube.value, cube.owner] for cube in cube_states], "settings": settings.describe(),
               "seed": seed, "trials": trials, "chunk": chunk}
        store = ShardStore(work_dir, job)
    shared = executor.share(rollout_context(recipe, boards, settings, streams, cube_states))
    tasks = [(index, {"seed": seed, "first_trial": first, "trials": count})
             for index, (first, count) in enumerate(bounds)]
    rules = get_rules(recipe["variant"])
    merged = None
    for index, result in sharded_results(executor, ROLLOUT_CHUNK, shared, tasks, store):
        arrays = {name: torch.tensor(result[name]) if name in result else None for name in _ARRAYS}
        part = RolloutResult(boards=boards, first_trial=bounds[index][0], settings=settings, seed=seed,
                             streams=streams, rules=rules, **arrays)
        merged = part if merged is None else RolloutResult.merge([merged, part])
        if target_reached(merged, target_error):
            executor.cancel()
            break
    return merged


def rollout_plays_distributed(evaluator, model: str | Path, board: torch.Tensor, dice: tuple[int, int],
                              settings: RolloutSettings, *, top: int = 5, cube: CubeState | None = None,
                              **options) -> PlaysRollout:
    """``bgtrain.rollout.plays.rollout_plays`` as a distributed rollout: the candidates (chosen here by
    ``evaluator``, the model's) are the positions of one ``rollout_distributed``, all on dice stream 0,
    so trial t of every candidate has the same dice, as in process. ``options``: ``seed``, ``trials``,
    ``chunk``, ``target_error``, ``executor``, ``work_dir``."""
    candidates, boards, streams, cubes = candidate_rollout(evaluator, board, dice, settings.ply, top, cube)
    result = rollout_distributed(model, boards, settings, streams=streams, cubes=[cubes] * len(candidates),
                                 **options)
    return plays_rollout(candidates, boards, result)
