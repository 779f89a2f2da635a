"""The state file of a generation's directory (``generation-state.json``): which stages finished, with
their commands, the sha256 of every output and their seconds, and which stage was running.

Invariants: the file belongs to one plan (``plan_sha256``, the digest of the resolved config, and the plan
itself); a plan changed since its stages ran keeps only the finished stages whose settings it left as they
were (``bgtrain.generation.runner``), so two generations never mix in one directory; a stage is recorded
only after its outputs are complete; the file is rewritten atomically after every change, so a kill at any
moment leaves either the old or the new state.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bgtrain.files import atomic_write

FORMAT = "bgtrain-generation-state"
FORMAT_VERSION = 1
STATE_FILE = "generation-state.json"


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def output_sha256(path: str | Path) -> str | None:
    """The sha256 of an output: a file's bytes, or for a dataset directory its ``manifest.json`` (which
    lists every shard's sha256); None when it does not exist."""
    path = Path(path)
    if path.is_dir():
        path = path / "manifest.json"
    return file_sha256(path) if path.is_file() else None


@dataclass
class GenerationState:
    path: Path
    plan_sha256: str
    plan: dict[str, Any]
    stages: list[dict[str, Any]] = field(default_factory=list)
    running: str | None = None
    earlier_plan: dict[str, Any] | None = None
    """The plan the stages were run by, when it is not ``plan`` (its config changed since); None when it is."""
    earlier_config: str = ""

    @classmethod
    def open(cls, directory: str | Path, plan_sha256: str, plan: dict[str, Any]) -> GenerationState:
        """The state of ``directory`` for ``plan``, new if it has none; one written by another plan keeps
        that plan in ``earlier_plan`` (the runner keeps the stages the two share); a ValueError when the
        file is not a state file."""
        path = Path(directory) / STATE_FILE
        if not path.exists():
            return cls(path, plan_sha256, plan)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ValueError(f"{path}: not a generation state file (damaged?); move it away to start again") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a generation state file; move it away to start again")
        state = cls(path, plan_sha256, plan, list(data.get("stages", [])), data.get("running"))
        if data.get("plan_sha256") != plan_sha256:
            state.earlier_plan, state.earlier_config = data.get("plan") or {}, str(data.get("config", "?"))
        return state

    def save(self, config_path: str) -> None:
        payload = {"format": FORMAT, "format_version": FORMAT_VERSION, "config": config_path,
                   "plan_sha256": self.plan_sha256, "plan": self.plan, "running": self.running,
                   "stages": self.stages}
        atomic_write(self.path, json.dumps(payload, indent=1) + "\n")

    def finished(self, name: str) -> dict[str, Any] | None:
        return next((stage for stage in self.stages if stage["name"] == name), None)

    def changed_outputs(self, name: str) -> list[str]:
        """The outputs of finished stage ``name`` that are gone or differ from their recorded sha256."""
        record = self.finished(name)
        assert record is not None
        return [path for path, digest in record["outputs"].items() if output_sha256(path) != digest]

    def forget_from(self, name: str) -> None:
        """Drop the record of ``name`` and of every stage finished after it (their inputs may change)."""
        names = [stage["name"] for stage in self.stages]
        if name in names:
            del self.stages[names.index(name):]
