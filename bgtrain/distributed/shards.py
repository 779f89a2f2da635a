"""Result shards on disk: each finished unit of a job is one ``.npz`` file, written atomically, so a
job killed at any moment resumes by running only the units whose shards are missing.

A work directory holds ``job.json`` (what the job is: its kind, seeds, agents, sizes; a rerun with
different settings is refused rather than mixing the results of two jobs) and one
``shard_NNNNNN.npz`` per finished unit. A shard is written to a temporary file in the same directory,
flushed to disk, then renamed over its final name (``os.replace`` is atomic on POSIX), so a shard
either exists whole or not at all; a leftover temporary file of a killed run is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bgtrain.files import atomic_write

JOB_FILE = "job.json"


def read_job(directory: str | Path) -> dict:
    """The job a work directory holds (its ``job.json``); a ValueError where there is none."""
    path = Path(directory) / JOB_FILE
    if not path.is_file():
        raise ValueError(f"{directory}: no {JOB_FILE}: not a bgtrain work directory")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        raise ValueError(f"{path} is not readable JSON: not a bgtrain work directory") from None


class ShardStore:
    """The shards of one job in ``directory``; ``job`` (plain JSON data) describes the job."""

    def __init__(self, directory: str | Path, job: dict) -> None:
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ValueError(f"work directory {self.directory} is a file")
        self.directory.mkdir(parents=True, exist_ok=True)
        described = json.loads(json.dumps(job))  # the form it has once read back
        path = self.directory / JOB_FILE
        if path.exists():
            stored = read_job(self.directory)
            if stored != described:
                changed = sorted(key for key in set(stored) | set(described) if stored.get(key) != described.get(key))
                raise ValueError(f"work directory {self.directory} holds another job (different {', '.join(changed)}): "
                                 "use a new --work-dir or remove this one")
        else:
            atomic_write(path, lambda handle: handle.write((json.dumps(described, indent=2) + "\n").encode()))
        self.job = described

    def path(self, index: int) -> Path:
        return self.directory / f"shard_{index:06d}.npz"

    def done(self) -> set[int]:
        """Indices of the shards written so far."""
        found = set()
        for path in self.directory.glob("shard_*.npz"):
            stem = path.stem.removeprefix("shard_")
            if stem.isdigit():
                found.add(int(stem))
        return found

    def write(self, index: int, arrays: dict) -> Path:
        path = self.path(index)
        atomic_write(path, lambda handle: np.savez(handle, **{k: np.asarray(v) for k, v in arrays.items()}))
        return path

    def read(self, index: int) -> dict[str, np.ndarray]:
        with np.load(self.path(index)) as data:
            return {key: data[key] for key in data.files}
