"""A generation's stages, in order, from its plan: each the ordinary command (or library call) that
makes one output, and what it takes to resume it.

    dataset:NAME      bgtrain dataset generate   (resumes: complete shards are kept)
    relabel:NAME      bgtrain dataset relabel    (resumes likewise)
    select:NAME       bgtrain dataset select     (seconds; a rerun keeps what it wrote)
    plays:NAME        bgtrain dataset plays      (the positions after the plays a model ranks)
    init:KEY          write_member: one network of a phase model, the start of a student
    train:KEY         bgtrain train              (resumes with --resume latest.pt)
    combine           combine_checkpoints: the phase model
    prune             bgtrain prune              (with [pruning]: the model with its pruning networks)
    benchmark         bgtrain benchmark          (minutes at most; run again whole)
    bench:LABEL       bgtrain bench              (resumes from its --work-dir)
    ship              the model to its output path, and the lineage file

The datasets made from others (relabel, select, plays) each run after their source
(``GenerationConfig.derived_datasets``): a self-play dataset labelled at 1-ply, a selection of it, then a
2-ply relabelling of the selection, say.

KEY is the phase, or ``PHASE.N`` for member N of a phase's ensemble. A stage that was running when its generation was stopped is resumed; one run fresh (because an earlier
stage ran again) first removes what an earlier attempt left (``--overwrite``, the bench's work
directory), so nothing made from old inputs survives.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bgtrain.files import atomic_write
from bgtrain.generation.config import (
    DatasetSection,
    GenerationConfig,
    HeadToHeadSection,
    PlaysSection,
    RelabelSection,
    SelectSection,
    dataset_reference,
)
from bgtrain.training.config import to_toml_text
from engine.position_kinds import PHASE_NAMES

Words = list[str]
Launcher = Callable[[Words], int]  # runs `bgtrain WORDS...`, returns its exit status


class StageFailed(Exception):
    def __init__(self, stage: str, status: int) -> None:
        super().__init__(f"stage {stage} stopped with status {status}; the same command resumes it")
        self.stage, self.status = stage, status


@dataclass(frozen=True)
class RunOptions:
    threads: int | None = None
    """``--threads`` for every command that takes it (all of them)."""
    executor: tuple[str, ...] = ()
    """``--executor ray [--address A] [--workers N]``, for the commands that take it (generate, relabel,
    plays, bench)."""


@dataclass
class Context:
    plan: GenerationConfig
    options: RunOptions
    launch: Launcher
    echo: Callable[[str], None] = print
    stage: str = ""
    """The stage running now (named by a StageFailed)."""

    def run(self, words: Words) -> None:
        """Print and run ``bgtrain WORDS``; a StageFailed unless it ends with status 0."""
        self.echo("$ " + shlex.join(["bgtrain", *words]))
        status = self.launch(words)
        if status != 0:
            raise StageFailed(self.stage, status)

    def call(self, code: str, function: Callable[[], object]) -> None:
        """Print ``python -c CODE`` and run its equivalent, ``function``, in this process."""
        self.echo("$ " + shlex.join(["python", "-c", code]))
        function()


@dataclass(frozen=True)
class Stage:
    name: str
    commands: tuple[Words, ...]
    """The commands that make the outputs from nothing, as a user would type them (lineage)."""
    outputs: tuple[Path, ...]
    execute: Callable[[Context, bool], None]
    """``execute(context, resuming)``: make the outputs, resuming an interrupted attempt or starting afresh."""
    skip: Callable[[], str] = field(default=lambda: "")
    """Why the stage cannot run here ("" when it can): it is said, left unrecorded and tried on the next run."""
    settings: str = ""
    """What the stage makes its outputs by beyond its commands' words (a training's resolved config)."""

    @property
    def makes_dataset(self) -> bool:
        return self.name.split(":")[0] in DATASET_STAGES

    def fingerprint(self) -> str:
        """sha256 of what defines the stage's outputs: its commands and settings. Take it from a stage
        planned with ``RunOptions()``, so that ``--threads`` and the executor do not count."""
        return hashlib.sha256(json.dumps([self.commands, self.settings]).encode()).hexdigest()


DATASET_STAGES = ("dataset", "relabel", "select", "plays")
"""The kinds of stage that make a dataset: the costly ones, never made again without being asked."""


def _quoted(text: str | Path) -> str:
    """A Python string literal in double quotes, so that the shell command around it quotes simply."""
    return json.dumps(str(text))


def bgtrain_words(words: Words) -> Words:
    return ["bgtrain", *words]


def plan_stages(plan: GenerationConfig, options: RunOptions) -> list[Stage]:
    """Every stage of ``plan``, in the order they run."""
    threads = [] if options.threads is None else ["--threads", str(options.threads)]
    stages = [_dataset_stage(plan, entry, threads, options) for entry in plan.datasets]
    makers = {RelabelSection: _relabel_stage, SelectSection: _select_stage, PlaysSection: _plays_stage}
    stages += [makers[type(entry)](plan, entry, threads, options) for entry in plan.derived_datasets()]
    networks = plan.networks()
    stages += [_init_stage(plan, phase, member, key) for phase, member, key in networks
               if plan.phases[phase][member].init_member >= 0]
    stages += [_train_stage(plan, phase, member, key, threads) for phase, member, key in networks
               if plan.phases[phase][member].train]
    stages.append(_combine_stage(plan))
    if plan.pruning.enabled:
        stages.append(_prune_stage(plan, threads))
    if plan.benchmark.enabled:
        stages.append(_benchmark_stage(plan, threads))
    stages += [_bench_stage(plan, entry, threads, options) for entry in plan.head_to_head]
    return stages


def phase_model_path(plan: GenerationConfig) -> Path:
    """The phase model the trainings combine into, inside the generation's directory."""
    return plan.generation.home / "model.pt"


def model_path(plan: GenerationConfig) -> Path:
    """The generation's model inside its directory, the one benchmarked, benched and shipped to
    ``[generation] model``: the phase model, with its pruning networks where the plan has ``[pruning]``."""
    return plan.generation.home / "model-pruned.pt" if plan.pruning.enabled else phase_model_path(plan)


def bench_json(plan: GenerationConfig, entry: HeadToHeadSection) -> Path:
    return plan.generation.home / "results" / f"bench-{entry.label}.json"


def benchmark_json(plan: GenerationConfig) -> Path:
    return plan.generation.home / "results" / "benchmark.json"


def _dataset_stage(plan: GenerationConfig, entry: DatasetSection, threads: Words, options: RunOptions) -> Stage:
    out = plan.dataset_path(entry.name)
    words = ["dataset", "generate", "--model", entry.model or plan.generation.self_play_model, "--out", str(out),
             "--positions", str(entry.positions), "--shard-size", str(entry.shard_size), "--games", str(entry.games),
             "--seed", str(entry.seed), "--sample-rate", repr(entry.sample_rate), "--epsilon", repr(entry.epsilon),
             "--temperature", repr(entry.temperature), "--select-ply", str(entry.select_ply),
             "--select-threshold", repr(entry.select_threshold), "--keep-agreeing", repr(entry.keep_agreeing),
             "--labeller", entry.labeller]
    if entry.kinds:
        words += ["--kinds", ",".join(entry.kinds)]
    if entry.opponent:
        words += ["--opponent", entry.opponent]
    words += [*threads, "--no-progress"]

    def execute(context: Context, resuming: bool) -> None:
        # A rerun of the same command keeps every complete shard, whether or not this is a resume.
        context.run(words + list(options.executor))

    return Stage(f"dataset:{entry.name}", (bgtrain_words(words),), (out,), execute)


def _relabel_stage(plan: GenerationConfig, entry: RelabelSection, threads: Words, options: RunOptions) -> Stage:
    out = plan.dataset_path(entry.name)
    words = ["dataset", "relabel", str(plan.dataset_path(entry.source)), "--out", str(out),
             "--model", entry.model or plan.generation.labelling_model, "--labeller", entry.labeller]
    if entry.kinds:
        words += ["--kinds", ",".join(entry.kinds)]
    words += [*threads, "--no-progress"]
    return Stage(f"relabel:{entry.name}", (bgtrain_words(words),), (out,),
                 lambda context, resuming: context.run(words + list(options.executor)))


def _select_stage(plan: GenerationConfig, entry: SelectSection, threads: Words, options: RunOptions) -> Stage:
    out = plan.dataset_path(entry.name)
    against = ["--against", str(plan.dataset_path(entry.against))] if entry.against else []
    words = ["dataset", "select", str(plan.dataset_path(entry.source)), "--out", str(out), "--parts", "1", *against,
             "--threshold", repr(entry.threshold), "--keep", repr(entry.keep), "--shard-size", str(entry.shard_size),
             "--seed", str(entry.seed)]

    def execute(context: Context, resuming: bool) -> None:
        if not resuming and out.exists():
            shutil.rmtree(out)  # a selection of an earlier source: refused as another dataset, so made afresh
        context.run(words)

    return Stage(f"select:{entry.name}", (bgtrain_words(words),), (out,), execute)


def _plays_stage(plan: GenerationConfig, entry: PlaysSection, threads: Words, options: RunOptions) -> Stage:
    out = plan.dataset_path(entry.name)
    words = ["dataset", "plays", str(plan.dataset_path(entry.source)), "--out", str(out),
             "--model", entry.model or plan.generation.labelling_model, "--labeller", entry.labeller,
             "--top", str(entry.top), "--others", str(entry.others), "--seed", str(entry.seed),
             *(["--rival", entry.rival] if entry.rival else []), *threads, "--no-progress"]
    return Stage(f"plays:{entry.name}", (bgtrain_words(words),), (out,),
                 lambda context, resuming: context.run(words + list(options.executor)))


def _init_stage(plan: GenerationConfig, phase: str, member: int, key: str) -> Stage:
    section = plan.phases[phase][member]
    out = plan.init_path(key)
    # write_member's reshaping arguments, given where set: the command shown and the call made are the same.
    random_start = section.deepen_width or section.widen  # the seed draws only new random layers and units
    reshape = {"deeper": section.deepen, "width": section.deepen_width,
               "seed": section.seed if random_start else 0, "wider": section.widen}
    reshape = {name: value for name, value in reshape.items() if value}
    arguments = "".join(f", {name}={value}" for name, value in reshape.items())
    code = ("from bgtrain.training.distillation import write_member; "
            f"write_member({_quoted(section.init_from)}, {_quoted(phase)}, {section.init_member}, {_quoted(out)}{arguments})")

    def execute(context: Context, resuming: bool) -> None:
        from bgtrain.training.distillation import write_member

        context.call(code, lambda: write_member(section.init_from, phase, section.init_member, out, **reshape))

    return Stage(f"init:{key}", (["python", "-c", code],), (out,), execute)


def _train_stage(plan: GenerationConfig, phase: str, member: int, key: str, threads: Words) -> Stage:
    config = plan.phase_training(phase, member)
    config_file = plan.generation.home / "configs" / f"{key}.toml"
    run_dir = config.run_dir
    words = ["train", "--config", str(config_file), *threads, "--no-progress"]

    def execute(context: Context, resuming: bool) -> None:
        atomic_write(config_file, f"# {key} network of generation {plan.generation.name} (scripts/generation.py)\n"
                     + to_toml_text(config))
        if resuming and (run_dir / "final.pt").is_file():
            return  # finished before the stop, not yet recorded
        if resuming and (run_dir / "latest.pt").is_file():
            context.run(["train", "--resume", str(run_dir / "latest.pt"), *threads, "--no-progress"])
            return
        # Afresh: an attempt killed before its first checkpoint, or a run made from inputs that changed.
        context.run(words + (["--overwrite"] if run_dir.exists() else []))

    return Stage(f"train:{key}", (bgtrain_words(words),), (run_dir / "final.pt",), execute,
                 settings=to_toml_text(config))


def _combine_stage(plan: GenerationConfig) -> Stage:
    # A phase's checkpoint, or the list of its ensemble's (combine_checkpoints takes either).
    finals: list[str | list[str]] = []
    for phase in PHASE_NAMES:
        paths = [str(plan.network_file(phase, member))
                 for member, section in enumerate(plan.phases[phase]) if section.in_model]
        finals.append(paths[0] if len(paths) == 1 else paths)
    out = phase_model_path(plan)
    code = ("from bgtrain.model.combine import combine_checkpoints; "
            f"combine_checkpoints({', '.join(json.dumps(final) for final in finals)}, {_quoted(out)})")

    def execute(context: Context, resuming: bool) -> None:
        from bgtrain.model.combine import combine_checkpoints

        context.call(code, lambda: combine_checkpoints(*finals, out))

    return Stage("combine", (["python", "-c", code],), (out,), execute)


def _prune_stage(plan: GenerationConfig, threads: Words) -> Stage:
    section, out = plan.pruning, model_path(plan)
    positions = [dataset_reference(plan, reference) for reference in section.positions]
    words = ["prune", str(phase_model_path(plan)), *(["--positions", *positions] if positions else []),
             "--out", str(out), "--encoder", section.encoder, "--hidden", str(section.hidden),
             "--epochs", str(section.epochs), "--seed", str(section.seed), "--min-positions", str(section.min_positions)]
    for phase in section.keep:  # a phase kept whole from a checkpoint keeps that checkpoint's pruning network
        words += ["--keep", f"{phase}={plan.phases[phase][0].init_from}"]
    words += threads
    return Stage("prune", (bgtrain_words(words),), (out,), lambda context, resuming: context.run(words))


def _benchmark_stage(plan: GenerationConfig, threads: Words) -> Stage:
    section, out = plan.benchmark, benchmark_json(plan)
    words = ["benchmark", str(model_path(plan)), *section.against]
    if section.decision_class:
        words += ["--class", section.decision_class]
    if section.data:
        words += ["--data", section.data]
    words += ["--json", str(out), *threads]
    return Stage("benchmark", (bgtrain_words(words),), (out,), lambda context, resuming: context.run(words))


def _bench_stage(plan: GenerationConfig, entry: HeadToHeadSection, threads: Words, options: RunOptions) -> Stage:
    out = bench_json(plan, entry)
    work = out.with_name(out.stem + "-work")
    agent = str(model_path(plan)) + (f":{entry.ply}ply" if entry.ply else "")
    words = ["bench", agent, entry.opponent, "--games", str(entry.games), "--seed", str(entry.seed),
             "--json", str(out), "--work-dir", str(work), *threads]

    def execute(context: Context, resuming: bool) -> None:
        if not resuming and work.exists():
            shutil.rmtree(work)  # games of an earlier model: a fresh stage plays them all again
        work.parent.mkdir(parents=True, exist_ok=True)
        context.run(words + list(options.executor))

    def skip() -> str:
        if not entry.opponent.startswith("gnubg:"):
            return ""
        import importlib.util

        if any(importlib.util.find_spec(module) for module in ("gnubg_nn", "gnubg")):
            return ""
        return f"{entry.opponent} needs GNU Backgammon's bindings (pip install gnubg-nn)"

    return Stage(f"bench:{entry.label}", (bgtrain_words(words),), (out,), execute, skip)
