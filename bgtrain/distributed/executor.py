"""The executor seam: seeded work units run in this process (the default) or on a Ray cluster.

A work unit (``WorkUnit``) is a pair of plain functions: ``prepare(context, device)`` builds what a
worker needs from a shared context once per context (agents, a network from numpy weights), and
``run(prepared, task) -> dict of numpy arrays`` does one seeded piece of work. A task's result is a
function of ``(context, task)`` alone, so it is the same wherever and whenever it runs, and a task
that is lost (a worker died) can simply run again.

An executor offers ``share(context) -> Shared`` (a context goes out once: on Ray it is put into the
object store once and each worker fetches it once per version), ``submit(unit, shared, key, task)``
and ``next_result() -> (key, result)``, which returns results in submission order; ``cancel()`` drops
the tasks submitted and not yet taken (a job that stops early). Callers keep a
bounded number of tasks submitted (``run_tasks`` or their own loop, ``window`` at most): there is no
unbounded queue anywhere. Because results come back in submission order and a result depends only
on its inputs, a job whose submissions depend only on the results consumed so far (self-play
training: new weights every K shards) runs the same schedule, and gives the same numbers, in
process and on Ray.

``InProcessExecutor`` runs a task when its result is asked for; ``RayExecutor``
(``bgtrain.distributed.ray_executor``) runs them on actors. ``make_executor`` picks one from the
command line's ``--executor process|ray [--address auto|HOST:PORT]``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol


class ClusterError(RuntimeError):
    """A job the cluster cannot finish (a task that keeps losing its worker, runs past the timeout,
    or has no worker left): one line naming the task and the node; the command exits with status 2."""


@dataclass(frozen=True)
class WorkUnit:
    """One kind of work: ``prepare(context, device) -> prepared`` once per shared context on each
    worker; ``run(prepared, task) -> dict[str, numpy array or int]``, a function of its inputs."""

    name: str
    prepare: Callable[[Any, str], Any]
    run: Callable[[Any, Any], dict]


@dataclass(frozen=True)
class Shared:
    """A context shared by many tasks: ``version`` numbers it (workers keep what they prepared from
    it under this number); ``payload`` is the context itself or, on Ray, its object reference."""

    version: int
    payload: Any


class Executor(Protocol):
    workers: int
    window: int  # tasks a caller should keep submitted: enough to keep every worker busy

    def share(self, context: Any) -> Shared: ...

    def submit(self, unit: WorkUnit, shared: Shared, key: Any, task: Any) -> None: ...

    def next_result(self) -> tuple[Any, dict]: ...

    def pending(self) -> int: ...

    def cancel(self) -> None: ...

    def close(self) -> None: ...


class PreparedCache:
    """What a worker prepared from the latest shared contexts, by (unit, version); the oldest entries
    are dropped so that a long training run does not keep every version of its weights."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self.entries: dict[tuple[str, int], Any] = {}

    def get(self, unit: WorkUnit, version: int, load_context: Callable[[], Any], device: str) -> Any:
        key = (unit.name, version)
        if key not in self.entries:
            self.entries[key] = unit.prepare(load_context(), device)
            while len(self.entries) > self.keep:
                del self.entries[next(iter(self.entries))]
        return self.entries[key]


class InProcessExecutor:
    """Runs every task here, lazily: a task runs when its result is asked for, so callers that keep a
    window of tasks submitted see the same schedule as on a cluster, at no cost. ``threads``: torch
    threads while a task runs (a Ray worker runs ``int(worker_cpus)``; float sums can depend on the
    thread count, so a job that must match a cluster's to the bit runs its tasks with the same number);
    None leaves this process's setting."""

    def __init__(self, device: str = "cpu", window: int = 2, threads: int | None = None) -> None:
        self.device = device
        self.workers = 1
        self.window = window
        self.threads = threads
        self.versions = itertools.count()
        self.cache = PreparedCache()
        self.queue: deque[tuple[WorkUnit, Shared, Any, Any]] = deque()

    def share(self, context: Any) -> Shared:
        return Shared(next(self.versions), context)

    def submit(self, unit: WorkUnit, shared: Shared, key: Any, task: Any) -> None:
        self.queue.append((unit, shared, key, task))

    def next_result(self) -> tuple[Any, dict]:
        unit, shared, key, task = self.queue.popleft()
        with torch_threads(self.threads):
            prepared = self.cache.get(unit, shared.version, lambda: shared.payload, self.device)
            return key, unit.run(prepared, task)

    def pending(self) -> int:
        return len(self.queue)

    def cancel(self) -> None:
        """Drop every task submitted and not yet taken (it never runs)."""
        self.queue.clear()

    def close(self) -> None:
        self.queue.clear()


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """Run the body with ``threads`` torch threads (None: as they are), then restore the count."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_tasks(executor: Executor, unit: WorkUnit, shared: Shared, tasks: Iterable[tuple[Any, Any]],
              window: int | None = None) -> Iterator[tuple[Any, dict]]:
    """``(key, result)`` for every ``(key, task)``, in order, with at most ``window`` tasks submitted
    at a time (default ``executor.window``)."""
    window = max(1, window or executor.window)
    tasks = iter(tasks)
    submitted = 0
    for key, task in itertools.islice(tasks, window):
        executor.submit(unit, shared, key, task)
        submitted += 1
    while submitted:
        yield executor.next_result()
        submitted -= 1
        for key, task in itertools.islice(tasks, 1):
            executor.submit(unit, shared, key, task)
            submitted += 1


# --- choosing an executor on the command line ---------------------------------------------------------


EXECUTORS = ("process", "ray")


def add_executor_arguments(parser: argparse.ArgumentParser, work_dir: bool = True) -> None:
    """The flags every distributable command takes (``work_dir``: with ``--work-dir``, for jobs whose
    output is not itself resumable)."""
    group = parser.add_argument_group("executor (bgtrain.distributed; docs/distributed.md)")
    group.add_argument("--executor", choices=EXECUTORS, default="process",
                       help="where the work units run: in this process (default) or on a Ray cluster")
    group.add_argument("--address", help="Ray cluster to join: 'auto' (the one `ray start` began on this machine) "
                       "or HOST:PORT; default: $RAY_ADDRESS when set, else a private cluster on this machine")
    group.add_argument("--workers", type=int, help="Ray worker actors (default: as many as the resources allow)")
    group.add_argument("--worker-cpus", type=float, default=1.0, help="CPUs each Ray worker reserves (default 1)")
    group.add_argument("--worker-gpus", type=float, default=0.0,
                       help="GPUs each Ray worker reserves, e.g. 0.25 for four workers per GPU (default 0)")
    group.add_argument("--task-timeout", type=float, metavar="SECONDS",
                       help="Ray: end the job with an error naming the task and node when one task runs longer "
                       "than this, or no worker is left this long (default: no limit per task)")
    if work_dir:
        group.add_argument("--work-dir", metavar="DIR",
                           help="write each unit's result to DIR as it completes; the same command resumes from it")


def executor_from_args(args: argparse.Namespace) -> Executor:
    """The executor the command line asks for; on Ray, which cluster it joined is said on standard
    error, and a bar of the units finished per node is shown (in a terminal)."""
    quiet = getattr(args, "quiet", False) or getattr(args, "no_progress", False)
    return make_executor(args.executor, address=args.address, workers=args.workers,
                         worker_cpus=args.worker_cpus, worker_gpus=args.worker_gpus,
                         device=getattr(args, "device", "cpu"), task_timeout=args.task_timeout,
                         progress=not quiet, announce=True)


def make_executor(kind: str = "process", address: str | None = None, workers: int | None = None,
                  worker_cpus: float = 1.0, worker_gpus: float = 0.0, device: str = "cpu",
                  window: int | None = None, threads: int | None = None, task_timeout: float | None = None,
                  progress: bool = False, announce: bool = False) -> Executor:
    """An executor by name; every problem (Ray missing, a bad address, impossible resources) is a
    ValueError of one line. ``threads``: the in-process executor's torch threads per task (Ray
    workers run ``int(worker_cpus)``); ``announce``: say on standard error which Ray cluster it is."""
    if kind == "process":
        if address is not None:
            raise ValueError("--address names a Ray cluster: use it with --executor ray")
        if task_timeout is not None:
            raise ValueError("--task-timeout bounds Ray tasks: use it with --executor ray")
        return InProcessExecutor(device, window or 2, threads)
    if kind == "ray":
        from bgtrain.distributed.ray_executor import RayExecutor

        return RayExecutor(address=address, workers=workers, worker_cpus=worker_cpus, worker_gpus=worker_gpus,
                           window=window, task_timeout=task_timeout, progress=progress, announce=announce)
    raise ValueError(f"unknown executor {kind!r}: one of {', '.join(EXECUTORS)}")
