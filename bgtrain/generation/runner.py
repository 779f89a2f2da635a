"""Run a generation's stages in order, each once: ``run_generation(plan, config_path, launch, options)``.

A finished stage (recorded in the directory's state file with its outputs' sha256) is skipped while its
outputs are unchanged; the stage that was running when the generation stopped is resumed; once a stage
runs, every later stage runs too (its inputs may be new). A stage whose output changed since it finished
runs again, and so does every stage after it. The last stage ships the model and writes the lineage.

A plan changed since its directory's stages ran (its config edited) keeps each finished stage whose
fingerprint (its commands and settings, ``Stage.fingerprint``) is unchanged, up to the first stage that
must run: that one and every later one run again, as after a stop. A finished dataset is never made again
unasked: when one would be (its settings changed, or a stage before it did), the plan is refused, naming
the dataset to move away or the directory to choose instead.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from pathlib import Path

from bgtrain.directory_lock import directory_lock
from bgtrain.files import atomic_write
from bgtrain.generation.config import GenerationConfig
from bgtrain.generation.lineage import write_lineage
from bgtrain.generation.reading import plan_from_dict
from bgtrain.generation.stages import Context, Launcher, RunOptions, Stage, model_path, plan_stages
from bgtrain.generation.state import GenerationState, output_sha256

SHIP = "ship"


def stage_names(plan: GenerationConfig, options: RunOptions) -> list[str]:
    return [stage.name for stage in plan_stages(plan, options)] + [SHIP]


def run_generation(plan: GenerationConfig, config_path: str, launch: Launcher, options: RunOptions | None = None,
                   stop_after: str | None = None, echo: Callable[[str], None] = print,
                   command_line: str = "") -> GenerationState:
    """Run every stage of ``plan`` not yet finished in its directory (or up to ``stop_after``, a stage
    name). ``launch`` runs one ``bgtrain`` command; a ValueError for a plan the directory does not hold,
    a StageFailed for a command that failed or was stopped (the same call resumes it)."""
    options = options or RunOptions()
    stages = plan_stages(plan, options)
    names = [stage.name for stage in stages] + [SHIP]
    if stop_after is not None and stop_after not in names:
        raise ValueError(f"--stop-after {stop_after!r}: no such stage; the stages are {', '.join(names)}")
    # One process a generation: two would both run the stage that is left, and race on the state file.
    with directory_lock(plan.generation.home, "generation.lock", "scripts/generation.py"):
        return _run_stages(plan, config_path, launch, options, stages, stop_after, echo, command_line)


def _run_stages(plan: GenerationConfig, config_path: str, launch: Launcher, options: RunOptions,
                stages: list[Stage], stop_after: str | None, echo: Callable[[str], None],
                command_line: str) -> GenerationState:
    home = plan.generation.home
    state = GenerationState.open(home, plan.digest, plan.to_dict())
    if state.earlier_plan is not None:
        _adopt_changed_plan(state, plan, stages, config_path, echo)
    context = Context(plan, options, launch, echo)
    ran_one = False
    skipped: dict[str, str] = {}
    for stage in [*stages, _ship_stage(plan, config_path, command_line, stages, skipped, lambda: state)]:
        record = state.finished(stage.name)
        if record is not None and not ran_one:
            changed = state.changed_outputs(stage.name)
            if not changed:
                echo(f"[{stage.name}] finished earlier ({record['seconds']:.1f} s)")
                if stage.name == stop_after:
                    break
                continue
            echo(f"[{stage.name}] {changed[0]} changed since this stage finished: running it and every later stage again")
        if record is not None:
            state.forget_from(stage.name)
        reason = stage.skip()
        if reason:
            skipped[stage.name] = reason
            echo(f"[{stage.name}] skipped: {reason}")
            continue
        resuming = state.running == stage.name
        echo(f"[{stage.name}] {'resuming' if resuming else 'running'}")
        state.running = stage.name
        state.save(config_path)
        context.stage = stage.name
        started = time.perf_counter()
        stage.execute(context, resuming)
        seconds = time.perf_counter() - started
        outputs = {str(path): output_sha256(path) for path in stage.outputs}
        missing = [path for path, digest in outputs.items() if digest is None]
        if missing:
            raise ValueError(f"stage {stage.name} ended without writing {missing[0]}")
        state.stages.append({"name": stage.name, "commands": [shlex.join(words) for words in stage.commands],
                             "outputs": outputs, "seconds": round(seconds, 1), "resumed": resuming,
                             "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        state.running = None
        state.save(config_path)
        ran_one = True
        echo(f"[{stage.name}] finished in {seconds:.1f} s")
        if stage.name == stop_after:
            break
    return state


def _adopt_changed_plan(state: GenerationState, plan: GenerationConfig, stages: list[Stage], config_path: str,
                        echo: Callable[[str], None]) -> None:
    """Keep the finished stages of ``state.earlier_plan`` that ``plan`` has with the same fingerprint, up
    to the first stage that must run; a ValueError when that would make a finished dataset again."""
    refusal = (f"{plan.generation.home} holds the state of another generation plan ({state.earlier_config}); "
               f"give [generation] directory another path, or move {state.path} away to start again with {config_path}")
    try:
        earlier_plan = plan_from_dict(state.earlier_plan or {})
        earlier_stages = plan_stages(earlier_plan, RunOptions())
    except (ValueError, TypeError, KeyError, AttributeError):
        raise ValueError(refusal) from None
    if earlier_plan.generation.name != plan.generation.name:
        raise ValueError(refusal)  # another generation, not its plan edited
    earlier = {stage.name: stage.fingerprint() for stage in earlier_stages}
    now = {stage.name: stage.fingerprint() for stage in plan_stages(plan, RunOptions())}
    unchanged = {name for name, fingerprint in now.items() if earlier.get(name) == fingerprint}
    names = [stage.name for stage in stages]
    first = next((index for index, name in enumerate(names) if name not in unchanged or not state.finished(name)),
                 len(names))
    for stage in stages[first:]:
        remade = state.finished(stage.name) or (stage.name == state.running and stage.name not in unchanged)
        if stage.makes_dataset and remade and any(output_sha256(path) for path in stage.outputs):
            why = "its settings changed" if stage.name not in unchanged else f"{names[first]} comes before it and must run"
            raise ValueError(f"{plan.generation.home}: the plan changed since its stages ran ({state.earlier_config}), "
                             f"and {stage.name} would be made again ({why}): move {stage.outputs[0]} away to make it "
                             f"again, or give [generation] directory another path")
    kept = set(names[:first])
    state.stages = [record for record in state.stages if record["name"] in kept]
    if state.running is not None and state.running not in unchanged:
        state.running = None  # an attempt under other settings: started afresh, not resumed
    state.earlier_plan = None
    echo(f"the plan changed since this directory's stages ran ({state.earlier_config}): {len(state.stages)} "
         f"finished stages kept, running {names[first] if first < len(names) else SHIP} and every later stage again")


def _ship_stage(plan: GenerationConfig, config_path: str, command_line: str, stages: list[Stage],
                skipped: dict[str, str], state: Callable[[], GenerationState]) -> Stage:
    """The model to ``[generation] model``, then the lineage file (which records every earlier stage)."""
    out, lineage = Path(plan.generation.model), plan.generation.lineage_path

    def execute(context: Context, resuming: bool) -> None:
        context.echo(f"  {model_path(plan)} -> {out}")
        atomic_write(out, model_path(plan).read_bytes())
        write_lineage(lineage, plan, config_path, command_line, state().stages, stages, skipped)
        context.echo(f"  lineage: {lineage}")

    return Stage(SHIP, (), (out, lineage), execute)
