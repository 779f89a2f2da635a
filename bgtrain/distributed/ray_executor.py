"""Work units on a Ray cluster: worker actors with declared resources, contexts sent once through the
object store, a bounded number of tasks in flight, and tasks retried when their worker dies.

Workers are actors (``_Worker``), each reserving ``worker_cpus`` CPUs (torch runs that many threads in
it) and ``worker_gpus`` of a GPU (a fraction: several workers share one GPU, each playing thousands
of games in lock step there). A shared context (``share``: agents' recipes, a network's weights as
numpy arrays, never CUDA tensors) is put into the object store once; each task carries only its
reference, and a worker fetches and prepares it the first time it sees that version. Tasks go to the
worker with the fewest outstanding; results (dicts of compact numpy arrays) come back in submission
order.

Faults: a worker that dies (its process killed, its node lost) fails every task it held with
``RayActorError``; the executor starts a new actor in its place and resubmits those tasks, which
are idempotent by their seeds, so nothing is lost and nothing is counted twice (a result is taken
once, from the one attempt that succeeded). An exception raised by a unit itself (a user error such
as a missing model file) is raised here as it was raised there.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections import deque
from dataclasses import dataclass
from typing import Any

from bgtrain.distributed.executor import PreparedCache, Shared, WorkUnit

INSTALL_HINT = "pip install 'bgtrain[ray]'"
_HOST_PORT = re.compile(r"^(?P<host>[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:]+\]):(?P<port>\d{1,5})$")


def import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError(f"--executor ray needs Ray, which is not installed ({INSTALL_HINT})") from None
    return ray


def check_address(address: str) -> None:
    """A ValueError of one line unless ``address`` is 'auto', ray://HOST:PORT or a reachable HOST:PORT."""
    if address == "auto" or address.startswith("ray://"):
        return
    match = _HOST_PORT.match(address)
    if not match or not 0 < int(match.group("port")) < 65536:
        raise ValueError(f"--address {address!r}: give 'auto' or HOST:PORT of a Ray head node (e.g. 10.0.0.1:6379)")
    host = match.group("host").strip("[]")
    try:
        with socket.create_connection((host, int(match.group("port"))), timeout=3.0):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ValueError(f"--address {address}: no Ray cluster answers there ({reason}); "
                         "start one with `ray start --head`") from None


def connect(address: str | None) -> bool:
    """Join (or start) a Ray cluster; True when this call started it (then ``close`` shuts it down)."""
    ray = import_ray()
    if address is not None:
        check_address(address)
    if ray.is_initialized():
        return False
    try:
        if address is None:
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except ConnectionError as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"--address {address}: cannot join a Ray cluster ({first_line})") from None
    return address is None


class _Worker:
    """A Ray actor that runs work units; it keeps what it prepared from the latest contexts."""

    def __init__(self, device: str, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.device = device
        self.cache = PreparedCache()

    def run(self, unit: WorkUnit, version: int, boxed_payload: list, task: Any) -> dict:
        import ray

        # The payload comes boxed in a list, so that Ray passes the reference rather than the
        # value: it is fetched from the object store only when this worker has not seen the version.
        prepared = self.cache.get(unit, version, lambda: ray.get(boxed_payload[0]), self.device)
        return unit.run(prepared, task)

    def pid(self) -> int:
        return os.getpid()


@dataclass
class _Entry:
    key: Any
    unit: WorkUnit
    shared: Shared
    task: Any
    slot: int
    generation: int
    reference: Any = None
    attempts: int = 0


class RayExecutor:
    """See the module docstring. ``window``: tasks callers keep in flight (default two per worker)."""

    def __init__(self, address: str | None = None, workers: int | None = None, worker_cpus: float = 1.0,
                 worker_gpus: float = 0.0, window: int | None = None, max_retries: int = 3) -> None:
        if worker_cpus <= 0 or worker_gpus < 0:
            raise ValueError(f"--worker-cpus must be > 0 and --worker-gpus >= 0, not {worker_cpus} and {worker_gpus}")
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be at least 1, not {workers}")
        self.ray = import_ray()
        self.started_cluster = connect(address)
        self.workers = self._fit_workers(workers, worker_cpus, worker_gpus)
        self.window = window or 2 * self.workers
        self.max_retries = max_retries
        self.device = "cuda" if worker_gpus > 0 else "cpu"
        self.actor_class = self.ray.remote(num_cpus=worker_cpus, num_gpus=worker_gpus, max_restarts=0)(_Worker)
        self.threads = max(1, int(worker_cpus))
        self.actors = [self._new_actor() for _ in range(self.workers)]
        self.generations = [0] * self.workers
        self.outstanding = [0] * self.workers
        self.queue: deque[_Entry] = deque()
        self.versions = 0
        self.retried = 0  # tasks run again because their worker died

    def _fit_workers(self, workers: int | None, cpus: float, gpus: float) -> int:
        resources = self.ray.cluster_resources()
        have_cpus, have_gpus = resources.get("CPU", 0.0), resources.get("GPU", 0.0)
        fit = int(have_cpus // cpus)
        if gpus > 0:
            fit = min(fit, int(have_gpus // gpus + 1e-9))
        if workers is None:
            workers = fit
        if workers < 1 or workers > fit:
            raise ValueError(f"{workers or 1} workers of {cpus:g} CPUs and {gpus:g} GPUs do not fit the cluster "
                             f"({have_cpus:g} CPUs, {have_gpus:g} GPUs)")
        return workers

    def _new_actor(self):
        return self.actor_class.remote(self.device, self.threads)

    def share(self, context: Any) -> Shared:
        self.versions += 1
        return Shared(self.versions, self.ray.put(context))

    def submit(self, unit: WorkUnit, shared: Shared, key: Any, task: Any) -> None:
        slot = min(range(self.workers), key=lambda index: self.outstanding[index])
        entry = _Entry(key, unit, shared, task, slot, self.generations[slot])
        self._send(entry)
        self.queue.append(entry)

    def _send(self, entry: _Entry) -> None:
        entry.generation = self.generations[entry.slot]
        actor = self.actors[entry.slot]
        entry.reference = actor.run.remote(entry.unit, entry.shared.version, [entry.shared.payload], entry.task)
        self.outstanding[entry.slot] += 1

    def _replace_worker(self, slot: int, generation: int) -> None:
        """The worker in ``slot`` died: a new one takes its place, and every task it held is sent again."""
        if self.generations[slot] != generation:
            return  # already replaced
        self.generations[slot] += 1
        with contextlib.suppress(Exception):  # it may be only unreachable: free its resources for the new one
            self.ray.kill(self.actors[slot])
        self.actors[slot] = self._new_actor()
        self.outstanding[slot] = 0
        for entry in self.queue:
            if entry.slot == slot and entry.generation == generation:
                entry.attempts += 1
                self.retried += 1
                self._send(entry)

    def next_result(self) -> tuple[Any, dict]:
        ray = self.ray
        entry = self.queue[0]
        while True:
            try:
                result = ray.get(entry.reference)
                break
            except ray.exceptions.RayActorError:
                if entry.attempts >= self.max_retries:
                    raise RuntimeError(f"task {entry.key!r} lost its worker {entry.attempts + 1} times; giving up")
                self._replace_worker(entry.slot, entry.generation)
            except ray.exceptions.RayTaskError as error:
                cause = getattr(error, "cause", None)
                raise (cause if isinstance(cause, Exception) else error) from None
        self.queue.popleft()
        self.outstanding[entry.slot] -= 1
        return entry.key, result

    def pending(self) -> int:
        return len(self.queue)

    def cancel(self) -> None:
        """Drop every task submitted and not yet taken: Ray is asked to cancel those not started (one
        that runs finishes on its worker, and its result is never fetched)."""
        for entry in self.queue:
            with contextlib.suppress(Exception):
                self.ray.cancel(entry.reference)
        self.queue.clear()
        self.outstanding = [0] * self.workers

    def worker_pids(self) -> list[int]:
        return self.ray.get([actor.pid.remote() for actor in self.actors])

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors, self.queue = [], deque()
        if self.started_cluster:
            self.ray.shutdown()
