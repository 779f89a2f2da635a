"""Run configuration: frozen, typed dataclasses loaded from TOML, one documented field per knob.

A config file has the sections ``[run]``, ``[model]``, ``[selfplay]``, ``[train]``, ``[evaluation]`` and
``[checkpoint]`` (and ``[executor]``, where self-play runs); every key is optional (the defaults below apply) and an unknown section or key, or a
value of the wrong type, is a ValueError naming it. Command-line overrides name a field by
``section.field``: ``--train.learning_rate 0.05`` or ``train.learning_rate=0.05``; their values are
read as TOML values (``[80, 40]``, ``true``, ``1e-3``), or as plain text for text fields.

The resolved config is stored with every run and checkpoint (``config_to_dict``, ``to_toml_text``);
``config_from_dict`` reads it back.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bgtrain.training.config_sections import (
    DEVICE_PATTERN,
    CheckpointConfig,
    EvaluationConfig,
    ExecutorConfig,
    ModelConfig,
    RunConfig,
    SelfplayConfig,
    SupervisedConfig,
    TrainConfig,
)


@dataclass(frozen=True)
class Config:
    run: RunConfig = field(default_factory=RunConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    selfplay: SelfplayConfig = field(default_factory=SelfplayConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    supervised: SupervisedConfig = field(default_factory=SupervisedConfig)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Nested plain data, as a checkpoint stores it (``config_to_dict``)."""
        return config_to_dict(self)

    @property
    def run_dir(self) -> Path:
        """``out_dir / name``."""
        return Path(self.run.out_dir) / self.run.name

    @property
    def states_per_update(self) -> int:
        """States whose targets become ready between two "lambda_return" updates (fewer once games end)."""
        return self.selfplay.games_in_parallel * self.train.update_every_turns


SECTIONS: dict[str, type] = {
    f.name: typing.get_type_hints(Config)[f.name] for f in dataclasses.fields(Config)
}


# ---------------------------------------------------------------------------------------------------
# Reading and writing.


def _field_types(section_class: type) -> dict[str, Any]:
    hints = typing.get_type_hints(section_class)
    return {f.name: hints[f.name] for f in dataclasses.fields(section_class)}


def _convert(section: str, name: str, expected: Any, value: Any) -> Any:
    """``value`` as the field's type, or a ValueError naming the field; ints are accepted for floats."""

    def wrong() -> ValueError:
        return ValueError(
            f"[{section}] {name}: expected {getattr(expected, '__name__', expected)}, "
            f"got {type(value).__name__} {value!r}"
        )

    if expected is bool:
        if not isinstance(value, bool):
            raise wrong()
        return value
    if expected is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong()
        return value
    if expected is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong()
        return float(value)
    if expected is str:
        if not isinstance(value, str):
            raise wrong()
        return value
    if typing.get_origin(expected) is tuple:
        (item_type,) = {arg for arg in typing.get_args(expected) if arg is not Ellipsis}
        if not isinstance(value, (list, tuple)):
            raise wrong()
        return tuple(_convert(section, f"{name}[{i}]", item_type, item) for i, item in enumerate(value))
    raise TypeError(f"config field [{section}] {name} has an unsupported type {expected!r}")


def _unknown_section(section: str) -> ValueError:
    return ValueError(f"unknown config section [{section}]; valid sections: {', '.join(SECTIONS)}")


def _unknown_key(section: str, key: str, valid: Any) -> ValueError:
    return ValueError(f"unknown key {key!r} in [{section}]; valid keys: {', '.join(sorted(valid))}")


def config_from_dict(data: dict[str, Any]) -> Config:
    """A Config from nested plain data (a parsed TOML file), checking every section, key and type."""
    sections = {}
    for section, values in data.items():
        if section not in SECTIONS:
            raise _unknown_section(section)
        if not isinstance(values, dict):
            # ValueError like every other config mistake, so callers catch one kind
            raise ValueError(f"config section [{section}] must be a table, not {type(values).__name__}")  # noqa: TRY004
        types = _field_types(SECTIONS[section])
        converted = {}
        for key, value in values.items():
            if key not in types:
                raise _unknown_key(section, key, types)
            converted[key] = _convert(section, key, types[key], value)
        sections[section] = SECTIONS[section](**converted)
    return Config(**sections)


def config_to_dict(config: Config) -> dict[str, dict[str, Any]]:
    """Nested plain data (lists for tuples) that ``config_from_dict`` turns back into ``config``."""
    data = {}
    for section in SECTIONS:
        values = dataclasses.asdict(getattr(config, section))
        data[section] = {key: list(v) if isinstance(v, tuple) else v for key, v in values.items()}
    return data


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def to_toml_text(config: Config) -> str:
    """The resolved config as a TOML file that ``load_config`` reads back to the same Config."""
    lines = []
    for section, values in config_to_dict(config).items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in values.items())
        lines.append("")
    return "\n".join(lines)


_OVERRIDE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")

Override = tuple[str, str, str]  # (section, key, the value as written)


def _split_name(token: str) -> tuple[str, str]:
    section, _, key = token.partition(".")
    return section, key


def split_overrides(words: list[str]) -> tuple[list[str], list[Override]]:
    """The one reader of config overrides on a command line: ``--section.key value``,
    ``--section.key=value`` and ``section.key=value`` anywhere among ``words``. Returns the other
    words, in order, and the overrides as ``(section, key, text)``, in order. Config fields are the
    only dotted names, so nothing else is taken for one."""
    rest: list[str] = []
    overrides: list[Override] = []
    index = 0
    while index < len(words):
        token = words[index]
        flag = token.startswith("--")
        name, equals, text = token.removeprefix("--").partition("=")
        if _OVERRIDE_NAME.match(name) and (flag or equals):
            if not equals:
                if index + 1 >= len(words):
                    raise ValueError(f"override {token} has no value")
                index += 1
                text = words[index]
            overrides.append((*_split_name(name), text))
        else:
            rest.append(token)
        index += 1
    return rest, overrides


def parse_overrides(overrides: list[str]) -> list[Override]:
    """``["--train.learning_rate", "0.05", "model.hidden=[40,40]"]`` -> ``[(section, key, text), ...]``;
    every word must belong to an override."""
    rest, parsed = split_overrides(list(overrides))
    if rest:
        raise ValueError(f"override {rest[0]!r}: name a field as section.key=value, e.g. train.learning_rate=0.05")
    return parsed


def _override_value(section: str, key: str, text: str) -> Any:
    """The override's text as a value for the field: a TOML value, or the bare text for a text field."""
    if section not in SECTIONS:
        raise _unknown_section(section)
    types = _field_types(SECTIONS[section])
    if key not in types:
        raise _unknown_key(section, key, types)
    try:
        value = tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        value = text  # bare text: right for a text field, a type error for any other
    if types[key] is str and not isinstance(value, str):
        value = text  # e.g. run.name=2024 is the name "2024"
    return _convert(section, key, types[key], value)


def apply_overrides(data: dict[str, Any], overrides: list[Override]) -> dict[str, Any]:
    """``data`` (nested plain config data) with each override's value set, each checked for its field."""
    data = {section: dict(values) if isinstance(values, dict) else values for section, values in data.items()}
    for section, key, text in overrides:
        value = _override_value(section, key, text)
        values = data.setdefault(section, {})
        if not isinstance(values, dict):
            # ValueError like every other config mistake, so callers catch one kind
            raise ValueError(f"config section [{section}] must be a table, not {type(values).__name__}")  # noqa: TRY004
        values[key] = value
    return data


def load_config(path: str | Path | None = None, overrides: list[str] | list[Override] | None = None) -> Config:
    """The config of the TOML file at ``path`` (defaults alone when None) with ``overrides`` applied
    (command-line words, or ``(section, key, text)`` from ``split_overrides``)."""
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"--config {path}: is a directory, not a TOML file")
        try:
            with open(path, "rb") as file:
                data = tomllib.load(file)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{path} is not valid TOML ({error})") from None
        except UnicodeDecodeError:
            raise ValueError(f"{path} is not a TOML text file") from None
    words = list(overrides or [])
    parsed = words if words and isinstance(words[0], tuple) else parse_overrides(words)
    return config_from_dict(apply_overrides(data, parsed))


def resolve_device(name: str, where: str = "--device"):
    """The torch device ``name`` ("cpu", "cuda", "cuda:N") names, checked to exist on this machine."""
    import torch

    if not DEVICE_PATTERN.match(name):
        raise ValueError(f"{where} {name!r}: must be 'cpu', 'cuda' or 'cuda:N'")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{where} {name!r}: CUDA is not available on this machine (use cpu)")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"{where} {name!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return device


__all__ = ['SECTIONS', 'CheckpointConfig', 'Config', 'EvaluationConfig', 'ExecutorConfig', 'ModelConfig', 'RunConfig', 'SelfplayConfig', 'SupervisedConfig', 'TrainConfig', 'apply_overrides', 'config_from_dict', 'config_to_dict', 'load_config', 'parse_overrides', 'resolve_device', 'split_overrides', 'to_toml_text']
