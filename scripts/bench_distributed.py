"""Throughput of the distributed executor: benchmark games and self-play with 1 and 2 Ray workers
(the scaling ratio measured in one run), against the in-process executor, and the overhead per task.

    python scripts/bench_distributed.py [--games 4096] [--chunk-pairs 256] [--repeats 3]

Every worker runs one torch thread. Before timing, each worker plays a warm-up job (the engine
compiles its kernels once per process). Printed: medians of ``--repeats`` runs, the machine's load
average before and after (the cores may be shared), and a signature (the duel's points per game and
a hash of the self-play shards) that must be the same in process and on Ray.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time

import torch

from bgtrain.config import load_config
from bgtrain.distributed.duels import play_duel_chunked
from bgtrain.distributed.executor import InProcessExecutor, WorkUnit, make_executor, run_tasks
from bgtrain.distributed.work import SELFPLAY_SHARD, selfplay_context
from bgtrain.network import ValueNetwork

MODEL = "checkpoints/bgtrain-default.pt"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=4096)
    parser.add_argument("--chunk-pairs", type=int, default=256)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--shard-games", type=int, default=256)
    parser.add_argument("--shard-turns", type=int, default=64)
    parser.add_argument("--overhead-tasks", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    import ray

    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    os.environ.setdefault("PYTHONPATH", os.getcwd())
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    config = load_config("configs/default.toml", [f"train.buffer_turns={16}"])
    torch.manual_seed(0)
    context = selfplay_context(ValueNetwork("tesauro198", (80,)), 0, config)

    def duel(executor):
        return play_duel_chunked(MODEL, "pubeval", args.games, seed=1, executor=executor, chunk_pairs=args.chunk_pairs)

    def measure(executor) -> dict:
        return {
            "bench": lambda: duel(executor),
            "selfplay": lambda: selfplay_job(executor, context, args.shards, args.shard_games, args.shard_turns),
            "echo": lambda: list(run_tasks(executor, ECHO, executor.share(None),
                                           [(k, k) for k in range(args.overhead_tasks)])),
        }

    # Three executors live at once (the in-process one, 1 worker, 2 workers: Ray is told of 3 CPUs so
    # that all three actors exist; an idle actor uses no CPU) and their runs are interleaved, so that
    # a drifting load from other programs on the machine hits them alike.
    executors = {"in process": InProcessExecutor(), "ray, 1 worker": make_executor("ray", workers=1),
                 "ray, 2 workers": make_executor("ray", workers=2)}
    for executor in executors.values():  # warm-up: every worker compiles the engine's kernels once
        duel(executor)
        selfplay_job(executor, context, 2 * executor.workers, args.shard_games, args.shard_turns)
    times: dict[str, dict[str, list[float]]] = {name: {"bench": [], "selfplay": [], "echo": []} for name in executors}
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
    rows = {
        name: ((statistics.median(times[name]["bench"]), results[name]["bench"]),
               (statistics.median(times[name]["selfplay"]), results[name]["selfplay"]),
               statistics.median(times[name]["echo"]))
        for name in executors
    }

    print(f"bench: {MODEL} vs pubeval, {args.games} games in chunks of {args.chunk_pairs} pairs; self-play: "
          f"{args.shards} shards of {args.shard_games} games x {args.shard_turns} turns (198-80-5)")
    print(f"{'executor':<16} {'bench games/s':>14} {'self-play positions/s':>22} {'overhead ms/task':>17}  signature")
    for name, ((duel_seconds, result), (play_seconds, (digest, positions)), echo_seconds) in rows.items():
        print(f"{name:<16} {args.games / duel_seconds:>14,.0f} {positions / play_seconds:>22,.0f} "
              f"{1000 * echo_seconds / args.overhead_tasks:>17.2f}  ppg {result.points_per_game:+.4f}, shards {digest}")
    one, two = rows["ray, 1 worker"], rows["ray, 2 workers"]
    print(f"scaling 1 -> 2 workers: bench x{one[0][0] / two[0][0]:.2f}, self-play x{one[1][0] / two[1][0]:.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
