"""Work units on a Ray cluster: worker actors with declared resources, contexts sent once through the
object store, results collected as they finish, and the work of a lost worker or node re-queued to
the workers that remain.

Workers are actors (``_Worker``), each reserving ``worker_cpus`` CPUs (torch runs that many threads in
it) and ``worker_gpus`` of a GPU (a fraction: several workers share one GPU, each playing thousands
of games in lock step there). A shared context (``share``: agents' recipes, a network's weights as
numpy arrays, model files and databases as bytes, never paths or CUDA tensors) is put into the object
store once; each task carries only its reference, and a worker fetches and prepares it the first time
it sees that version. Before any work is sent, every worker reports its node and its bgtrain
(``bgtrain.distributed.version``): a node that runs other code is refused by name.

Dispatch: the driver keeps the submitted tasks and sends each worker at most ``PER_WORKER`` of them
(one running, one queued behind it so that it starts at once); the others wait on the driver, so that
no task is tied to a worker before one is free. Results are collected as they finish (``ray.wait``
on every task sent) and handed out by ``next_result`` in submission order.

Faults: a worker that dies (its process killed, its node lost) fails the tasks it held with
``RayActorError`` (or their results, stored on a lost node, with ``ObjectLostError``). Those tasks go
back to the head of the queue for the workers that remain, and a replacement worker is asked for,
which joins when the cluster can place it (at once for a killed process; when capacity returns for
a lost node); the job goes on meanwhile with fewer workers. Tasks are idempotent by their seeds and a
result is taken once, so nothing is lost or counted twice. A task that loses its worker more than
``max_retries`` times, a task that runs longer than ``task_timeout`` seconds, and a job left with no
worker for ``task_timeout`` seconds (default ``NO_WORKER_TIMEOUT``) end the job with one line naming
the task and the node. An exception raised by a unit itself (a user error such as a bad model file)
is raised here as it was raised there.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from bgtrain.distributed.executor import ClusterError, PreparedCache, Shared, WorkUnit
from bgtrain.distributed.local_cluster import is_loopback, keep_loopback
from bgtrain.distributed.version import code_version

INSTALL_HINT = "pip install 'bgtrain[ray]'"
PER_WORKER = 2  # tasks sent to a worker at a time: one running, one ready to start when it ends
NO_WORKER_TIMEOUT = 600.0  # seconds a job waits with no worker at all when no --task-timeout is given
START_TIMEOUT = 300.0  # seconds the first workers have to start and report (imports, a cold node)
_POLL_SECONDS = 1.0
_HOST_PORT = re.compile(r"^(?P<host>[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:]+\]):(?P<port>\d{1,5})$")


def import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError(f"--executor ray needs Ray, which is not installed ({INSTALL_HINT})") from None
    return ray


def check_address(address: str, source: str = "--address") -> str | None:
    """The host of ``address``; a ValueError of one line unless it is 'auto', ray://HOST:PORT or a
    reachable HOST:PORT (``source``: where the address came from, for the message)."""
    if address == "auto" or address.startswith("ray://"):
        return None
    match = _HOST_PORT.match(address)
    if not match or not 0 < int(match.group("port")) < 65536:
        raise ValueError(f"{source} {address!r}: give 'auto' or HOST:PORT of a Ray head node (e.g. 10.0.0.1:6379)")
    host = match.group("host").strip("[]")
    try:
        with socket.create_connection((host, int(match.group("port"))), timeout=3.0):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ValueError(f"{source} {address}: no Ray cluster answers there ({reason}); "
                         "start one with `ray start --head`") from None
    return host


@contextlib.contextmanager
def signal_handlers_kept():
    """This process's SIGINT and SIGTERM handlers (``StopSignals``'s) as they were before the block: joining
    Ray replaces them (Ray 2.60, seen here: a SIGTERM to a training driver then ended it with status 15, or
    134 from Ray's core, without saving ``latest.pt``)."""
    kept = ({number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
            if threading.current_thread() is threading.main_thread() else {})
    try:
        yield
    finally:
        for number, handler in kept.items():
            if handler is not None:
                signal.signal(number, handler)


def connect(address: str | None) -> tuple[bool, str]:
    """Join the cluster named by ``address``, else by ``RAY_ADDRESS``, else start a private one on this
    machine (bound to 127.0.0.1; never the last cluster Ray recorded). Returns (whether this call
    started the cluster, so that ``close`` shuts it down; a line saying which cluster it is)."""
    ray = import_ray()
    source = "--address"
    if address is None and os.environ.get("RAY_ADDRESS"):
        address, source = os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    host = check_address(address, source) if address is not None else None
    if ray.is_initialized():
        return False, "ray: the Ray session this process already holds"
    with signal_handlers_kept():
        return _join(ray, address, host, source)


def _join(ray, address: str | None, host: str | None, source: str) -> tuple[bool, str]:
    if address is None:
        keep_loopback()
        ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False)
        return True, "ray: started a private cluster on this machine (127.0.0.1; no --address or RAY_ADDRESS)"
    if host is not None and is_loopback(host):
        keep_loopback()  # a cluster bound to 127.0.0.1 (local_cluster): dial it there, not on the host's address
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except ray.exceptions.AuthenticationError as error:
        raise ValueError(f"{source} {address}: the cluster refused this driver's Ray token ({_first_line(error)}); "
                         "copy ~/.ray/auth_token from the head node, or set RAY_AUTH_TOKEN") from None
    except (ConnectionError, RuntimeError) as error:
        raise ValueError(f"{source} {address}: cannot join a Ray cluster ({_first_line(error)}; a cluster with "
                         "token authentication needs its token here: ~/.ray/auth_token or RAY_AUTH_TOKEN)") from None
    return False, f"ray: joined the cluster at {address} (from {source})"


class _Worker:
    """A Ray actor that runs work units; it keeps what it prepared from the latest contexts."""

    def __init__(self, device: str, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.device = device
        self.cache = PreparedCache()

    def describe(self) -> dict:
        """Where this worker runs and which bgtrain it imports."""
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address(),
                "pid": os.getpid(), "cwd": os.getcwd(), "version": code_version()}

    def run(self, unit: WorkUnit, version: int, boxed_payload: list, task: Any) -> dict:
        import ray

        # The payload comes boxed in a list, so that Ray passes the reference rather than the
        # value: it is fetched from the object store only when this worker has not seen the version.
        prepared = self.cache.get(unit, version, lambda: ray.get(boxed_payload[0]), self.device)
        return unit.run(prepared, task)

    def pid(self) -> int:
        return os.getpid()


_PENDING = object()


@dataclass(eq=False)
class _Entry:
    key: Any
    unit: WorkUnit
    shared: Shared
    task: Any
    reference: Any = None
    attempts: int = 0  # times it lost its worker
    result: Any = _PENDING


@dataclass(eq=False)
class _Actor:
    handle: Any
    number: int
    ready: Any = None  # the reference of its describe() call, while it starts
    node: str = "?"
    pid: int = 0
    sent: deque = field(default_factory=deque)  # its tasks, in the order it runs them
    head_since: float = 0.0  # when its first task in ``sent`` began (as far as the driver can tell)


class RayExecutor:
    """See the module docstring. ``window``: tasks callers keep in flight (default two per worker);
    ``task_timeout``: seconds a task may run (None: no limit); ``progress``: a bar of finished units
    per node on standard error (shown in a terminal only); ``announce``: say on standard error which
    cluster this is, and at the end how many units each node finished."""

    def __init__(self, address: str | None = None, workers: int | None = None, worker_cpus: float = 1.0,
                 worker_gpus: float = 0.0, window: int | None = None, max_retries: int = 3,
                 task_timeout: float | None = None, progress: bool = False, announce: bool = False) -> None:
        if worker_cpus <= 0 or worker_gpus < 0:
            raise ValueError(f"--worker-cpus must be > 0 and --worker-gpus >= 0, not {worker_cpus} and {worker_gpus}")
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be at least 1, not {workers}")
        if task_timeout is not None and not task_timeout > 0:
            raise ValueError(f"--task-timeout must be > 0 seconds, not {task_timeout}")
        self.ray = import_ray()
        self.started_cluster, self.cluster = connect(address)
        self.workers = self._fit_workers(workers, worker_cpus, worker_gpus)
        self.window = window or 2 * self.workers
        self.max_retries = max_retries
        self.task_timeout = task_timeout
        self.device = "cuda" if worker_gpus > 0 else "cpu"
        self.actor_class = self.ray.remote(num_cpus=worker_cpus, num_gpus=worker_gpus, max_restarts=0)(_Worker)
        self.threads = max(1, int(worker_cpus))
        self.version = code_version()
        self.numbers = 0
        self.live: list[_Actor] = []
        self.starting: list[_Actor] = []
        self.waiting: deque[_Entry] = deque()  # submitted, not yet sent to a worker
        self.order: deque[_Entry] = deque()  # submitted, not yet handed out: submission order
        self.versions = 0
        self.retried = 0  # tasks run again because their worker died
        self.lost: list[str] = []  # nodes of the workers lost
        self.finished: Counter[str] = Counter()  # units finished per node
        self.no_worker_since: float | None = None
        self.announce = announce
        self.bar = None
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(unit="unit", desc="ray units", disable=None, dynamic_ncols=True, leave=False)
        try:
            self.starting = [self._new_actor() for _ in range(self.workers)]
            self._await_first_workers()
        except BaseException:
            self.close()
            raise
        nodes = len({actor.node for actor in self.live})
        self.cluster += (f": {self.workers} worker{'s' if self.workers != 1 else ''} on {nodes} "
                         f"node{'s' if nodes != 1 else ''}")
        if announce:
            print(self.cluster, file=sys.stderr, flush=True)

    # --- workers ---------------------------------------------------------------------------------------

    def _fit_workers(self, workers: int | None, cpus: float, gpus: float) -> int:
        return workers_that_fit(self.ray, workers, cpus, gpus)

    def _new_actor(self) -> _Actor:
        self.numbers += 1
        handle = self.actor_class.remote(self.device, self.threads)
        return _Actor(handle, self.numbers, ready=handle.describe.remote())

    def _await_first_workers(self) -> None:
        # Not the task timeout: a worker's start (importing torch and bgtrain, on a cold or busy node)
        # is not a task, and takes seconds to tens of seconds.
        deadline = time.monotonic() + START_TIMEOUT
        while self.starting:
            if time.monotonic() > deadline:
                raise ValueError(f"{len(self.starting)} of {self.workers} Ray workers did not start within "
                                 f"{START_TIMEOUT:g} s (is every node up? `ray status`)")
            self.ray.wait([actor.ready for actor in self.starting], num_returns=len(self.starting),
                          timeout=_POLL_SECONDS)
            self._admit_started(first=True)

    def _admit_started(self, first: bool = False) -> None:
        """Workers that have reported join the pool; one that runs other code is refused by its node."""
        ready, _ = self.ray.wait([actor.ready for actor in self.starting], num_returns=len(self.starting), timeout=0)
        ready = set(ready)
        for actor in [actor for actor in self.starting if actor.ready in ready]:
            self.starting.remove(actor)
            try:
                where = self.ray.get(actor.ready)
            except self.ray.exceptions.RayError as error:
                if first:
                    raise ValueError(f"a Ray worker could not start ({_first_line(error)}): does every node have "
                                     "bgtrain, torch and Ray installed?") from None
                self._kill(actor)
                continue
            actor.node, actor.pid, actor.ready = f"{where['ip']}/{where['node_id'][:8]}", where["pid"], None
            if where["version"] != self.version:
                raise ValueError(f"node {actor.node} runs {where['version']}, this driver runs {self.version}: "
                                 "install the same bgtrain on every node (docs/distributed.md)")
            self.live.append(actor)
        if self.live:
            self.no_worker_since = None
        self._dispatch()

    def _kill(self, actor: _Actor) -> None:
        with contextlib.suppress(Exception):  # it may be only unreachable: free its resources for another
            self.ray.kill(actor.handle)

    def _lose(self, actor: _Actor) -> None:
        """``actor`` died: its tasks go back to the front of the queue, in order, and a replacement is
        asked for (it joins when the cluster can place it)."""
        self.live.remove(actor)
        self._kill(actor)
        self.lost.append(actor.node)
        for entry in reversed(actor.sent):
            entry.attempts += 1
            self.retried += 1
            if entry.attempts > self.max_retries:
                raise ClusterError(f"task {entry.key!r} ({entry.unit.name}) lost its worker {entry.attempts} times, "
                                   f"the last on node {actor.node}: giving up")
            entry.reference = None
            self.waiting.appendleft(entry)
        actor.sent.clear()
        if len(self.live) + len(self.starting) < self.workers:
            self.starting.append(self._new_actor())
        if not self.live and self.no_worker_since is None:
            self.no_worker_since = time.monotonic()

    @property
    def actors(self) -> list:
        """The live workers' actor handles."""
        return [actor.handle for actor in self.live]

    def worker_pids(self) -> list[int]:
        return self.ray.get([actor.pid.remote() for actor in self.actors])

    def worker_nodes(self) -> list[str]:
        """Each live worker's node, ``IP/node-id-prefix``."""
        return [actor.node for actor in self.live]

    # --- tasks -----------------------------------------------------------------------------------------

    def share(self, context: Any) -> Shared:
        self.versions += 1
        return Shared(self.versions, self.ray.put(context))

    def submit(self, unit: WorkUnit, shared: Shared, key: Any, task: Any) -> None:
        entry = _Entry(key, unit, shared, task)
        self.order.append(entry)
        self.waiting.append(entry)
        self._dispatch()

    def _dispatch(self) -> None:
        """Send waiting tasks, in order, to the live workers with room, the least loaded first."""
        while self.waiting and self.live:
            actor = min(self.live, key=lambda candidate: len(candidate.sent))
            if len(actor.sent) >= PER_WORKER:
                return
            entry = self.waiting.popleft()
            entry.reference = actor.handle.run.remote(entry.unit, entry.shared.version, [entry.shared.payload],
                                                      entry.task)
            if not actor.sent:
                actor.head_since = time.monotonic()
            actor.sent.append(entry)

    def next_result(self) -> tuple[Any, dict]:
        entry = self.order[0]
        while entry.result is _PENDING:
            self._collect()
        self.order.popleft()
        return entry.key, entry.result

    def _collect(self) -> None:
        """Wait (briefly) for any task sent or worker starting; take every result that is ready."""
        ray = self.ray
        references = {entry.reference: (actor, entry) for actor in self.live for entry in actor.sent}
        watched = [*references, *(actor.ready for actor in self.starting)]
        if watched:
            ray.wait(watched, num_returns=1, timeout=self._wait_seconds())
            ready, _ = ray.wait(watched, num_returns=len(watched), timeout=0)
        else:
            time.sleep(_POLL_SECONDS)
            ready = []
        for reference in ready:
            if reference not in references:
                continue
            actor, entry = references[reference]
            if actor not in self.live:
                continue  # lost while handling an earlier result: its tasks are queued again
            try:
                entry.result = ray.get(reference)
            except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError, ray.exceptions.WorkerCrashedError,
                    ray.exceptions.NodeDiedError):
                self._lose(actor)
                continue
            except ray.exceptions.RayTaskError as error:
                cause = getattr(error, "cause", None)
                raise (cause if isinstance(cause, Exception) else error) from None
            actor.sent.remove(entry)
            actor.head_since = time.monotonic()
            self.finished[actor.node] += 1
            self._show_progress()
        if self.starting:
            self._admit_started()
        self._dispatch()
        self._check_time()

    def _wait_seconds(self) -> float:
        if self.task_timeout is None:
            return _POLL_SECONDS
        now = time.monotonic()
        ends = [actor.head_since + self.task_timeout - now for actor in self.live if actor.sent]
        return max(0.01, min([_POLL_SECONDS, *ends]))

    def _check_time(self) -> None:
        now = time.monotonic()
        if self.task_timeout is not None:
            for actor in self.live:
                if actor.sent and now - actor.head_since > self.task_timeout:
                    entry = actor.sent[0]
                    raise ClusterError(f"task {entry.key!r} ({entry.unit.name}) on node {actor.node} (worker pid "
                                       f"{actor.pid}) did not finish within --task-timeout {self.task_timeout:g} s")
        limit = self.task_timeout or NO_WORKER_TIMEOUT
        if self.no_worker_since is not None and now - self.no_worker_since > limit:
            entry = self.waiting[0] if self.waiting else None
            task = f"task {entry.key!r} ({entry.unit.name})" if entry else "the job"
            raise ClusterError(f"no Ray worker left for {limit:g} s (lost on node {', '.join(sorted(set(self.lost)))}; "
                               f"no replacement could be placed): {task} cannot run")

    def _show_progress(self) -> None:
        if self.bar is None:
            return
        self.bar.update(1)
        self.bar.set_postfix_str(", ".join(f"{node}: {count}" for node, count in sorted(self.finished.items())))

    def pending(self) -> int:
        return len(self.order)

    def cancel(self) -> None:
        """Drop every task submitted and not yet taken: Ray is asked to cancel those sent (one that runs
        finishes on its worker, and its result is never fetched)."""
        for actor in self.live:
            for entry in actor.sent:
                with contextlib.suppress(Exception):
                    self.ray.cancel(entry.reference)
            actor.sent.clear()
        self.waiting.clear()
        self.order.clear()

    def close(self) -> None:
        for actor in [*self.live, *self.starting]:
            self._kill(actor)
        self.live, self.starting, self.waiting, self.order = [], [], deque(), deque()
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.announce and self.finished:
            print(self.summary(), file=sys.stderr, flush=True)
            self.announce = False
        if self.started_cluster:
            self.ray.shutdown()
            self.started_cluster = False

    def summary(self) -> str:
        """One line: units finished per node, and the workers lost."""
        done = ", ".join(f"{node}: {count}" for node, count in sorted(self.finished.items())) or "none"
        lost = f"; workers lost on {', '.join(self.lost)} ({self.retried} tasks run again)" if self.lost else ""
        return f"ray: units finished per node: {done}{lost}"


def workers_that_fit(ray, workers: int | None, cpus: float, gpus: float) -> int:
    """``workers`` (None: as many as the cluster's resources hold) of ``cpus`` CPUs and ``gpus`` GPUs each;
    a ValueError of one line when they do not fit the cluster."""
    resources = ray.cluster_resources()
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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__

