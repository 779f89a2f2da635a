"""A generation's plan: frozen, typed dataclasses read from one TOML file (``configs/generation/*.toml``).

Sections: ``[generation]`` (names, directory, output model and lineage, the self-play and labelling
models), ``[[datasets]]`` (self-play positions, their selection and labels), ``[[select]]`` (the positions
of a deeper-labelled dataset where its label and its 0-ply, or a second teacher's label, disagree),
``[[relabel]]`` (optional new labels for a dataset), ``[[plays]]`` (candidate-play datasets, a hook),
``[phases.contact|crashed|race]``
(a supervised training each, or ``[[phases.PHASE]]`` several, an ensemble), ``[pruning]`` (pruning
networks for the model's searches), ``[benchmark]`` (the move-error benchmark) and ``[[head_to_head]]``
(seat-swapped games against other agents). An unknown section or key, or a value of the wrong type, is a
ValueError naming it, like the training config's (``bgtrain.training.config``), whose checks each phase's
training config also passes when the plan is read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bgtrain.datasets.selection import SelectionSettings
from bgtrain.training.config import Config, config_from_dict
from bgtrain.training.config_sections import SIBLING_TEMPERATURE
from bgtrain.training.pruning import MIN_POSITIONS
from engine.position_kinds import PHASE_NAMES

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # a stage name part and a directory name
NETWORK = "network:"  # init_from naming a training of the same plan
_LABELLER = re.compile(r"^(ply:\d+|rollout:\d+(:truncate=\d+)?(:luck=(full|pruned))?(:batch=\d+)?|gnubg:[012])$")


def _name(section: str, value: str) -> None:
    if not _NAME.match(value):
        raise ValueError(f"[{section}] name = {value!r}: must be letters, digits, '.', '_' or '-'")


def _sources(entry) -> tuple[str, ...]:
    """The datasets a derived dataset is made from: its source (without a ``@N``), and a selection's second
    labelling."""
    sources = (entry.source, entry.against) if getattr(entry, "against", "") else (entry.source,)
    return tuple(source.partition("@")[0] for source in sources)


def _derived(section: str, name: str, source: str, what: str) -> None:
    """The checks a dataset made from another shares: its name, and a source named."""
    _name(section, name)
    if not source:
        raise ValueError(f"[{section}] {name}: source: {what} is required")


def _labeller(section: str, value: str, outside: bool = True) -> None:
    """``outside``: GNU Backgammon (``gnubg:N``) may label; not where our model must also pick plays."""
    if not _LABELLER.match(value) or (not outside and value.startswith("gnubg:")):
        choices = "ply:N, rollout:TRIALS[:truncate=K][:luck=pruned][:batch=B]" + (" or gnubg:N" if outside else " (the plays' model labels them)")
        raise ValueError(f"[{section}] labeller = {value!r}: must be {choices}")


@dataclass(frozen=True)
class GenerationSection:
    name: str = ""
    """The generation's name (``gen9``): its directory is ``runs/generations/<name>`` unless ``directory``."""
    directory: str = ""
    """Where the generation lives: its state file, datasets, training runs, results and model."""
    model: str = ""
    """The output model (``checkpoints/bgtrain-gen9.pt``), written once every other stage is done."""
    lineage: str = ""
    """The lineage JSON (``checkpoints/lineage/bgtrain-gen9.json``); default ``<directory>/lineage.json``."""
    self_play_model: str = "checkpoints/bgtrain-supervised.pt"
    """The model whose self-play finds the positions, and which selects and labels them (``dataset generate``)."""
    labelling_model: str = "checkpoints/bgtrain-supervised.pt"
    """The model that labels in ``[[relabel]]`` steps (where not given there)."""

    def __post_init__(self) -> None:
        _name("generation", self.name)
        if not self.model:
            raise ValueError("[generation] model: the output model's path is required")

    @property
    def home(self) -> Path:
        return Path(self.directory or f"runs/generations/{self.name}")

    @property
    def lineage_path(self) -> Path:
        return Path(self.lineage) if self.lineage else self.home / "lineage.json"


@dataclass(frozen=True)
class DatasetSection:
    name: str = ""
    """The dataset's name: it is written to ``<directory>/datasets/<name>``."""
    positions: int = 10_000
    seed: int = 0
    shard_size: int = 5000
    games: int = 512
    """Self-play games in lock step."""
    sample_rate: float = 0.25
    epsilon: float = 0.05
    temperature: float = 0.0
    kinds: tuple[str, ...] = ()
    """Take only positions of these kinds (contact, crashed, race); empty: every kind."""
    select_ply: int = 1
    """Keep a position where its equity at this ply and at 0-ply differ by more than the threshold (0 keeps all)."""
    select_threshold: float = 0.04
    keep_agreeing: float = 0.25
    """Share of the agreeing positions kept anyway."""
    labeller: str = "ply:1"
    """``ply:N`` or ``rollout:TRIALS[:truncate=K][:luck=pruned][:batch=B]`` by the self-play model."""
    model: str = ""
    """The model that plays, selects and labels here; default ``[generation] self_play_model``."""
    opponent: str = ""
    """An agent (e.g. ``gnubg:0ply``) the model plays against instead of itself; only its own turns are taken."""

    def __post_init__(self) -> None:
        _name("datasets", self.name)
        for key in ("positions", "shard_size", "games"):
            if getattr(self, key) <= 0:
                raise ValueError(f"[datasets] {self.name}: {key} = {getattr(self, key)}: must be > 0")
        for kind in self.kinds:
            if kind not in PHASE_NAMES:
                raise ValueError(f"[datasets] {self.name}: kinds: {kind!r} is not one of {', '.join(PHASE_NAMES)}")
        _labeller("datasets", self.labeller)


@dataclass(frozen=True)
class RelabelSection:
    name: str = ""
    """The new dataset's name (``<directory>/datasets/<name>``)."""
    source: str = ""
    """A dataset of this plan by name, or a dataset directory (a path with '/'); ``NAME@N`` or ``DIR@N``:
    its first N shards only (deep labels paid for part of it); ``DIR@A:B``: its shards A to B - 1."""
    labeller: str = "ply:2"
    model: str = ""
    """The labelling model; default ``[generation] labelling_model``."""
    kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _derived("relabel", self.name, self.source, "the dataset to relabel")
        _labeller("relabel", self.labeller)
        for kind in self.kinds:
            if kind not in PHASE_NAMES:
                raise ValueError(f"[relabel] {self.name}: kinds: {kind!r} is not one of {', '.join(PHASE_NAMES)}")


@dataclass(frozen=True)
class SelectSection:
    """The positions of a dataset labelled at 1-ply or deeper where its label and its model's 0-ply (or
    ``against``'s label) disagree (``bgtrain dataset select``, ``bgtrain.datasets.selection``): where a
    deeper label, a ``[[relabel]]`` of this dataset, carries information."""

    name: str = ""
    source: str = ""
    """A dataset of this plan by name (labelled at 1-ply or deeper), or a dataset directory."""
    against: str = ""
    """A relabelling of ``source`` by another teacher (by name or directory): its labels take the place
    of the 0-ply, so the positions kept are those where the two teachers disagree."""
    threshold: float = 0.03
    """Cubeless equity by which the label and the 0-ply (or ``against``'s label) must differ for a
    position to be kept."""
    keep: float = 0.15
    """Share of the other positions kept anyway."""
    shard_size: int = 5000
    seed: int = 0

    def __post_init__(self) -> None:
        _derived("select", self.name, self.source, "the dataset to select from")
        for source in (self.source, self.against):
            if "@" in source:
                raise ValueError(f"[select] {self.name}: {source!r}: a selection reads whole datasets (a relabel "
                                 "takes NAME@N, the first N shards)")
        try:  # the command's own checks of its settings, now rather than when the stage runs
            SelectionSettings(self.threshold, self.keep, 1, self.shard_size, self.seed)
        except ValueError as error:
            raise ValueError(f"[select] {self.name}: {error}") from None


@dataclass(frozen=True)
class PlaysSection:
    """A dataset of the positions after the plays a model ranks (``bgtrain dataset plays``,
    ``bgtrain/datasets/plays.py``): for each position of ``source``, a roll, its ``top`` best plays by the
    labelling model's 0-ply and about ``others`` more, labelled by ``labeller``."""

    name: str = ""
    source: str = ""
    """A dataset of this plan by name, or a dataset directory (a path with '/'), whose positions are used
    (``NAME@N`` or ``DIR@N``: its first N shards)."""
    labeller: str = "ply:0"
    model: str = ""
    """The model that ranks the plays and labels; default ``[generation] labelling_model``."""
    top: int = 6
    others: float = 3.0
    seed: int = 1
    rival: str = ""
    """An agent (``gnubg:0ply``, a model): keep only the rolls where it plays otherwise than the model."""

    def __post_init__(self) -> None:
        _derived("plays", self.name, self.source, "the dataset whose positions are used")
        _labeller("plays", self.labeller, outside=False)
        if self.top < 1 or self.others < 0:
            raise ValueError(f"[plays] {self.name}: top must be >= 1 and others >= 0, not {self.top} and {self.others}")


@dataclass(frozen=True)
class PhaseSection:
    """One network of a phase: its datasets, its start, and the ``[model]`` and ``[supervised]`` fields of
    the training config of the same names (``bgtrain.training.config_sections``)."""

    datasets: tuple[str, ...] = ()
    """Datasets by name (of ``[[datasets]]``, ``[[select]]``, ``[[relabel]]``, ``[[plays]]``) or directory (a path with '/', ``DIR@N`` too)."""
    encoder: str = "gnubg_contact"
    hidden: tuple[int, ...] = (128,)
    activation: str = "sigmoid"
    epochs: int = 10
    batch_size: int = 128
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    lr_schedule: str = "cosine"
    lr_final_fraction: float = 0.02
    loss: str = "bce"
    heldout_fraction: float = 0.05
    heldout_by: str = "row"
    """``[supervised] heldout_by``: "row" or "position" (no held-out position trains through another row)."""
    sibling_weight: float = 0.0
    """The move-choice term's weight (``[supervised] sibling_weight``): the plays datasets' groups."""
    sibling_groups: int = 32
    sibling_loss: str = "mse"
    """``[supervised] sibling_loss``: "mse" or "softmax" (the choices as distributions at ``sibling_temperature``)."""
    sibling_temperature: float = SIBLING_TEMPERATURE
    seed: int = 0
    init_from: str = ""
    """A checkpoint that starts the training; ``network:KEY`` the network another training of this plan
    made (``network:contact``, ``network:crashed.0``; an earlier one in the order contact, crashed, race);
    "" starts from scratch."""
    init_member: int = -1
    """With a phase model as ``init_from``: start from member N of this phase's networks
    (``bgtrain.training.distillation.write_member``); -1 takes ``init_from`` as a single network."""
    widen: int = 0
    """With ``init_member``: the member (of one hidden layer) first gets this many hidden units, its own kept and
    the new ones random under ``seed`` with zero output weights (``bgtrain.training.distillation.widen``);
    with ``deepen`` after it, ``hidden`` is then ``[widen, ...]`` (``[1024, 64]``); 0 keeps its width."""
    deepen: int = 0
    """With ``init_member``: the member gets this many more hidden layers of its last width that pass it
    through unchanged (``bgtrain.training.distillation.deepen``), so the deeper network starts where the
    member is; ``hidden`` and ``activation`` must then be the deepened network's (``[512, 512]``,
    "sigmoid-relu" for a 512-unit sigmoid member and one layer)."""
    deepen_width: int = 0
    """With ``deepen``: the added layers' width; 0 is the member's last width (the pass-through start above).
    Narrower layers and the output layer start random under ``seed`` (``hidden = [512, 128]`` for a
    128-unit layer after a 512-unit member): the member's first layer is kept, its function is not."""
    kinds: tuple[str, ...] = ()
    """The kinds of position it learns from; default the phase's own (a contact network of all kinds
    later starts a crashed one, say)."""
    check_games: int = 200
    """Games against pubeval at the end of the training (the training's own check; the head-to-head
    stages are the generation's)."""
    in_model: bool = True
    """Whether the network is one of its phase's in the model; false for a step that a later network of
    the plan starts from (``init_from = "network:KEY"``), such as a first round of a distillation."""
    train: bool = True
    """False: the network is its start as it is, untrained (the phase of an earlier model kept while the plan
    retrains the others); it needs ``init_from``, and ``datasets`` and the training fields are unused."""


@dataclass(frozen=True)
class PruningSection:
    """Pruning networks attached to the phase model (``bgtrain prune``): small networks that choose the
    few replies a 1- or 2-ply search values in full, as the shipped default's do. Without ``positions``
    the model has none."""

    positions: tuple[str, ...] = ()
    """Datasets the networks are fitted on, by name or directory (``NAME@N``: its first N shards); the
    positions after plays (``[[plays]]``) are what they must rank. Their labels are not used."""
    keep: tuple[str, ...] = ()
    """Phases kept from a checkpoint (``train = false``, ``init_from`` it) whose pruning networks the model
    takes from that checkpoint rather than fitting them (``bgtrain prune --keep``): no positions of theirs needed."""
    encoder: str = "tesauro198"
    hidden: int = 64
    epochs: int = 12
    seed: int = 1
    min_positions: int = MIN_POSITIONS
    """Fewest positions of a phase to fit its network on (``bgtrain.training.pruning.MIN_POSITIONS``)."""

    def __post_init__(self) -> None:
        if self.hidden < 1 or self.epochs < 1 or self.min_positions < 1:
            raise ValueError(f"[pruning] hidden, epochs and min_positions must be >= 1, not {self.hidden}, "
                             f"{self.epochs} and {self.min_positions}")

    @property
    def enabled(self) -> bool:
        return bool(self.positions or self.keep)


@dataclass(frozen=True)
class BenchmarkSection:
    enabled: bool = True
    against: tuple[str, ...] = ("checkpoints/bgtrain-supervised.pt",)
    """Agents scored beside the new model, with paired differences (``bgtrain benchmark`` specs)."""
    decision_class: str = ""
    """One class only (contact, crashed, race); "" scores all."""
    data: str = ""
    """Decisions other than the shipped benchmark (``bgtrain benchmark --data``)."""

    def __post_init__(self) -> None:
        if self.decision_class and self.decision_class not in PHASE_NAMES:
            raise ValueError(f"[benchmark] decision_class = {self.decision_class!r}: must be one of "
                             f"{', '.join(PHASE_NAMES)} or empty")


@dataclass(frozen=True)
class HeadToHeadSection:
    opponent: str = "pubeval"
    """A ``bgtrain bench`` agent spec; ``gnubg:*`` is skipped (and said so) where GNU Backgammon's bindings
    are not installed."""
    games: int = 2000
    seed: int = 1
    ply: int = 0
    """The new model's search depth."""
    name: str = ""
    """The stage's name; default from the opponent (``gnubg-0ply``, a checkpoint's file stem)."""

    def __post_init__(self) -> None:
        if self.games <= 0:
            raise ValueError(f"[head_to_head] {self.opponent}: games = {self.games}: must be > 0")
        if not 0 <= self.ply <= 4:
            raise ValueError(f"[head_to_head] {self.opponent}: ply = {self.ply}: must be in 0 .. 4")
        if self.name:
            _name("head_to_head", self.name)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        agent, *options = self.opponent.split(":")
        head = Path(agent).stem if agent.endswith((".pt", ".onnx")) else agent
        return re.sub(r"[^A-Za-z0-9._-]", "-", "-".join([head, *options]))


SECTION_OF = {RelabelSection: "relabel", SelectSection: "select", PlaysSection: "plays"}


@dataclass(frozen=True)
class GenerationConfig:
    generation: GenerationSection
    datasets: tuple[DatasetSection, ...] = ()
    relabel: tuple[RelabelSection, ...] = ()
    plays: tuple[PlaysSection, ...] = ()
    select: tuple[SelectSection, ...] = ()
    phases: dict[str, tuple[PhaseSection, ...]] = field(default_factory=dict)
    """Each phase's networks: one, or several averaged (an ensemble, ``bgtrain.model.ensembles``)."""
    pruning: PruningSection = field(default_factory=PruningSection)
    benchmark: BenchmarkSection = field(default_factory=BenchmarkSection)
    head_to_head: tuple[HeadToHeadSection, ...] = ()

    def derived_datasets(self) -> list[RelabelSection | SelectSection | PlaysSection]:
        """The datasets made from others (``[[relabel]]``, ``[[select]]``, ``[[plays]]``) in the order they
        are made: each after its source, otherwise relabels, selections, then plays, each in file order
        (a relabel of a selection follows it). A source that no dataset before it makes is a ValueError."""
        made = {entry.name for entry in self.datasets}
        pending: list[RelabelSection | SelectSection | PlaysSection] = [*self.relabel, *self.select, *self.plays]
        ordered = []
        while pending:
            ready = next((entry for entry in pending
                          if all("/" in source or source in made for source in _sources(entry))), None)
            if ready is None:
                entry = pending[0]
                missing = next(source for source in _sources(entry) if "/" not in source and source not in made)
                raise ValueError(f"[[{SECTION_OF[type(entry)]}]] {entry.name}: source {missing!r} is no "
                                 "dataset given before it")
            ordered.append(ready)
            made.add(ready.name)
            pending.remove(ready)
        return ordered

    def dataset_path(self, reference: str) -> Path:
        """The directory of a dataset named in the plan, or ``reference`` itself when it is a path."""
        return Path(reference) if "/" in reference else self.generation.home / "datasets" / reference

    def networks(self) -> list[tuple[str, int, str]]:
        """``(phase, member, key)`` of every network the plan trains, in order; the key names its stages,
        run and files: the phase, or ``PHASE.N`` for member N of an ensemble."""
        return [(phase, index, network_key(self, phase, index))
                for phase, members in self.phases.items() for index in range(len(members))]

    def phase_training(self, phase: str, member: int = 0) -> Config:
        """The training config (``bgtrain train``'s) of member ``member`` of ``phase``, its datasets and
        start resolved."""
        return phase_training_config(self, phase, member)

    def init_path(self, key: str) -> Path:
        """Where the start of network ``key`` is written when it is a member of a phase model."""
        return self.generation.home / "init" / f"{key}.pt"

    def start(self, phase: str, member: int) -> str:
        """The checkpoint that starts a network: its written member, another training's final model, the
        given checkpoint, or "" (from scratch)."""
        section = self.phases[phase][member]
        if section.init_member >= 0:
            return str(self.init_path(network_key(self, phase, member)))
        if section.init_from.startswith(NETWORK):
            return str(self.network_file(*self.network_of(section.init_from.removeprefix(NETWORK))))
        return section.init_from

    def network_file(self, phase: str, member: int) -> Path:
        """The checkpoint holding a network once the plan has made it: its training's final model, or its
        start for a network kept untrained (``train = false``)."""
        if not self.phases[phase][member].train:
            return Path(self.start(phase, member))
        return self.phase_training(phase, member).run_dir / "final.pt"

    def network_of(self, key: str) -> tuple[str, int]:
        """``(phase, member)`` of network ``key``; a ValueError naming the plan's networks."""
        found = {network: (phase, member) for phase, member, network in self.networks()}
        if key not in found:
            raise ValueError(f"no network {key!r} in this plan; its networks are {', '.join(found)}")
        return found[key]

    def to_dict(self) -> dict[str, Any]:
        data = json.loads(json.dumps(dataclasses.asdict(self)))
        if not data["select"]:
            del data["select"]  # a plan without selections keeps the digest it had before [[select]] existed
        if not self.pruning.enabled:
            del data["pruning"]  # likewise a plan without pruning networks, before [pruning] existed
        elif not self.pruning.keep:
            del data["pruning"]["keep"]  # and one that keeps none, before keep existed
        for members in data["phases"].values():
            for entry in members:
                if entry["sibling_loss"] == "mse" and entry["sibling_temperature"] == SIBLING_TEMPERATURE:
                    del entry["sibling_loss"], entry["sibling_temperature"]  # and trainings before the softmax term
                if entry["heldout_by"] == "row":
                    del entry["heldout_by"]  # and before the draw by position
        for entry in data["plays"]:
            if not entry["rival"]:
                del entry["rival"]  # and plays without a rival, before rivals existed
        for entry in data["datasets"]:
            if not entry["opponent"]:
                del entry["opponent"]  # and self-play datasets, before opponents existed
        return data

    @property
    def digest(self) -> str:
        """sha256 of the resolved plan: a directory's state belongs to exactly one."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()


def network_key(plan: GenerationConfig, phase: str, member: int) -> str:
    """The phase for its only network; ``PHASE.N`` for member N of an ensemble."""
    return phase if len(plan.phases[phase]) == 1 else f"{phase}.{member}"


def phase_training_config(plan: GenerationConfig, phase: str, member: int = 0) -> Config:
    section = plan.phases[phase][member]
    init = plan.start(phase, member)
    return config_from_dict({
        "run": {"name": f"{plan.generation.name}-{network_key(plan, phase, member)}", "seed": section.seed,
                "out_dir": str(plan.generation.home / "runs")},
        "model": {"encoder": section.encoder, "hidden": list(section.hidden), "activation": section.activation},
        "train": {"method": "supervised"},
        "supervised": {
            "datasets": [dataset_reference(plan, reference) for reference in section.datasets],
            "kinds": list(section.kinds or (phase,)), "init_from": init, "epochs": section.epochs, "batch_size": section.batch_size,
            "learning_rate": section.learning_rate, "weight_decay": section.weight_decay,
            "lr_schedule": section.lr_schedule, "lr_final_fraction": section.lr_final_fraction,
            "loss": section.loss, "heldout_fraction": section.heldout_fraction, "heldout_by": section.heldout_by,
            "sibling_weight": section.sibling_weight, "sibling_groups": section.sibling_groups,
            "sibling_loss": section.sibling_loss, "sibling_temperature": section.sibling_temperature,
        },
        "evaluation": {"benchmark": False, "games": section.check_games, "every_games": 0},
        "checkpoint": {"keep_last": 2},
    })


def dataset_reference(plan: GenerationConfig, reference: str) -> str:
    """``NAME@N`` or ``DIR@N`` as the directory, with its shard count kept."""
    name, at, count = reference.partition("@")
    return str(plan.dataset_path(name)) + at + count
