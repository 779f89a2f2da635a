"""Supervised training on labelled datasets, top to bottom (``train.method = "supervised"``).

The data: every complete shard of the ``[supervised] datasets`` (``bgtrain.datasets``), restricted to
the position kinds of ``[supervised] kinds``; a fixed fraction (``heldout_fraction``, drawn under
``run.seed`` by row or by position, ``heldout_by``: ``bgtrain.training.heldout``) is held out. The
encoder's units of every training position are computed once.

The loop: ``epochs`` passes, each over a fresh permutation of the training split drawn from the run's
generator, in minibatches of ``batch_size``; AdamW (``learning_rate``, ``weight_decay``) with the
learning rate set every step by the schedule (cosine over all steps, step decay per epoch, or
constant); the loss is binary cross-entropy (or squared error) of the five predicted probabilities
against the labels, plus, with ``sibling_weight``, the move-choice term on ``sibling_groups`` groups of
a plays dataset's rows drawn each step (``bgtrain.training.move_choices``; the draws are keyed by the
run's seed and the step, so a resumed run draws what the uninterrupted one would). A plays dataset's
rows are held out by group, whole move choices at a time, and the student's ``within_roll_error`` on
the held-out groups is logged after each epoch (``eval/within_roll_error``, x 1000).

After each epoch: the training and held-out losses go to TensorBoard (``losses/train``,
``losses/heldout``), as does, with ``evaluation.benchmark``, the move-error rate on the shipped benchmark
(``eval/error_rate/<class>``, ``bgtrain.benchmark.scorer``), and a checkpoint is written with the whole
training state (optimizer, generator, counters), so ``--resume`` continues from the epoch boundary
exactly as an uninterrupted run would. At the end the model plays the configured evaluation (``[evaluation]``, against pubeval).

The network starts from scratch (``run.seed``) or from a checkpoint (``init_from``, e.g. a TD-trained
model with the same architecture); checkpoints have the format of ``bgtrain.model.checkpoint``, so every tool
that takes a model takes the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bgtrain.benchmark.scorer import log_error_rates
from bgtrain.datasets import Dataset, load_datasets
from bgtrain.model.checkpoint import (
    checkpoint_payload,
    load_initial_weights,
    network_from_checkpoint,
    save_checkpoint,
)
from bgtrain.model.network import ValueNetwork
from bgtrain.outcomes import cubeless_equity
from bgtrain.training.config import Config, to_toml_text
from bgtrain.training.heldout import split_dataset
from bgtrain.training.move_choices import (
    MoveChoiceGroups,
    sibling_loss,
    softmax_choice_loss,
    within_roll_error,
)
from bgtrain.training.run_directory import RunDirectory, code_version, load_resume_checkpoint
from bgtrain.training.schedule import loss_function, supervised_learning_rate
from bgtrain.training.stop_signals import StopSignals, resume_hint
from bgtrain.training.strength import evaluate_strength, log_strength
from engine.variants import get_rules

ENCODE_CHUNK = 8192


def initial_network(config: Config) -> ValueNetwork:
    torch.manual_seed(config.run.seed)
    network = ValueNetwork(config.model.encoder, config.model.hidden, config.model.activation)
    if config.supervised.init_from:
        load_initial_weights(network, config.supervised.init_from, "[supervised] init_from")
    return network


def encode_all(network: ValueNetwork, positions: torch.Tensor, rules) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([network.encoder.encode(chunk, rules) for chunk in positions.split(ENCODE_CHUNK)])


def heldout_loss(network: ValueNetwork, encoded: torch.Tensor, targets: torch.Tensor, loss) -> float:
    if not encoded.shape[0]:
        return float("nan")
    network.eval()
    with torch.no_grad():
        total = sum(float(loss(network.forward_encoded(e), t, reduction="sum"))
                    for e, t in zip(encoded.split(ENCODE_CHUNK), targets.split(ENCODE_CHUNK)))
    return total / targets.numel()


@dataclass
class SupervisedState:
    """What a supervised run carries from step to step, and its checkpoints save: shared by this
    process's loop and the driver of Ray Train's (``bgtrain.distributed.ray_train``)."""

    network: ValueNetwork
    optimizer: torch.optim.Optimizer
    shuffle: torch.Generator  # draws each epoch's order; saved after the draw, so a resume draws the next
    counters: dict[str, Any]
    strength: dict[str, Any]
    within_epoch: dict[str, Any] | None = None  # saved on a signal: where in its epoch the run resumes

    def payload(self, config: Config, rules, training: Dataset, with_training_state: bool,
                within_epoch: dict[str, Any] | None = None) -> dict[str, Any]:
        """The checkpoint: the network, the config and counters, with the training state (optimizer,
        generator) unless ``with_training_state`` is false (final.pt); ``within_epoch`` (``shuffle``: the
        generator before the epoch's draw, ``start``, ``total``) marks a checkpoint inside an epoch."""
        state = ({"optimizer": self.optimizer.state_dict(), "shuffle": self.shuffle.get_state()}
                 if with_training_state else None)
        if within_epoch is not None:  # the epoch's order is drawn again from the generator before it
            state.update(shuffle=within_epoch["shuffle"], within_epoch={k: within_epoch[k] for k in ("start", "total")})
        data = checkpoint_payload(self.network, config, rules.name, dict(self.counters), self.strength, code_version(),
                                  state)
        data["datasets"] = [{"path": path, "positions": source["positions"], "labeller": source["labeller"]}
                            for path, source in zip(config.supervised.datasets, training.sources)]
        return data


def start_state(config: Config, resume: str | Path | None, device: torch.device) -> SupervisedState:
    """A new run's state (``initial_network``, AdamW, the shuffle generator under run.seed + 1), or the
    state saved in the checkpoint ``resume``."""
    supervised = config.supervised
    network = initial_network(config).to(device)
    optimizer = torch.optim.AdamW(network.parameters(), lr=supervised.learning_rate,
                                  weight_decay=supervised.weight_decay)
    state = SupervisedState(network, optimizer, torch.Generator().manual_seed(config.run.seed + 1),
                            {"epochs": 0, "steps": 0, "positions": 0, "train_seconds": 0.0, "games": 0, "turns": 0,
                             "updates": 0}, {})
    if resume:
        payload = load_resume_checkpoint(resume, config)
        network.load_state_dict(network_from_checkpoint(payload, str(resume)).state_dict())
        optimizer.load_state_dict(payload["training"]["optimizer"])
        state.shuffle.set_state(payload["training"]["shuffle"])
        state.counters.update(payload["counters"])
        state.strength.update(payload.get("strength", {}))
        state.within_epoch = payload["training"].get("within_epoch")  # saved on a signal, mid-epoch
    return state


def open_writer(config: Config, directory: RunDirectory, state: SupervisedState, resumed: bool):
    """The run's TensorBoard writer (a resume drops the points after its epoch); the hyperparameters once."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(directory.path / "tensorboard"),
                           purge_step=state.counters["epochs"] if resumed else None)
    if not resumed:
        writer.add_text("hyperparameters", "```\n" + to_toml_text(config) + "\n```", 0)
    return writer


def heldout_within_roll_error(network: ValueNetwork, encoded: torch.Tensor, targets: torch.Tensor,
                              groups: torch.Tensor, rules) -> float:
    """``within_roll_error`` of the network on the held-out groups, x 1000 (NaN without one)."""
    if not bool((groups >= 0).any()):
        return float("nan")
    network.eval()
    with torch.no_grad():
        student = torch.cat([cubeless_equity(network.forward_encoded(e), rules) for e in encoded.split(ENCODE_CHUNK)])
    return 1000 * within_roll_error(student.cpu(), cubeless_equity(targets, rules).cpu(), groups.cpu())


def end_epoch(state: SupervisedState, config: Config, rules, directory: RunDirectory, writer, training: Dataset,
              held_encoded: torch.Tensor, held_targets: torch.Tensor, train_loss: float,
              held_groups: torch.Tensor | None = None) -> float:
    """After an epoch (its counters already advanced): the losses and learning rate to TensorBoard, the
    held-out groups' within-roll error, the benchmark's error rates, at the last epoch the strength check,
    and the epoch's checkpoint. Returns the held-out loss (NaN when nothing is held out)."""
    supervised = config.supervised
    network, epoch = state.network, state.counters["epochs"]
    held_value = heldout_loss(network, held_encoded, held_targets, loss_function(supervised.loss))
    writer.add_scalar("losses/train", train_loss, epoch)
    if held_targets.shape[0]:  # heldout_fraction = 0: no held-out loss to record
        writer.add_scalar("losses/heldout", held_value, epoch)
        state.strength["heldout_loss"] = held_value
    if held_groups is not None and bool((held_groups >= 0).any()):
        error = heldout_within_roll_error(network, held_encoded, held_targets, held_groups, rules)
        writer.add_scalar("eval/within_roll_error", error, epoch)
        state.strength["heldout_within_roll_error"] = error
    writer.add_scalar("charts/learning_rate", state.optimizer.param_groups[0]["lr"], epoch)
    if config.evaluation.benchmark:  # eval/error_rate/<class>, as TD training logs it
        log_error_rates(writer, network.eval(), rules, epoch, config.evaluation.benchmark_decisions)
    if epoch >= supervised.epochs:
        state.strength.update(evaluate_strength(network.eval(), config, rules))
        log_strength(writer, state.strength, epoch)
    if epoch % supervised.checkpoint_every_epochs == 0 or epoch >= supervised.epochs:
        directory.save(state.payload(config, rules, training, True), epoch, config.checkpoint.keep_last, unit="epoch")
    return held_value


def move_choice_loss(network: ValueNetwork, siblings: MoveChoiceGroups, encoded: torch.Tensor,
                     teacher_equity: torch.Tensor, config: Config, step: int, rules) -> torch.Tensor:
    """The move-choice term (``sibling_loss`` or ``softmax_choice_loss``) on ``sibling_groups`` groups drawn
    for ``step``: the draw is a function of the run's seed and the step alone, so a run resumed inside an
    epoch draws the same groups."""
    supervised = config.supervised
    generator = torch.Generator().manual_seed((config.run.seed * 1_000_003 + step + 3) % (1 << 63))
    rows, segment = siblings.draw(supervised.sibling_groups, generator)
    rows = rows.to(encoded.device)
    student = cubeless_equity(network.forward_encoded(encoded.index_select(0, rows)), rules)
    teacher, segment = teacher_equity.index_select(0, rows), segment.to(encoded.device)
    if supervised.sibling_loss == "softmax":
        return softmax_choice_loss(student, teacher, segment, supervised.sibling_groups, supervised.sibling_temperature)
    return sibling_loss(student, teacher, segment, supervised.sibling_groups)


def train_supervised(config: Config, directory: RunDirectory, resume: str | Path | None = None,
                     progress: bool = True, stop: StopSignals | None = None) -> Path:
    """Train (or resume) to ``config.supervised.epochs`` epochs in the run ``directory`` (locked and
    started by ``bgtrain.commands.train.train``); returns the final checkpoint's path. On a signal (``stop``) the
    state after the current minibatch is saved in ``latest.pt``, which resumes inside the epoch."""
    from tqdm import tqdm

    supervised = config.supervised
    if not supervised.datasets:
        raise ValueError("[supervised] datasets is empty: name at least one dataset directory")
    rules = get_rules(config.run.variant)
    device = torch.device(config.run.device)
    training, held = split_dataset(load_datasets(list(supervised.datasets)), config)
    state = start_state(config, resume, device)
    network, optimizer, shuffle, counters = state.network, state.optimizer, state.shuffle, state.counters
    run_dir = directory.path
    directory.checkpoints.mkdir(parents=True, exist_ok=True)
    writer = open_writer(config, directory, state, resume is not None)

    loss = loss_function(supervised.loss)
    encoded = encode_all(network, training.positions, rules).to(device)
    # Averages over rolls can stray a rounding error outside [0, 1], which cross-entropy refuses.
    targets = training.targets.clamp(0.0, 1.0).to(device)
    held_encoded = encode_all(network, held.positions, rules).to(device)
    held_targets = held.targets.clamp(0.0, 1.0).to(device)
    siblings = MoveChoiceGroups(training.groups) if supervised.sibling_weight else None
    if siblings is not None and not len(siblings):
        raise ValueError("[supervised] sibling_weight needs a plays dataset (bgtrain dataset plays) among the "
                         "datasets: none of their rows of these kinds is in a group of two or more")
    teacher_equity = cubeless_equity(targets, rules)
    size = encoded.shape[0]
    steps_per_epoch = -(-size // supervised.batch_size)
    bar = tqdm(total=supervised.epochs, initial=counters["epochs"], unit="epoch", disable=not progress,
               dynamic_ncols=True)
    while counters["epochs"] < supervised.epochs:
        started = time.perf_counter()
        network.train()
        epoch_shuffle = shuffle.get_state()
        order = torch.randperm(size, generator=shuffle).to(device)
        within_epoch, state.within_epoch = state.within_epoch, None
        first, total = (0, 0.0) if within_epoch is None else (within_epoch["start"], within_epoch["total"])
        for start in range(first, size, supervised.batch_size):
            if stop is not None and stop.received is not None:
                bar.close()
                counters["train_seconds"] += time.perf_counter() - started
                point = {"shuffle": epoch_shuffle, "start": start, "total": total}
                latest = save_checkpoint(run_dir / "latest.pt", state.payload(config, rules, training, True, point))
                stop.stopped(resume_hint(latest, f"epoch {counters['epochs']} + {start:,} of {size:,} positions"))
            for group in optimizer.param_groups:
                group["lr"] = supervised_learning_rate(config, counters["steps"], steps_per_epoch)
            index = order[start : start + supervised.batch_size]
            batch_loss = loss(network.forward_encoded(encoded.index_select(0, index)), targets.index_select(0, index))
            step_loss = batch_loss if siblings is None else batch_loss + supervised.sibling_weight * move_choice_loss(
                network, siblings, encoded, teacher_equity, config, counters["steps"], rules)
            optimizer.zero_grad(set_to_none=True)
            step_loss.backward()
            optimizer.step()
            total += float(batch_loss.detach()) * index.numel()  # the fit alone: comparable with or without the term
            counters["steps"] += 1
        counters["epochs"] += 1
        counters["positions"] += size
        counters["train_seconds"] += time.perf_counter() - started
        held_value = end_epoch(state, config, rules, directory, writer, training, held_encoded, held_targets,
                               total / size, held.groups)
        bar.update(1)
        bar.set_postfix_str(f"train {total / size:.4f}" + (f" held-out {held_value:.4f}" if held_targets.shape[0] else ""))
    bar.close()
    writer.close()
    final = run_dir / "final.pt"
    save_checkpoint(final, state.payload(config, rules, training, False))
    return final
