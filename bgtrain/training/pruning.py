"""Training a model's pruning networks (``bgtrain.model.pruning``) and attaching them to its checkpoint.

A pruning network only has to rank a roll's plays roughly as the full model's 0-ply does, on the
positions after plays (``bgtrain dataset plays``: the positions after the best plays and some others,
exactly what the search's inner choices compare). Its labels cost nothing: they are the full model's own
0-ply outputs on those positions (the bare network, as a distillation's teacher), computed here, so a
dataset labelled by another model serves as positions only. One small network a phase, on the cheap
Tesauro inputs by default, is fitted by binary cross-entropy on the five outcome probabilities with Adam
and a cosine-decaying rate; a held-out share of the positions measures it (the loss, and the root mean
square of its cubeless equity's difference from the model's).

A phase whose network is another checkpoint's own, weight for weight (a plan that retrains contact and
keeps its start's race network), keeps that checkpoint's pruning network (``kept_pruning_network``): it was
fitted to the same function, so fitting it again would only cost positions of that phase.

``attach_pruning`` writes a copy of the model's checkpoint with the networks as its ``pruning`` entry
(``bgtrain prune MODEL --positions DIR --out PATH [--keep PHASE=CHECKPOINT]``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from bgtrain.model.checkpoint import load_checkpoint, save_checkpoint
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from bgtrain.model.pruning import PRUNING, pruning_entry
from bgtrain.outcomes import cubeless_equity
from bgtrain.training.schedule import cosine_decay, loss_function
from engine.position_kinds import PHASE_NAMES, PHASES, position_phases
from engine.rules import Rules

LABEL_CHUNK = 65536  # positions labelled by the model at once
# A phase's pruning network fitted on a few thousand positions ranks that phase's plays far from the model it
# prunes for, and the search then values the replies it keeps instead of the best: the default's race network
# of 3,525 positions (equity rms 0.41 against the model) made its 2-ply race error 0.67 x 1000, worse than its
# 0-ply's 0.59; refitted on 203,165 (rms 0.048), 0.11. Positions after plays of every phase are free to make.
MIN_POSITIONS = 10_000


@dataclass(frozen=True)
class PruningTraining:
    """How the pruning networks are fitted: ``encoder`` and ``hidden`` units of each phase's network,
    ``epochs`` over the positions in minibatches of ``batch_size``, Adam at ``learning_rate`` decaying
    (cosine) to a hundredth, a ``heldout`` share of the positions kept out to measure, ``seed``; a phase
    with fewer than ``min_positions`` positions is refused (``MIN_POSITIONS``)."""

    encoder: str = "tesauro198"
    hidden: int = 16
    epochs: int = 4
    batch_size: int = 256
    learning_rate: float = 0.003
    heldout: float = 0.05
    seed: int = 1
    min_positions: int = MIN_POSITIONS

    def __post_init__(self) -> None:
        for name in ("hidden", "epochs", "batch_size", "min_positions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"pruning training: {name} must be an integer >= 1, not {value!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"pruning training: learning_rate must be > 0, not {self.learning_rate!r}")
        if not 0 < self.heldout < 1:
            raise ValueError(f"pruning training: heldout must be between 0 and 1, not {self.heldout!r}")


@torch.no_grad()
def model_labels(model, positions: torch.Tensor, rules: Rules) -> torch.Tensor:
    """The model's bare 0-ply outcome probabilities of ``positions`` (``int8[N, 28]``): ``float32[N, 5]``."""
    return torch.cat([model.evaluate(chunk, rules).to(torch.float32) for chunk in positions.split(LABEL_CHUNK)])


def fit_network(positions: torch.Tensor, targets: torch.Tensor, settings: PruningTraining,
                rules: Rules) -> tuple[ValueNetwork, dict[str, float]]:
    """One phase's pruning network fitted to ``targets`` (``float32[N, 5]``) of ``positions``, and its
    held-out figures: ``positions``, ``heldout_loss``, ``equity_rms``."""
    generator = torch.Generator().manual_seed(settings.seed)
    order = torch.randperm(positions.shape[0], generator=generator)
    heldout = max(1, round(settings.heldout * positions.shape[0]))
    test, train = order[:heldout], order[heldout:]
    if train.numel() == 0:
        raise ValueError(f"pruning training: {positions.shape[0]} position(s) of a phase are too few to train on")
    with torch.random.fork_rng():
        torch.manual_seed(settings.seed)
        network = ValueNetwork(settings.encoder, [settings.hidden], "sigmoid")
    optimizer = torch.optim.Adam(network.parameters(), lr=settings.learning_rate)
    loss = loss_function("bce")
    steps_per_epoch = math.ceil(train.numel() / settings.batch_size)
    total = settings.epochs * steps_per_epoch
    step = 0
    network.train()
    for _ in range(settings.epochs):
        shuffled = train[torch.randperm(train.numel(), generator=generator)]
        for batch in shuffled.split(settings.batch_size):
            for group in optimizer.param_groups:
                group["lr"] = cosine_decay(settings.learning_rate, 0.01, step / total)
            optimizer.zero_grad(set_to_none=True)
            loss(network(positions[batch], rules), targets[batch]).backward()
            optimizer.step()
            step += 1
    network.eval()
    with torch.no_grad():
        predicted = network.evaluate(positions[test], rules)
        difference = cubeless_equity(predicted, rules) - cubeless_equity(targets[test], rules)
        figures = {"positions": int(positions.shape[0]),
                   "heldout_loss": float(loss(predicted.clamp(0, 1), targets[test])),
                   "equity_rms": float(difference.double().pow(2).mean().sqrt())}
    return network, figures


def same_network(first: torch.nn.Module, second: torch.nn.Module) -> bool:
    """Whether two networks are one function by construction: the same architecture and every weight equal."""
    if first.model_args() != second.model_args():
        return False
    ours, theirs = first.state_dict(), second.state_dict()
    return ours.keys() == theirs.keys() and all(torch.equal(ours[name], theirs[name]) for name in ours)


def kept_pruning_network(model: PhaseNetwork, phase: str, source: str | Path) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The pruning network of ``phase`` in the phase model checkpoint at ``source``, for ``model`` whose
    ``phase`` network is ``source``'s (checked weight for weight, or a ValueError in one line), and its
    figures as ``source`` recorded them, with ``kept_from``."""
    if phase not in PHASE_NAMES:
        raise ValueError(f"keeping a pruning network: {phase!r} is no phase; the phases are {', '.join(PHASE_NAMES)}")
    loaded = load_model(source)
    if not isinstance(loaded.model, PhaseNetwork) or loaded.pruning is None:
        raise ValueError(f"keeping the {phase} pruning network of {source}: it is not a phase model with pruning networks")
    if not same_network(model.phases[phase], loaded.model.phases[phase]):
        raise ValueError(f"keeping the {phase} pruning network of {source}: the model's {phase} network is not "
                         f"{source}'s, and its pruning network ranks plays for that one; fit it instead")
    recorded = ((loaded.payload[PRUNING].get("trained") or {}).get("phases") or {}).get(phase) or {}
    return loaded.pruning.phases[phase], {**recorded, "kept_from": str(source)}


def fit_pruning_networks(model, positions: torch.Tensor | None, settings: PruningTraining, rules: Rules,
                         kept: dict[str, str | Path] | None = None) -> tuple[PhaseNetwork, dict[str, dict[str, Any]]]:
    """A pruning network a phase, fitted to ``model``'s 0-ply on the ``positions`` of that phase
    (``int8[N, 28]``, side to move) or, for a phase in ``kept`` (phase: checkpoint), that checkpoint's
    (``kept_pruning_network``), and each phase's figures (``fit_network``'s held-out ones, or the kept
    network's as recorded)."""
    kept = dict(kept or {})
    networks, report = {}, {}
    for phase, source in kept.items():  # every kept network checked before any is fitted
        networks[phase], report[phase] = kept_pruning_network(model, phase, source)
    fitted = [(kind, name) for kind, name in zip(PHASES, PHASE_NAMES) if name not in kept]
    if fitted and positions is None:
        raise ValueError(f"pruning training: name the positions the {', '.join(name for _, name in fitted)} "
                         "network(s) are fitted on")
    phase = position_phases(positions) if fitted else None
    needed = max(settings.min_positions, 2)  # fit_network holds one out, so two at the least
    for kind, name in fitted:  # every phase checked before any is fitted
        count = int((phase == kind).sum())
        if count < needed:
            raise ValueError(f"pruning training: the positions hold {count:,} {name} position(s), fewer than the "
                             f"{needed:,} a phase needs to rank its plays (add a dataset with {name} "
                             f"positions, e.g. `bgtrain dataset plays` of {name} self-play, or lower min_positions)")
    for kind, name in fitted:
        rows = positions[phase == kind]
        networks[name], report[name] = fit_network(rows, model_labels(model, rows, rules), settings, rules)
    return PhaseNetwork({name: networks[name] for name in PHASE_NAMES}).eval(), {name: report[name] for name in PHASE_NAMES}


def attach_pruning(model_path: str | Path, networks: PhaseNetwork, trained: dict[str, Any],
                   path: str | Path) -> Path:
    """Write the checkpoint at ``model_path`` again at ``path``, with ``networks`` as its pruning entry
    (replacing any it had); the model's own entries are copied as they are."""
    if Path(path).resolve() == Path(model_path).resolve():
        raise ValueError(f"{path}: write the model with pruning networks to a new file, not over {model_path}")
    payload = load_checkpoint(model_path)
    payload[PRUNING] = pruning_entry(networks, trained)
    return save_checkpoint(path, payload)


def training_record(settings: PruningTraining, model_path: str | Path, datasets: list[str],
                    report: dict[str, dict[str, float]], seconds: float) -> dict[str, Any]:
    """What the checkpoint's pruning entry records of how its networks were made."""
    return {"settings": asdict(settings), "teacher": str(model_path), "datasets": list(datasets),
            "phases": report, "train_seconds": round(seconds, 1)}
