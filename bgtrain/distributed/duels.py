"""Benchmark duels and leagues as jobs of seeded chunks, on any executor, resumable from shards.

A duel of ``games`` games is ``ceil(games / 2)`` seat-swapped pairs cut into chunks of
``chunk_pairs`` pairs (by default ``default_chunk_pairs``: at most 2,048, and at least one chunk per
worker) (``bgtrain.distributed.work.DUEL_CHUNK``). Pair i is played on the dice of
``(seed, i)`` whichever chunk it falls in and wherever that chunk runs, so the result is the same in
process and on a cluster, and for deterministic agents it does not depend on the chunk size either.
A league is every pairing's chunks in one job (all pairings on the same dice, as
``bgtrain.arena.league`` does), so a cluster works on several pairings at once.

With a work directory, each chunk's points are written as a shard when they arrive
(``bgtrain.distributed.shards``); the same command run again reads the shards it finds and plays only
the missing chunks.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from bgtrain.arena.duel import DuelResult, summarise
from bgtrain.arena.league import LeagueResult, fit_ratings
from bgtrain.distributed.executor import Executor, InProcessExecutor, Shared, WorkUnit, run_tasks
from bgtrain.distributed.shards import JOB_FILE, ShardStore, read_job
from bgtrain.distributed.work import DUEL_CHUNK, agent_recipe, duel_context, play_chunk
from engine.variants import get_rules


def run_sharded(executor: Executor, unit: WorkUnit, shared: Shared, tasks: Iterable[tuple[int, dict]],
                store: ShardStore | None = None, on_result: Callable[[int, dict], None] | None = None) -> dict[int, dict]:
    """Every task's result by its index: read from ``store`` where its shard exists, else run (at most
    ``executor.window`` at a time) and written to ``store`` as it arrives. ``on_result(index, result)``
    is called for each, in index order of the tasks."""
    results: dict[int, dict] = {}
    for index, result in sharded_results(executor, unit, shared, tasks, store):
        results[index] = result
        if on_result is not None:
            on_result(index, result)
    return results


def sharded_results(executor: Executor, unit: WorkUnit, shared: Shared, tasks: Iterable[tuple[int, dict]],
                    store: ShardStore | None = None) -> Iterator[tuple[int, dict]]:
    """``(index, result)`` of every task, in the tasks' order, as ``run_sharded`` makes them. A caller
    that stops early (a rollout that reached its target) calls ``executor.cancel()``: the tasks still
    in flight are dropped, and none of their results is written."""
    tasks = list(tasks)
    done = store.done() if store is not None else set()
    fresh = run_tasks(executor, unit, shared, [(index, task) for index, task in tasks if index not in done])
    for index, _ in tasks:
        if index in done:
            yield index, store.read(index)
            continue
        key, result = next(fresh)
        assert key == index, "results come back in submission order"
        if store is not None:
            store.write(index, result)
        yield index, result


DEFAULT_CHUNK_PAIRS = 2048  # pairs in lock step per chunk at most: a batch that keeps a CPU core busy


def default_chunk_pairs(games: int, workers: int, pairings: int = 1) -> int:
    """Pairs per chunk when none is given: at most ``DEFAULT_CHUNK_PAIRS``, and small enough that every
    one of ``workers`` workers gets a chunk (in process, one worker: a duel of up to 4,096 games is
    one batch, as fast as it gets there)."""
    pairs = math.ceil(games / 2)
    chunks_per_pairing = math.ceil(max(1, workers) / max(1, pairings))
    return max(1, min(DEFAULT_CHUNK_PAIRS, math.ceil(pairs / chunks_per_pairing)))


def _stored_chunk_pairs(work_dir) -> int | None:
    """The chunk size of the job a work directory holds (a resumed job keeps its chunks, whatever the
    cluster's size now)."""
    import json

    from bgtrain.distributed.shards import JOB_FILE

    path = Path(work_dir) / JOB_FILE if work_dir is not None else None
    if path is None or not path.is_file():
        return None
    try:
        return int(json.loads(path.read_text())["chunk_pairs"])
    except (ValueError, KeyError, TypeError):
        return None  # ShardStore reports the unreadable file


def chunk_bounds(games: int, chunk_pairs: int) -> list[tuple[int, int]]:
    """``(first_pair, pairs)`` of each chunk of a duel of ``games`` games (rounded up to even)."""
    if games < 1 or chunk_pairs < 1:
        raise ValueError(f"a duel needs at least one game and one pair per chunk, not {games} and {chunk_pairs}")
    pairs = math.ceil(games / 2)
    return [(first, min(chunk_pairs, pairs - first)) for first in range(0, pairs, chunk_pairs)]


def _combine(name_a: str, name_b: str, results: list[dict]) -> DuelResult:
    # torch.tensor copies: results from Ray are read-only arrays.
    first = torch.cat([torch.tensor(result["first"], dtype=torch.int64) for result in results])
    second = torch.cat([torch.tensor(result["second"], dtype=torch.int64) for result in results])
    return summarise(name_a, name_b, first, second)


def play_league_chunked(specs: list[str], games: int, seed: int = 0, variant: str = "backgammon",
                        executor: Executor | None = None, chunk_pairs: int | None = None, work_dir=None,
                        agent_seeds: list[int] | None = None, progress=None) -> LeagueResult:
    """A round robin of the agents ``specs`` (``bgtrain.arena.specs``), every pairing ``games`` games on
    the dice of ``seed``; agent k's own randomness is seeded by ``agent_seeds[k]`` (default seed + k)."""
    names = [spec.strip() for spec in specs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"agent {duplicates[0]!r} is named twice: a league needs different agents")
    if len(names) < 2:
        raise ValueError("a league needs at least two agents")
    pairings = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    matches = _play_pairings(names, pairings, games, seed, variant, executor, chunk_pairs, work_dir,
                             agent_seeds, progress, kind="league")
    ratings, intervals = fit_ratings(names, matches)
    return LeagueResult(tuple(names), tuple(matches), tuple(ratings), tuple(intervals), matches[0].games, seed)


def play_duel_chunked(spec_a: str, spec_b: str, games: int, seed: int = 0, variant: str = "backgammon",
                      executor: Executor | None = None, chunk_pairs: int | None = None, work_dir=None,
                      history: list | None = None) -> DuelResult:
    """Agent ``spec_a`` against ``spec_b`` over ``games`` seat-swapped cubeless money games (A's own
    randomness seeded by ``seed``, B's by ``seed + 1``, as ``bgtrain bench`` does). ``history`` (a list,
    in process only): every game's ``GameRecord`` is appended to it."""
    names = [spec_a.strip(), spec_b.strip()]
    if history is not None:
        return _duel_with_history(names, games, seed, variant, executor, chunk_pairs, work_dir, history)
    return _play_pairings(names, [(0, 1)], games, seed, variant, executor, chunk_pairs, work_dir,
                          [seed, seed + 1], None, kind="duel")[0]


def _context(names: list[str], variant: str, in_process: bool = False) -> dict:
    rules = get_rules(variant)
    return duel_context([agent_recipe(name, rules, in_process) for name in names], rules.name)


def _tasks(pairings, bounds, seed: int, agent_seeds: list[int]) -> list[tuple[int, dict]]:
    tasks = []
    for match, (a, b) in enumerate(pairings):
        for chunk, (first_pair, pairs) in enumerate(bounds):
            tasks.append((match * len(bounds) + chunk, {
                "a": a, "b": b, "seed": seed, "first_pair": first_pair, "pairs": pairs,
                "seed_a": agent_seeds[a], "seed_b": agent_seeds[b],
            }))
    return tasks


def _play_pairings(names, pairings, games, seed, variant, executor, chunk_pairs, work_dir, agent_seeds, progress,
                   kind: str) -> list[DuelResult]:
    executor = executor or InProcessExecutor()
    agent_seeds = list(agent_seeds or [seed + k for k in range(len(names))])
    if chunk_pairs is None:
        chunk_pairs = _stored_chunk_pairs(work_dir) or default_chunk_pairs(games, executor.workers, len(pairings))
    bounds = chunk_bounds(games, chunk_pairs)
    store = None
    if work_dir is not None:
        job = {"kind": kind, "agents": names, "games": games, "seed": seed, "variant": get_rules(variant).name,
               "chunk_pairs": chunk_pairs, "agent_seeds": agent_seeds}
        store = ShardStore(work_dir, job)
    shared = executor.share(_context(names, variant, isinstance(executor, InProcessExecutor)))
    matches: list[DuelResult] = []

    def finished_chunk(index: int, result: dict) -> None:
        match, chunk = divmod(index, len(bounds))
        if chunk == len(bounds) - 1:
            a, b = pairings[match]
            first = match * len(bounds)
            matches.append(_combine(names[a], names[b], [results_so_far[k] for k in range(first, index + 1)]))
            if progress is not None:
                progress(matches[-1])

    results_so_far: dict[int, dict] = {}

    def record(index: int, result: dict) -> None:
        results_so_far[index] = result
        finished_chunk(index, result)

    run_sharded(executor, DUEL_CHUNK, shared, _tasks(pairings, bounds, seed, agent_seeds), store, record)
    return matches


def _duel_with_history(names, games, seed, variant, executor, chunk_pairs, work_dir, history) -> DuelResult:
    """``--save-games``: the same chunks, played here so that every turn can be recorded."""
    if executor is not None and not isinstance(executor, InProcessExecutor):
        raise ValueError("--save-games records every turn in this process: use it without --executor ray")
    if work_dir is not None:
        raise ValueError("--save-games cannot resume from a --work-dir (the shards hold points, not games)")
    device = executor.device if executor is not None else "cpu"
    chunk_pairs = chunk_pairs or default_chunk_pairs(games, 1)
    prepared = DUEL_CHUNK.prepare(_context(names, variant, in_process=True), device)
    results = [
        play_chunk(prepared, task, history)
        for _, task in _tasks([(0, 1)], chunk_bounds(games, chunk_pairs), seed, [seed, seed + 1])
    ]
    return _combine(names[0], names[1], results)


def _agent_identity(spec: str) -> str:
    """What an agent spec plays: a checkpoint by its bytes (the same model under two paths is one agent)
    with the rest of the spec (``:1ply``), any other spec as it is written."""
    path, colon, rest = spec.partition(":")
    if not Path(path).is_file():
        return spec
    return f"sha256:{hashlib.sha256(Path(path).read_bytes()).hexdigest()}{colon}{rest}"


def _finished_duel(directory: str | Path) -> tuple[dict, list[dict]]:
    """The job of the finished duel in ``directory`` and each chunk's results, in order; a ValueError
    naming the directory when it holds no duel or the duel is unfinished."""
    job = read_job(directory)
    if job.get("kind") != "duel":
        raise ValueError(f"{directory}: its {JOB_FILE} describes a {job.get('kind')!r} job, not a duel of two agents")
    store = ShardStore(directory, job)
    chunks = len(chunk_bounds(job["games"], job["chunk_pairs"]))
    played = len(set(range(chunks)) & store.done())
    if played < chunks:
        raise ValueError(f"{directory}: {played} of its {chunks} chunks are played; run its "
                         "bench command again to finish it")
    return job, [store.read(index) for index in range(chunks)]


def pool_duel_work_directories(directories: list[str | Path]) -> tuple[DuelResult, list[DuelResult]]:
    """Several finished duels of the same two agents on different dice (``bgtrain bench --work-dir``) as
    one result over all their pairs, with each duel's own: the pooled interval is over every pair mean,
    as one duel of all those games would give. Refused, with a ValueError naming the directory: a
    directory that holds no finished duel, other agents or rules (a checkpoint counts as the same agent
    under another path when its bytes are the same), or the same dice twice (the same seed: those games
    would count twice)."""
    pooled, duels, _ = _pool(directories)
    return pooled, duels


def _pool(directories: list[str | Path]) -> tuple[DuelResult, list[DuelResult], list[tuple[dict, list[dict]]]]:
    """``pool_duel_work_directories``, with each directory's job and chunk results (read once)."""
    if not directories:
        raise ValueError("give at least one work directory")
    duels, every_chunk, seeds, finished = [], [], {}, []
    agents = variant = None
    for directory in directories:
        job, results = _finished_duel(directory)
        if agents is None:
            agents, variant = job["agents"], job["variant"]
        elif [_agent_identity(a) for a in job["agents"]] != [_agent_identity(a) for a in agents] or job["variant"] != variant:
            raise ValueError(f"{directory}: {' vs '.join(job['agents'])} ({job['variant']}), where the first "
                             f"directory holds {' vs '.join(agents)} ({variant})")
        if job["seed"] in seeds:
            raise ValueError(f"{directory} and {seeds[job['seed']]} played the same dice (seed {job['seed']}): "
                             "pooled, those games would count twice")
        seeds[job["seed"]] = directory
        duels.append(_combine(agents[0], agents[1], results))
        every_chunk += results
        finished.append((job, results))
    return _combine(agents[0], agents[1], every_chunk), duels, finished


@dataclass(frozen=True)
class PairedDifference:
    """Two agents' results against one opponent on the same dice, pair by pair: ``difference`` is the
    first's points a game less the second's, ``interval95`` its half-width over the pairs' differences."""

    agent_a: str
    agent_b: str
    opponent: str
    pairs: int
    difference: float
    interval95: float
    correlation: float  # of the two agents' pair means: how much of the dice's luck the pairing removes

    def line(self) -> str:
        return (f"{self.agent_a} - {self.agent_b} against {self.opponent} on the same dice: {self.difference:+.4f} ± "
                f"{self.interval95:.4f} points per game (95%) over {self.pairs:,} pairs each "
                f"(pair means correlated {self.correlation:.2f})")


def paired_duel_difference(first: list[str | Path], second: list[str | Path]) -> PairedDifference:
    """The finished duels ``first`` (A against an opponent, on several seeds) less ``second`` (B against
    the same opponent on the same seeds), pair for pair: pair k of a seed has the same dice in both, so
    the luck both agents shared cancels, and the interval is over the differences of the pair means (a
    paired interval, narrower than either duel's own by the correlation of the two). The directories
    are matched by seed; refused with a ValueError: an unmatched seed, another opponent, other games or
    chunks (other dice), or the same dice twice on one side."""
    pooled_a, _, finished_a = _pool(first)  # each side's own refusals first
    pooled_b, _, finished_b = _pool(second)
    if _agent_identity(pooled_a.agent_b) != _agent_identity(pooled_b.agent_b):
        raise ValueError(f"the first duels are against {pooled_a.agent_b}, the second against {pooled_b.agent_b}: "
                         "a paired difference needs one opponent")
    by_seed = {job["seed"]: (directory, job, results) for directory, (job, results) in zip(second, finished_b)}
    means_a, means_b = [], []
    for directory, (job, results) in zip(first, finished_a):
        if job["seed"] not in by_seed:
            raise ValueError(f"{directory}: no duel of the second agent on its seed {job['seed']}")
        twin, twin_job, twin_results = by_seed.pop(job["seed"])
        dice = ("games", "chunk_pairs", "variant")
        if any(job[key] != twin_job[key] for key in dice):
            raise ValueError(f"{directory} and {twin}: other dice on seed {job['seed']} "
                             f"({', '.join(f'{key} {job[key]} and {twin_job[key]}' for key in dice)})")
        means_a.append(_pair_means(results))
        means_b.append(_pair_means(twin_results))
    if by_seed:
        raise ValueError(f"{next(iter(by_seed.values()))[0]}: no duel of the first agent on its seed")
    a, b = torch.cat(means_a), torch.cat(means_b)
    difference = a - b
    pairs = difference.numel()
    interval = 1.96 * float(difference.std()) / math.sqrt(pairs) if pairs > 1 else float("inf")
    correlation = float(torch.corrcoef(torch.stack([a, b]))[0, 1]) if pairs > 1 else float("nan")
    return PairedDifference(pooled_a.agent_a, pooled_b.agent_a, pooled_a.agent_b, pairs, float(difference.mean()),
                            interval, correlation)


def _pair_means(results: list[dict]) -> torch.Tensor:
    """Each pair's mean points for the duel's first agent (its two games, seats swapped)."""
    first = torch.cat([torch.tensor(result["first"], dtype=torch.float64) for result in results])
    second = torch.cat([torch.tensor(result["second"], dtype=torch.float64) for result in results])
    return (first + second) / 2
