"""Reading a generation plan (``bgtrain.generation.config``) from TOML: every section, key and type checked,
every reference between its parts resolved, and each phase's training config built once, so that its
mistakes are ValueErrors in one line before any stage runs."""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from pathlib import Path
from typing import Any

from bgtrain.generation.config import (
    NETWORK,
    BenchmarkSection,
    DatasetSection,
    GenerationConfig,
    GenerationSection,
    HeadToHeadSection,
    PhaseSection,
    PlaysSection,
    PruningSection,
    RelabelSection,
    SelectSection,
    phase_training_config,
)
from bgtrain.training.config import _convert as convert_field
from bgtrain.training.config import _unknown_key as unknown_key
from engine.position_kinds import PHASE_NAMES

_TABLES = {"generation": GenerationSection, "pruning": PruningSection, "benchmark": BenchmarkSection}
_ARRAYS = {"datasets": DatasetSection, "relabel": RelabelSection, "select": SelectSection, "plays": PlaysSection,
           "head_to_head": HeadToHeadSection}
_SECTIONS = (*_TABLES, *_ARRAYS, "phases")


def _section(section: str, section_class: type, values: Any):
    """``section_class`` from a TOML table, each key and value checked as the training config checks its
    own (the one reader of a field's value, ``bgtrain.training.config``)."""
    if not isinstance(values, dict):
        raise ValueError(f"[{section}] must be a table, not {type(values).__name__}")  # noqa: TRY004 (a config mistake, as every other)
    hints = typing.get_type_hints(section_class)
    known = {f.name: hints[f.name] for f in dataclasses.fields(section_class)}
    converted = {}
    for key, value in values.items():
        if key not in known:
            raise unknown_key(section, key, known)
        converted[key] = convert_field(section, key, known[key], value)
    return section_class(**converted)


def _members(phase: str, given: Any) -> tuple[PhaseSection, ...]:
    """``[phases.PHASE]``, one network, or ``[[phases.PHASE]]``, the members of an ensemble."""
    if isinstance(given, dict):
        return (_section(f"phases.{phase}", PhaseSection, given),)
    if not isinstance(given, list) or not given:
        raise ValueError(f"[phases.{phase}] must be a table (one network) or [[phases.{phase}]] tables (an ensemble)")
    return tuple(_section(f"phases.{phase} {index}", PhaseSection, entry) for index, entry in enumerate(given))


def _entry_name(entry: Any, index: int) -> str:
    """How an entry of an array of tables is named in an error: by its name, else by its place."""
    name = entry.get("name") or entry.get("opponent") if isinstance(entry, dict) else None
    return name if isinstance(name, str) and name else str(index)


def plan_from_dict(data: dict[str, Any]) -> GenerationConfig:
    """A GenerationConfig from parsed TOML, every section, key and type checked, and every phase's
    training config built once (so its mistakes are found before any stage runs)."""
    for section in data:
        if section not in _SECTIONS:
            raise ValueError(f"unknown section [{section}]; valid sections: {', '.join(_SECTIONS)}")
    if "generation" not in data:
        raise ValueError("the [generation] section is required (name, model)")
    parts: dict[str, Any] = {name: _section(name, cls, data[name]) for name, cls in _TABLES.items() if name in data}
    for name, cls in _ARRAYS.items():
        entries = data.get(name, [])
        if not isinstance(entries, list):
            raise ValueError(f"[[{name}]] must be an array of tables (write [[{name}]] above each)")  # noqa: TRY004 (a config mistake, as every other)
        parts[name] = tuple(_section(f"{name} {_entry_name(entry, index)}", cls, entry) for index, entry in enumerate(entries))
    phases = data.get("phases", {})
    if not isinstance(phases, dict):
        raise ValueError("[phases] must be a table of [phases.contact], [phases.crashed], [phases.race]")  # noqa: TRY004 (a config mistake, as every other)
    for phase in phases:
        if phase not in PHASE_NAMES:
            raise ValueError(f"unknown phase [phases.{phase}]; the phases are {', '.join(PHASE_NAMES)}")
    missing = [phase for phase in PHASE_NAMES if phase not in phases]
    if missing:
        raise ValueError(f"every phase needs a training: [phases.{missing[0]}] is missing")
    parts["phases"] = {phase: _members(phase, phases[phase]) for phase in PHASE_NAMES}
    plan = GenerationConfig(**parts)
    _check_references(plan)
    return plan


def _check_references(plan: GenerationConfig) -> None:
    names = [entry.name for entry in (*plan.datasets, *plan.relabel, *plan.select, *plan.plays)]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"dataset name {repeated[0]!r} is given twice ([[datasets]], [[select]], [[relabel]] and "
                         "[[plays]] share names)")
    plan.derived_datasets()  # every source made before it is read
    for phase, member, key in plan.networks():
        section = plan.phases[phase][member]
        if not section.train and not section.init_from:
            raise ValueError(f"[phases.{key}] train = false keeps its start: give init_from")
        if section.train and not section.datasets:
            raise ValueError(f"[phases.{key}] datasets: name at least one dataset")
        for reference in section.datasets:
            _check_dataset_reference(f"[phases.{key}] datasets", reference, names)
        if section.init_member >= 0 and not section.init_from:
            raise ValueError(f"[phases.{key}] init_member = {section.init_member} needs init_from (a phase model)")
        if section.deepen < 0 or (section.deepen and section.init_member < 0):
            raise ValueError(f"[phases.{key}] deepen = {section.deepen}: a number of layers (0 or more) added to the "
                             "member that init_member names")
        if section.widen < 0 or (section.widen and section.init_member < 0):
            raise ValueError(f"[phases.{key}] widen = {section.widen}: the hidden units (0 or more) of the member that "
                             "init_member names")
        if section.deepen_width < 0 or (section.deepen_width and not section.deepen):
            raise ValueError(f"[phases.{key}] deepen_width = {section.deepen_width}: the width (0 or more) of the "
                             "layers that deepen adds; give deepen too")
        if section.init_from.startswith(NETWORK):
            source = section.init_from.removeprefix(NETWORK)
            keys = [network for _, _, network in plan.networks()]
            earlier = keys[: keys.index(key)]
            if source not in earlier:
                raise ValueError(f"[phases.{key}] init_from = {section.init_from!r}: name a network trained before "
                                 f"this one ({', '.join(earlier) or 'none'})")
            if section.init_member >= 0:
                raise ValueError(f"[phases.{key}] init_member: a network of this plan is a single network")
        if section.train:
            phase_training_config(plan, phase, member)  # the training config's own checks, now
    for reference in plan.pruning.positions:
        _check_dataset_reference("[pruning] positions", reference, names)
    _check_kept_pruning(plan)
    for phase, members in plan.phases.items():
        if not any(section.in_model for section in members):
            raise ValueError(f"[phases.{phase}]: every network has in_model = false; the model needs one")
    labels = [entry.label for entry in plan.head_to_head]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ValueError(f"[[head_to_head]]: two entries are named {repeated[0]!r}; give one a name")


def _check_kept_pruning(plan: GenerationConfig) -> None:
    """``[pruning] keep`` names phases kept whole from a checkpoint, and positions cover the others."""
    for phase in plan.pruning.keep:
        if phase not in PHASE_NAMES:
            raise ValueError(f"[pruning] keep: {phase!r} is no phase; the phases are {', '.join(PHASE_NAMES)}")
        members = plan.phases[phase]
        if len(members) != 1 or members[0].train or not members[0].init_from or members[0].init_from.startswith(NETWORK):
            raise ValueError(f"[pruning] keep: [phases.{phase}] must be one network kept from a checkpoint "
                             "(train = false, init_from the checkpoint) for its pruning network to be that checkpoint's")
    if len(set(plan.pruning.keep)) != len(plan.pruning.keep):
        raise ValueError("[pruning] keep: a phase is named twice")
    fitted = [phase for phase in PHASE_NAMES if phase not in plan.pruning.keep]
    if plan.pruning.keep and fitted and not plan.pruning.positions:
        raise ValueError(f"[pruning] positions: name the datasets the {', '.join(fitted)} pruning networks are fitted on")


def _check_dataset_reference(where: str, reference: str, names: list[str]) -> None:
    name = reference.partition("@")[0]
    if "/" not in name and name not in names:
        raise ValueError(f"{where}: {name!r} is no dataset of this plan "
                         "(name one of [[datasets]], [[select]], [[relabel]] or [[plays]], or a path with '/')")


def load_plan(path: str | Path) -> GenerationConfig:
    """The generation plan in the TOML file at ``path``; a ValueError in one line for any mistake."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"--config {path}: is a directory, not a TOML file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path} is not valid TOML ({error})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a TOML text file") from None
    return plan_from_dict(data)
