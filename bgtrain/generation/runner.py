"""Run a generation's stages in order, each once: ``run_generation(plan, config_path, launch, options)``.

A finished stage (recorded in the directory's state file with its outputs' sha256) is skipped while its
outputs are unchanged; the stage that was running when the generation stopped is resumed; once a stage
runs, every later stage runs too (its inputs may be new). A stage whose output changed since it finished
runs again, and so does every stage after it. The last stage ships the model and writes the lineage.
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
    state = GenerationState.open(home, plan.digest, plan.to_dict(), config_path)
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
