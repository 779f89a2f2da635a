"""A small async batching queue in front of the evaluator: concurrent requests are evaluated together.

Each request handler ``await``s ``BatchQueue.submit(job, key, item)``. One worker task takes the first
waiting request, then keeps taking more for up to ``max_wait`` seconds or until ``max_batch`` are in
hand, groups them by ``(job, key)`` (e.g. ``("move", (variant, ply))``) and runs each group's batch
function once, in one worker thread, so that the event loop keeps accepting requests while the network
runs. A batch function takes the group's items and returns one result per item (or raises: then every
request of that group gets the error). Requests answered in order of arrival within a group.

Why a thread and not a process: the network is torch, which releases the GIL in its kernels, and one
evaluation at a time is what a CPU-bound evaluator can do anyway; batching is what buys throughput
(one forward pass for 64 positions costs far less than 64 passes of one).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

BatchFunction = Callable[[Hashable, Sequence[Any]], Sequence[Any]]


class BatchQueue:
    def __init__(self, jobs: dict[str, BatchFunction], max_batch: int = 256, max_wait: float = 0.002) -> None:
        if max_batch < 1 or max_wait < 0:
            raise ValueError("max_batch must be >= 1 and max_wait >= 0")
        self.jobs = jobs
        self.max_batch = max_batch
        self.max_wait = max_wait
        self.queue: asyncio.Queue | None = None
        self.worker: asyncio.Task | None = None
        self.batches = 0
        self.items = 0

    async def start(self) -> None:
        self.queue = asyncio.Queue()
        self.worker = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            try:
                await self.worker
            except asyncio.CancelledError:
                pass
            self.worker = None

    async def submit(self, job: str, key: Hashable, item: Any) -> Any:
        if job not in self.jobs:
            raise KeyError(f"no batch function for {job!r}")
        if self.queue is None:
            await self.start()
        future = asyncio.get_running_loop().create_future()
        await self.queue.put((job, key, item, future))
        return await future

    async def _run(self) -> None:
        while True:
            first = await self.queue.get()
            waiting = [first]
            deadline = time.perf_counter() + self.max_wait
            while len(waiting) < self.max_batch:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                try:
                    waiting.append(await asyncio.wait_for(self.queue.get(), remaining))
                except TimeoutError:
                    break
            groups: dict[tuple, list] = {}
            for job, key, item, future in waiting:
                groups.setdefault((job, key), []).append((item, future))
            for (job, key), members in groups.items():
                items = [item for item, _ in members]
                try:
                    results = await asyncio.to_thread(self.jobs[job], key, items)
                    if len(results) != len(items):
                        raise RuntimeError(f"batch function {job!r} gave {len(results)} results for {len(items)}")
                except Exception as error:  # noqa: BLE001 (every request of the group learns what went wrong)
                    for _, future in members:
                        if not future.done():
                            future.set_exception(error)
                    continue
                self.batches += 1
                self.items += len(items)
                for (_, future), result in zip(members, results):
                    if not future.done():
                        future.set_result(result)
