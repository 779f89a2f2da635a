"""TD training with self-play actors: actors play shards of games with the latest weights they were
sent, the learner trains on them with the single-process learner's own update.

The learner (``DistributedRun``, a ``bgtrain.training.td.Run`` whose ``step`` is one shard) keeps
``window`` shard tasks asked for (``[executor] max_in_flight``, 4 by default, never set by the
executor or its number of actors). Each
task (``bgtrain.distributed.work.SELFPLAY_SHARD``) carries a seed (the run's seed and the shard's
index) and the current weights version: ``shard_games`` games in lock step, ``shard_turns`` turns
recorded, the lambda-returns computed by the actor with those weights over ``train.buffer_turns``
more turns (as the single-process learner's rolling buffer does). The learner takes the shards in
the order it asked for them, trains on each (``Run.learn``: minibatch steps of
``train.minibatch_size``, the learning-rate schedule by games), asks for the next shard, and every
``broadcast_every`` updates sends out a new version of the weights, as numpy arrays, once.

Staleness: a shard's weights are at most ``ceil(window / broadcast_every)`` versions behind the
learner's when it is learned from (it was asked for ``window`` shards earlier); each update logs the
staleness it saw (``charts/staleness``) and the weights version (``charts/weights_version``).

Determinism: the task asked for next depends only on the shards consumed so far, so the whole run is
a function of the config: ``[executor] mode = "process"`` (the tasks run here, lazily, with the
actors' ``int(worker_cpus)`` torch threads) and ``"ray"`` at any number of actors train to the same
weights, to the bit (the learner's own update runs in this process in both). A run killed and
resumed from ``latest.pt`` asks again for the shards it had not learned from, with the weights it
has then: no shard is lost or learned twice, though those shards' staleness differs from an
uninterrupted run's.

Compared with the single-process learner: its game slots run at all phases of a game at once, while
a shard's games all start at the opening and are cut after ``shard_turns + buffer_turns`` turns, so
each shard holds the positions of its first ``shard_turns`` turns, games restarting in their slots;
long shards (``shard_turns`` of a few game lengths, 64 turns or more) make that difference small.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from bgtrain.distributed.executor import make_executor
from bgtrain.distributed.work import SELFPLAY_SHARD, selfplay_context
from bgtrain.model.checkpoint import load_checkpoint
from bgtrain.training.config import Config
from bgtrain.training.schedule import td_learning_rate
from bgtrain.training.td import Run


def shard_seed(run_seed: int, index: int) -> int:
    """The seed of shard ``index`` (its dice; the exploration generator takes the seed + 1)."""
    return ((run_seed & 0xFFFFFFFF) << 32) + 2 * index + 2


class DistributedRun(Run):
    """A training run whose self-play happens in shards on an executor (module docstring)."""

    def __init__(self, config: Config, rules=None, initial_weights: bool = True) -> None:
        if config.train.method != "lambda_return":
            raise ValueError("[executor] mode 'process' or 'ray' trains on lambda-returns: "
                             "it needs train.method = 'lambda_return'")
        super().__init__(config, rules, initial_weights)
        self.shards = 0  # shards learned from; shard tasks are numbered from 0 in the order asked
        self.version = 0  # the weights version the actors are sent
        self.executor = None
        self.asked = 0
        self.shared = None

    def _start(self) -> None:
        settings = self.config.executor
        self.executor = make_executor(
            "process" if settings.mode == "process" else "ray",
            address=settings.address or None,
            workers=settings.workers or None,
            worker_cpus=settings.worker_cpus,
            worker_gpus=settings.worker_gpus,
            device=self.config.run.device,
            window=settings.max_in_flight,
            # An actor plays with int(worker_cpus) torch threads; in process the shards run with as
            # many, so that their float sums, and the weights, are the same to the bit.
            threads=max(1, int(settings.worker_cpus)),
            task_timeout=(settings.task_timeout or None) if settings.mode == "ray" else None,
            announce=True,
        )
        self.window = settings.max_in_flight
        self._share()
        self.asked = self.shards
        while self.asked < self.shards + self.window:
            self._ask()

    def _share(self) -> None:
        self.shared = self.executor.share(selfplay_context(self.network, self.version, self.config))

    def _ask(self) -> None:
        settings = self.config.executor
        task = {"seed": shard_seed(self.config.run.seed, self.asked), "slots": settings.shard_games,
                "turns": settings.shard_turns}
        self.executor.submit(SELFPLAY_SHARD, self.shared, self.asked, task)
        self.asked += 1

    def step(self) -> dict[str, float]:
        """Learn from the next shard (one update); ask for another."""
        if self.executor is None:
            self._start()
        index, shard = self.executor.next_result()
        assert index == self.shards, "shards are learned from in the order they were asked for"
        self.shards += 1
        boards = torch.tensor(shard["boards"], device=self.device)
        target = torch.tensor(shard["targets"], device=self.device)
        self.games += int(shard["games"])
        self.turns += self.config.executor.shard_turns
        staleness = self.version - int(shard["version"])
        metrics = self.learn(boards, target, td_learning_rate(self.config, self.games))
        if self.updates % self.config.executor.broadcast_every == 0:
            self.version += 1
            self._share()
        self._ask()
        return {**metrics, "staleness": float(staleness), "weights_version": float(self.version)}

    def close(self) -> None:
        if self.executor is not None:
            self.executor.close()
            self.executor = None

    def payload(self, with_training_state: bool = True) -> dict[str, Any]:
        payload = super().payload(with_training_state)
        if with_training_state:
            payload["training"]["distributed"] = {"shards": self.shards, "version": self.version}
        return payload

    @classmethod
    def resume(cls, path: str | Path, overrides: Config | None = None) -> DistributedRun:
        run = super().resume(path, overrides)
        progress = load_checkpoint(path)["training"].get("distributed")
        if progress is None:
            raise ValueError(f"{path} is a single-process training state; resume it with [executor] mode = 'local'")
        run.shards, run.version = progress["shards"], progress["version"]
        return run
