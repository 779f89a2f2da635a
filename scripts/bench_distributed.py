"""Throughput of the distributed executor: benchmark games, self-play, rollouts, dataset shards and relabelled
shards with 1 and 2 Ray workers (the scaling ratio measured in one run), against the in-process executor, and the overhead
per task.

    python scripts/bench_distributed.py [--games 4096] [--chunk-pairs 256] [--rollout-trials 1296]
                                        [--rollout-chunk 324] [--dataset-positions 400] [--dataset-shard 100]
                                        [--relabel-positions 400] [--relabel-shard 100]
                                        [--relabel-model checkpoints/bgtrain-distilled.pt] [--relabel-labeller ply:2]
                                        [--jobs bench,selfplay,rollout,dataset,relabel,echo] [--repeats 3]

Every worker runs one torch thread. Before timing, each worker plays a warm-up job (the engine
compiles its kernels once per process). Printed: medians of ``--repeats`` runs, the machine's load
average before and after (the cores may be shared), and a signature (the duel's points per game and
a hash of the self-play shards and of the rollout's per-trial results) that must be the same in
process and on Ray. The rollout: the default model's 0-ply whole-game rollout of two positions
(``bgtrain.distributed.rollouts``), figures in trials per second (position-trials). The dataset: the
default model's ``bgtrain dataset generate`` with the ``ply:1`` labeller (``bgtrain.distributed.datasets``,
64 games in lock step per shard, selection at 1 ply), into a fresh directory each run; figures in
labelled positions per second, signature a hash of the shard files' bytes. The relabelling: ``bgtrain
dataset relabel`` (``bgtrain.distributed.datasets.relabel_dataset_distributed``) of a source dataset made
once (the default model's self-play, every sampled position), by ``--relabel-model`` with
``--relabel-labeller`` (the shipped default at 2-ply: generation 9's labels), into a fresh directory each
run; figures in labels per second, signature a hash of the shard files' bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch

from bgtrain.datasets.generate import GenerationSettings
from bgtrain.datasets.labellers import labeller_from_spec
from bgtrain.distributed.datasets import generate_dataset_distributed, relabel_dataset_distributed
from bgtrain.distributed.duels import play_duel_chunked
from bgtrain.distributed.executor import InProcessExecutor, WorkUnit, make_executor, run_tasks
from bgtrain.distributed.rollouts import model_recipe, rollout_distributed
from bgtrain.distributed.work import SELFPLAY_SHARD, selfplay_context
from bgtrain.model.network import ValueNetwork
from bgtrain.rollout import RolloutSettings
from bgtrain.training.config import load_config
from engine.position_id import decode_position_id

MODEL = "checkpoints/bgtrain-default.pt"
ROLLOUT_POSITIONS = ("4HPwATDgc/ABMA", "4OvgATDgc+QBUA")  # the start, a middle game with anchors
JOBS = ("bench", "selfplay", "rollout", "dataset", "relabel", "echo")


def _nothing(context, device):
    return None


def _echo(prepared, task):
    return {"value": task}


ECHO = WorkUnit("echo", _nothing, _echo)


def selfplay_job(executor, context, shards: int, slots: int, turns: int):
    tasks = [(index, {"seed": 100 + index, "slots": slots, "turns": turns}) for index in range(shards)]
    results = dict(run_tasks(executor, SELFPLAY_SHARD, executor.share(context), tasks))
    digest = hashlib.sha256()
    for index in range(shards):
        digest.update(results[index]["boards"].tobytes())
        digest.update(results[index]["targets"].tobytes())
    return digest.hexdigest()[:16], sum(results[index]["boards"].shape[0] for index in range(shards))


def in_fresh_directory(make_dataset) -> tuple[str, int]:
    """``make_dataset(directory)`` into a new temporary directory, removed after: a hash of its shard files'
    bytes (the signature that must not depend on the executor) and its positions."""
    directory = tempfile.mkdtemp(prefix="bench-dataset-")
    try:
        manifest = make_dataset(directory)
        digest = hashlib.sha256()
        for shard in manifest["shards"]:
            digest.update((Path(directory) / shard["file"]).read_bytes())
        return digest.hexdigest()[:16], manifest["positions"]
    finally:
        shutil.rmtree(directory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=4096)
    parser.add_argument("--chunk-pairs", type=int, default=256)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--shard-games", type=int, default=256)
    parser.add_argument("--shard-turns", type=int, default=64)
    parser.add_argument("--overhead-tasks", type=int, default=400)
    parser.add_argument("--rollout-trials", type=int, default=1296)
    parser.add_argument("--rollout-chunk", type=int, default=324)
    parser.add_argument("--dataset-positions", type=int, default=400)
    parser.add_argument("--dataset-shard", type=int, default=100)
    parser.add_argument("--relabel-positions", type=int, default=400)
    parser.add_argument("--relabel-shard", type=int, default=100)
    parser.add_argument("--relabel-model", default="checkpoints/bgtrain-distilled.pt")
    parser.add_argument("--relabel-labeller", default="ply:2")
    parser.add_argument("--jobs", default=",".join(JOBS), help="which jobs to time, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    jobs = [job.strip() for job in args.jobs.split(",")]
    if not jobs or any(job not in JOBS for job in jobs):
        parser.error(f"--jobs: a comma-separated subset of {','.join(JOBS)}")
    torch.set_num_threads(1)
    import ray

    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    os.environ.setdefault("PYTHONPATH", os.getcwd())
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    config = load_config("configs/default.toml", [f"train.buffer_turns={16}"])
    torch.manual_seed(0)
    context = selfplay_context(ValueNetwork("tesauro198", (80,)), 0, config)
    rollout_boards = torch.stack([decode_position_id(text) for text in ROLLOUT_POSITIONS])
    recipe = model_recipe(MODEL)  # read once, as the command does

    def rollout_job(executor):
        result = rollout_distributed(MODEL, rollout_boards, RolloutSettings(), seed=5, trials=args.rollout_trials,
                                     chunk=args.rollout_chunk, executor=executor, recipe=recipe)
        digest = hashlib.sha256(result.outcomes.numpy().tobytes() + result.plies.numpy().tobytes())
        return digest.hexdigest()[:16], result.positions * result.trials

    dataset_settings = GenerationSettings(positions=args.dataset_positions, shard_size=args.dataset_shard, seed=2,
                                          games_in_parallel=64)
    labeller = {"kind": "ply", "ply": 1, "model": MODEL}

    def dataset_job(executor):
        return in_fresh_directory(lambda directory: generate_dataset_distributed(
            directory, MODEL, labeller, dataset_settings, MODEL, executor, progress=False, recipe=recipe))

    relabel_source = Path(tempfile.mkdtemp(prefix="bench-relabel-source-")) / "source"
    relabel_recipe = model_recipe(args.relabel_model) if "relabel" in jobs else None
    relabeller = labeller_from_spec(args.relabel_labeller, args.relabel_model).describe() if "relabel" in jobs else None
    if "relabel" in jobs:  # the positions, once: self-play by the default model, every sampled one, 0-ply labels
        source_settings = GenerationSettings(positions=args.relabel_positions, shard_size=args.relabel_shard, seed=3,
                                             games_in_parallel=64, select_ply=0)
        generate_dataset_distributed(relabel_source, MODEL, {"kind": "ply", "ply": 0, "model": MODEL}, source_settings,
                                     MODEL, progress=False, recipe=recipe)

    def relabel_job(executor):
        return in_fresh_directory(lambda directory: relabel_dataset_distributed(
            directory, relabel_source, args.relabel_model, relabeller, executor=executor, progress=False,
            recipe=relabel_recipe))

    def duel(executor):
        return play_duel_chunked(MODEL, "pubeval", args.games, seed=1, executor=executor, chunk_pairs=args.chunk_pairs)

    def measure(executor) -> dict:
        every = {
            "bench": lambda: duel(executor),
            "selfplay": lambda: selfplay_job(executor, context, args.shards, args.shard_games, args.shard_turns),
            "rollout": lambda: rollout_job(executor),
            "dataset": lambda: dataset_job(executor),
            "relabel": lambda: relabel_job(executor),
            "echo": lambda: list(run_tasks(executor, ECHO, executor.share(None),
                                           [(k, k) for k in range(args.overhead_tasks)])),
        }
        return {name: every[name] for name in jobs}

    # Three executors live at once (the in-process one, 1 worker, 2 workers: Ray is told of 3 CPUs so
    # that all three actors exist; an idle actor uses no CPU) and their runs are interleaved, so that
    # a drifting load from other programs on the machine hits them alike.
    executors = {"in process": InProcessExecutor(), "ray, 1 worker": make_executor("ray", workers=1),
                 "ray, 2 workers": make_executor("ray", workers=2)}
    for executor in executors.values():  # warm-up: every worker compiles the engine's kernels once
        if "bench" in jobs:
            duel(executor)
        if "selfplay" in jobs:
            selfplay_job(executor, context, 2 * executor.workers, args.shard_games, args.shard_turns)
        if "rollout" in jobs:
            rollout_job(executor)
        if "dataset" in jobs:
            dataset_job(executor)
        if "relabel" in jobs:
            relabel_job(executor)
    times: dict[str, dict[str, list[float]]] = {name: {job: [] for job in jobs} for name in executors}
    results: dict[str, dict] = {name: {} for name in executors}
    for _ in range(args.repeats):
        for name, executor in executors.items():
            for job_name, job in measure(executor).items():
                start = time.perf_counter()
                results[name][job_name] = job()
                times[name][job_name].append(time.perf_counter() - start)
    for executor in executors.values():
        executor.close()
    ray.shutdown()
    shutil.rmtree(relabel_source.parent)
    seconds = {name: {job: statistics.median(times[name][job]) for job in jobs} for name in executors}
    print(f"bench: {MODEL} vs pubeval, {args.games} games in chunks of {args.chunk_pairs} pairs; self-play: "
          f"{args.shards} shards of {args.shard_games} games x {args.shard_turns} turns (198-80-5); rollout: "
          f"{len(ROLLOUT_POSITIONS)} positions x {args.rollout_trials} trials, 0-ply whole games, in chunks of "
          f"{args.rollout_chunk}; dataset: {args.dataset_positions} positions in shards of {args.dataset_shard}, "
          f"ply:1 labels; relabel: {args.relabel_positions} positions in shards of {args.relabel_shard}, "
          f"{args.relabel_labeller} labels by {args.relabel_model}")
    columns = {"bench": "bench games/s", "selfplay": "self-play positions/s", "rollout": "rollout trials/s",
               "dataset": "dataset positions/s", "relabel": "relabel labels/s", "echo": "overhead ms/task"}
    print(f"{'executor':<16} " + " ".join(f"{columns[job]:>22}" for job in jobs) + "  signature")
    for name in executors:
        cells, signature = [], []
        for job in jobs:
            result, elapsed = results[name][job], seconds[name][job]
            if job == "bench":
                cells.append(args.games / elapsed)
                signature.append(f"ppg {result.points_per_game:+.4f}")
            elif job in ("selfplay", "rollout", "dataset", "relabel"):
                cells.append(result[1] / elapsed)
                signature.append(f"{job} {result[0]}")
            else:
                cells.append(1000 * elapsed / args.overhead_tasks)
        print(f"{name:<16} " + " ".join(f"{cell:>22,.2f}" if job == "echo" else f"{cell:>22,.0f}"
                                        for job, cell in zip(jobs, cells)) + "  " + ", ".join(signature))
    scaling = [f"{job} x{seconds['ray, 1 worker'][job] / seconds['ray, 2 workers'][job]:.2f}"
               for job in jobs if job != "echo"]
    print("scaling 1 -> 2 workers: " + ", ".join(scaling))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
