"""Supervised training on N workers with Ray Train (``train.method = "supervised"``, ``[executor] mode =
"ray"``): one model, data-parallel, equal to the single-process run (``bgtrain.training.supervised``)
within float tolerance at the same global batch.

The order of samples: the single-process order, split by rank. Every worker draws the same epoch order
from the same generator (``torch.randperm`` under run.seed + 1, as one process does), so the global
batch of step t is ``order[t * batch_size : (t + 1) * batch_size]`` on 1 process and on N workers alike;
worker k computes the loss of its rows ``k::N`` of that batch. Its loss is the sum over its rows divided
by the global batch's element count, so the gradients summed over the workers (one ``all_reduce`` of
every gradient in one flat buffer, gloo on CPU, NCCL when each worker has a GPU) are the single
process's mean gradient, up to the order of the float sums; AdamW then takes the same step on every
worker. The last batch of an epoch may be smaller than the others, and a worker's part may then be
empty: its gradient is zero and the sum is still right (a mean of the workers' means would not be).

The data: the driver loads the datasets and splits off the held-out rows (``split_dataset``, as one
process does) and puts the training rows (positions and labels as numpy arrays) into Ray's object
store once; every worker fetches them from there (once per node) and encodes them. No worker opens a
path of the driver's: not the datasets, nor ``init_from``, nor the checkpoint of a resume (the
starting state travels in the object store too), so the nodes need no shared disk. Each worker holds
every training row, because the single-process order can put any row into any worker's part of a
batch; what the workers split is the work of each step.

What stays on the driver: the run directory, its lock, the checkpoints (``epoch_N.pt``, ``latest.pt``,
``final.pt``, written as one process writes them, by ``supervised.end_epoch``), TensorBoard, the
held-out loss, the benchmark's error rates and the final strength check. After each epoch worker 0
sends the whole training state (weights, AdamW's state, the generator, the counters) through a queue
actor to the driver, which writes it while the workers go on with the next epoch. A signal (Ctrl-C,
SIGTERM) to the driver is passed to worker 0, which adds it to the next step's ``all_reduce``; every
worker stops before the same step, and the driver saves ``latest.pt`` at that point inside the epoch,
from which ``--resume`` continues exactly (the same order is drawn again from the saved generator).
A driver killed outright resumes from its last epoch checkpoint; its workers end with its Ray job.
"""

from __future__ import annotations

import queue as queues
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import torch

from bgtrain.distributed.version import code_version
from bgtrain.model.checkpoint import save_checkpoint
from bgtrain.model.network import ValueNetwork
from bgtrain.training.config import Config, config_from_dict, config_to_dict
from bgtrain.training.heldout import split_dataset
from bgtrain.training.run_directory import RunDirectory
from bgtrain.training.schedule import loss_function, supervised_learning_rate
from bgtrain.training.stop_signals import StopSignals, resume_hint
from bgtrain.training.supervised import (
    encode_all,
    end_epoch,
    open_writer,
    start_state,
)
from engine.variants import get_rules

STOP_POLL_SECONDS = 0.1  # how often worker 0 asks the driver whether to stop (a remote call, about 1 ms)
MESSAGE_WAIT_SECONDS = 0.5  # how long the driver waits for a message before it looks at signals and the trainer


def train_supervised_ray(config: Config, directory: RunDirectory, resume: str | Path | None = None,
                         progress: bool = True, stop: StopSignals | None = None) -> Path:
    """Train (or resume) ``config`` on Ray Train workers (module docstring) in the locked run ``directory``;
    returns the final checkpoint's path, as ``train_supervised`` does."""
    from tqdm import tqdm

    from bgtrain.datasets import load_datasets
    from bgtrain.distributed.ray_executor import connect, workers_that_fit

    supervised, settings = config.supervised, config.executor
    if not supervised.datasets:
        raise ValueError("[supervised] datasets is empty: name at least one dataset directory")
    if supervised.sibling_weight:
        raise ValueError("[supervised] sibling_weight: the move-choice term trains in one process only; "
                         "drop --executor ray for this run")
    if 0 < settings.worker_gpus < 1 or settings.worker_gpus != int(settings.worker_gpus):
        raise ValueError(f"[executor] worker_gpus = {settings.worker_gpus:g}: Ray Train gives each worker whole GPUs "
                         "(NCCL needs a GPU of its own per rank); use 0 (CPUs, gloo) or 1 (a GPU a worker, NCCL)")
    rules = get_rules(config.run.variant)
    training, held = split_dataset(load_datasets(list(supervised.datasets)), config)
    state = start_state(config, resume, torch.device("cpu"))  # the driver's copy: what its checkpoints hold
    directory.checkpoints.mkdir(parents=True, exist_ok=True)
    held_encoded = encode_all(state.network, held.positions, rules)
    held_targets = held.targets.clamp(0.0, 1.0)

    import ray
    from ray.util.queue import Queue

    joined_here = not ray.is_initialized()  # a library caller's own Ray session stays open
    _, cluster = connect(settings.address or None)  # keeps this process's signal handlers (StopSignals')
    storage = Path(tempfile.mkdtemp(prefix="bgtrain-ray-train-"))  # Ray Train's run records (on the driver)
    bar = None
    try:
        workers = workers_that_fit(ray, settings.workers or None, settings.worker_cpus, settings.worker_gpus)
        print(f"{cluster}: Ray Train, {workers} worker{'s' if workers != 1 else ''}", file=sys.stderr, flush=True)
        messages = Queue(maxsize=2, actor_options={"num_cpus": 0})  # worker 0 to the driver: epochs, a stop
        control = Queue(maxsize=1, actor_options={"num_cpus": 0})  # the driver to worker 0: stop
        setup = {
            "config": config_to_dict(config),
            "version": code_version(),
            "threads": max(1, int(settings.worker_cpus)),
            "gpu": settings.worker_gpus >= 1,
            # Boxed in lists, so that Ray hands the workers references and each fetches the bytes itself.
            "data": [ray.put({"positions": training.positions.numpy(),
                              "targets": training.targets.clamp(0.0, 1.0).numpy()})],
            "state": [ray.put(_training_state(state))],
            "messages": messages,
            "control": control,
        }
        trainer = _trainer(setup, workers, settings, storage, config.run.name)
        outcome: dict[str, BaseException] = {}
        fitting = threading.Thread(target=_fit, args=(trainer, outcome), name="ray-train-fit", daemon=True)
        # Not on this thread: Ray Train's fit() puts its own SIGINT handler over StopSignals' on the main one.
        fitting.start()
        writer = open_writer(config, directory, state, resume is not None)
        bar = tqdm(total=supervised.epochs, initial=state.counters["epochs"], unit="epoch", disable=not progress,
                   dynamic_ncols=True)
        asked_to_stop = False
        while state.counters["epochs"] < supervised.epochs:
            if stop is not None and stop.received is not None and not asked_to_stop:
                control.put(True)  # worker 0 reads it within STOP_POLL_SECONDS; all stop at the same step
                asked_to_stop = True
            try:
                message = messages.get(timeout=MESSAGE_WAIT_SECONDS)
            except queues.Empty:
                message = None
            if message is None:
                if not fitting.is_alive() and messages.empty():
                    raise _failure(outcome, "the Ray Train workers ended before the last epoch")
                continue
            _load_training_state(state, message)
            if message["kind"] == "stopped":
                bar.close()
                fitting.join()
                writer.close()
                point = message["within_epoch"]
                latest = directory.path / "latest.pt"
                save_checkpoint(latest, state.payload(config, rules, training, True, point))
                stop.stopped(resume_hint(latest, f"epoch {state.counters['epochs']} + {point['start']:,} of "
                                                 f"{len(training):,} positions"))
            held_value = end_epoch(state, config, rules, directory, writer, training, held_encoded, held_targets,
                                   message["train_loss"], held.groups)
            bar.update(1)
            bar.set_postfix_str(f"train {message['train_loss']:.4f}"
                                + (f" held-out {held_value:.4f}" if held_targets.shape[0] else ""))
        fitting.join()
        if "error" in outcome:
            raise _failure(outcome, "Ray Train failed after the last epoch")
        bar.close()
        writer.close()
        return save_checkpoint(directory.path / "final.pt", state.payload(config, rules, training, False))
    finally:
        if bar is not None:
            bar.close()
        if joined_here:  # an orderly disconnect (and the private cluster's end), not the interpreter's exit hooks
            ray.shutdown()
        shutil.rmtree(storage, ignore_errors=True)


def _trainer(setup: dict[str, Any], workers: int, settings, storage: Path, name: str):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    resources = {"CPU": settings.worker_cpus, **({"GPU": settings.worker_gpus} if settings.worker_gpus else {})}
    return TorchTrainer(
        _train_loop_per_worker,
        train_loop_config=setup,
        scaling_config=ScalingConfig(num_workers=workers, use_gpu=setup["gpu"], resources_per_worker=resources),
        torch_config=TorchConfig(backend="nccl" if setup["gpu"] else "gloo"),
        # No retries: a worker lost mid-run ends the run, which resumes from its last epoch checkpoint.
        run_config=RunConfig(name=name or "bgtrain", storage_path=str(storage),
                             failure_config=FailureConfig(max_failures=0)),
    )


def _fit(trainer, outcome: dict[str, BaseException]) -> None:
    try:
        trainer.fit()
    except BaseException as error:  # noqa: BLE001 -- handed to the driver's thread, which says it in one line
        outcome["error"] = error


def _failure(outcome: dict[str, BaseException], what: str) -> ValueError:
    """One line for a failed run: the first worker's error when there is one."""
    error = outcome.get("error")
    if error is None:
        return ValueError(what)
    failures = getattr(error, "worker_failures", None) or {}
    cause = next(iter(failures.values()), error)
    cause = getattr(cause, "cause", None) or cause  # a RayTaskError carries the worker's own exception
    text = str(cause).strip().splitlines()
    return ValueError(f"Ray Train: {text[-1][:300] if text else type(cause).__name__}")


def _to_cpu(value: Any) -> Any:
    """``value`` with every tensor in it on the CPU (a GPU worker's state, sent to the driver)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _to_cpu(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(item) for item in value)
    return value


def _training_state(state) -> dict[str, Any]:
    """The driver's starting state for the workers (a new run's, or a resume's)."""
    return _worker_state(state.network, state.optimizer, state.shuffle, state.counters,
                         within_epoch=state.within_epoch)


def _load_training_state(state, sent: dict[str, Any]) -> None:
    state.network.load_state_dict(sent["network"])
    state.optimizer.load_state_dict(sent["optimizer"])
    state.shuffle.set_state(sent["shuffle"])
    state.counters.update(sent["counters"])


def _train_loop_per_worker(setup: dict[str, Any]) -> None:
    """One Ray Train worker: the single-process loop of ``bgtrain.training.supervised`` on its rows of
    every global batch, the gradients summed over the workers (module docstring)."""
    import ray
    import ray.train
    import ray.train.torch
    from torch import distributed

    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    torch.set_num_threads(setup["threads"])
    if code_version() != setup["version"]:
        raise ValueError(f"node {ray.util.get_node_ip_address()} runs {code_version()}, this driver runs "
                         f"{setup['version']}: install the same bgtrain on every node (docs/distributed.md)")
    config = config_from_dict(setup["config"])
    supervised = config.supervised
    rules = get_rules(config.run.variant)
    device = ray.train.torch.get_device() if setup["gpu"] else torch.device("cpu")
    data = ray.get(setup["data"][0])
    sent = ray.get(setup["state"][0])
    network = ValueNetwork(config.model.encoder, config.model.hidden, config.model.activation)
    network.load_state_dict(sent["network"])
    network.to(device)
    optimizer = torch.optim.AdamW(network.parameters(), lr=supervised.learning_rate,
                                  weight_decay=supervised.weight_decay)
    optimizer.load_state_dict(sent["optimizer"])
    shuffle = torch.Generator().set_state(sent["shuffle"])
    counters, within_epoch = dict(sent["counters"]), sent["within_epoch"]
    encoded = encode_all(network, torch.from_numpy(data["positions"]), rules).to(device)
    targets = torch.from_numpy(data["targets"]).to(device)
    size, outputs = encoded.shape[0], targets.shape[1]
    steps_per_epoch = -(-size // supervised.batch_size)
    loss = loss_function(supervised.loss)
    parameters = list(network.parameters())
    messages, control = setup["messages"], setup["control"]
    polled, stop_next = time.monotonic(), False
    while counters["epochs"] < supervised.epochs:
        started = time.perf_counter()
        network.train()
        epoch_shuffle = shuffle.get_state()
        order = torch.randperm(size, generator=shuffle).to(device)
        first, total = (0, 0.0) if within_epoch is None else (within_epoch["start"], within_epoch["total"])
        within_epoch = None
        for start in range(first, size, supervised.batch_size):
            if stop_next:  # every worker learnt it from the same all_reduce: all stop before this step
                if rank == 0:
                    counters["train_seconds"] += time.perf_counter() - started
                    point = {"shuffle": epoch_shuffle, "start": start, "total": total}
                    messages.put(_worker_state(network, optimizer, shuffle, counters, kind="stopped",
                                               within_epoch=point))
                return
            for group in optimizer.param_groups:
                group["lr"] = supervised_learning_rate(config, counters["steps"], steps_per_epoch)
            batch = order[start : start + supervised.batch_size]
            mine = batch[rank::world]
            loss_sum = loss(network.forward_encoded(encoded.index_select(0, mine)), targets.index_select(0, mine),
                            reduction="sum")
            optimizer.zero_grad(set_to_none=False)
            # The global batch's mean: this worker's sum over the batch's element count (not its own rows').
            (loss_sum / (batch.numel() * outputs)).backward()
            asked = 0.0
            if rank == 0 and time.monotonic() - polled >= STOP_POLL_SECONDS:
                polled, asked = time.monotonic(), float(not control.empty())
            flat = torch.cat([*(parameter.grad.reshape(-1) for parameter in parameters),
                              loss_sum.detach().reshape(1), torch.tensor([asked], device=device)])
            distributed.all_reduce(flat)  # one call for every gradient, the batch's loss and the stop flag
            offset = 0
            for parameter in parameters:
                parameter.grad.copy_(flat[offset : offset + parameter.numel()].view_as(parameter))
                offset += parameter.numel()
            optimizer.step()
            total += float(flat[-2]) / outputs  # the batch's summed loss per position, as one process adds it
            stop_next = bool(flat[-1] > 0)
            counters["steps"] += 1
        counters["epochs"] += 1
        counters["positions"] += size
        counters["train_seconds"] += time.perf_counter() - started
        if rank == 0:
            messages.put(_worker_state(network, optimizer, shuffle, counters, kind="epoch", train_loss=total / size))


def _worker_state(network, optimizer, shuffle, counters, **extra: Any) -> dict[str, Any]:
    """What travels between the driver and the workers: weights, AdamW's state, the generator, counters."""
    return {"network": _to_cpu(network.state_dict()), "optimizer": _to_cpu(optimizer.state_dict()),
            "shuffle": shuffle.get_state(), "counters": dict(counters), **extra}
