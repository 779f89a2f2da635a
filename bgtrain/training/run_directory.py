"""A training run's directory: creating it, locking it, resuming into it, its checkpoints and logs.

A run directory holds ``config.toml`` (the resolved config, rewritten at each start), ``command.txt``
(one block per start: the command line, the code version, python and torch; a resume adds a block),
``tensorboard/``, ``checkpoints/games_*.pt`` (TD, by games played) or ``checkpoints/epoch_*.pt``
(supervised, by epochs), ``latest.pt`` and ``final.pt``. The rules that keep what a
user made:

* a new run refuses a directory that already holds a run (one line saying how to resume, or to pass
  ``--overwrite``, which first removes that run's checkpoints and logs);
* one process at a time: ``run.lock`` is locked with ``fcntl.flock`` for the whole run; the operating
  system releases it when the process ends, however it ends, so a killed run never leaves it stuck;
* a resume continues in the directory its checkpoint lives in (``resume_directory``), and refuses
  config changes that cannot apply to the saved state (``check_resume_changes``);
* pruning keeps the newest ``keep_last`` checkpoints among those up to the current game count, so
  checkpoints beyond it (a later point of the run, when resuming from an earlier checkpoint) stay;
* temporary files left by a killed writer are removed at the next start (``bgtrain.files``).
"""

from __future__ import annotations

import errno
import fcntl
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bgtrain.files import atomic_write, check_output_directory, remove_stale_temporaries

LOCK_NAME = "run.lock"
RUN_FILES = ("latest.pt", "final.pt", "config.toml")
# A checkpoint under checkpoints/ is named by its run's progress: games played (TD) or epochs (supervised).
_CHECKPOINT = re.compile(r"^(?P<unit>games|epoch)_(?P<count>\d+)\.pt$")
_NAME_FORMATS = {"games": "games_{:010d}.pt", "epoch": "epoch_{:04d}.pt"}


def code_version() -> str:
    try:
        root = Path(__file__).resolve().parent.parent
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True, text=True, timeout=5, check=False
        )
        return described.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def checkpoint_name(count: int, unit: str = "games") -> str:
    """The file name under ``checkpoints/`` of a checkpoint after ``count`` games (TD) or epochs
    (``unit="epoch"``, supervised)."""
    return _NAME_FORMATS[unit].format(count)


def resume_directory(checkpoint: str | Path) -> Path:
    """The run directory a checkpoint belongs to: its folder, or the run above ``checkpoints/``."""
    checkpoint = Path(checkpoint)
    folder = checkpoint.parent
    if folder.name == "checkpoints" and _CHECKPOINT.match(checkpoint.name):
        return folder.parent
    return folder


def _checkpoints(directory: Path) -> list[tuple[int, Path]]:
    found = []
    for path in directory.glob("*.pt"):
        match = _CHECKPOINT.match(path.name)
        if match:
            found.append((int(match["count"]), path))
    return sorted(found)


def load_resume_checkpoint(path: str | Path, wanted=None) -> dict[str, Any]:
    """The checkpoint to resume from; when it cannot be read, the error points at the newest intact
    ``checkpoints/games_*.pt`` of its run. With ``wanted`` (the Config to continue with), a change
    that cannot apply is refused (``check_resume_changes``)."""
    from bgtrain.model.checkpoint import load_checkpoint
    from bgtrain.training.config import config_from_dict

    try:
        payload = load_checkpoint(path)
    except ValueError as error:
        for _, candidate in reversed(_checkpoints(resume_directory(path) / "checkpoints")):
            if Path(candidate).resolve() == Path(path).resolve():
                continue
            try:
                load_checkpoint(candidate)
            except ValueError:
                continue
            raise ValueError(f"{error}; the newest intact checkpoint of this run is {candidate} "
                             f"(bgtrain train --resume {candidate})") from None
        raise
    if "training" not in payload:
        raise ValueError(f"{path} holds a model only, not a training state to resume")
    from bgtrain.model.checkpoint import COUNTERS

    missing = [key for key in COUNTERS if key not in payload["counters"]]
    if missing or not isinstance(payload["training"], dict):
        raise ValueError(f"{path} is damaged: its training state is incomplete ({', '.join(missing) or 'training'})")
    try:
        saved = config_from_dict(payload["config"])
    except ValueError as error:
        raise ValueError(f"{path} is damaged: its config is not valid ({error})") from None
    if wanted is not None:
        check_resume_changes(saved, wanted)
    return payload


# Fields whose change on resume cannot apply to the saved state, with the reason given to the user.
FIXED_ON_RESUME = {
    ("run", "variant"): "the live games and the network are of the saved variant",
    ("run", "seed"): "the saved generators continue; a seed only starts a new run",
    ("model", "encoder"): "the saved weights are for the saved network",
    ("model", "hidden"): "the saved weights are for the saved network",
    ("model", "activation"): "the saved weights are for the saved network",
    ("train", "method"): "the saved optimizer and buffer belong to the saved method",
    ("train", "optimizer"): "the saved optimizer state is of the saved optimizer",
    ("selfplay", "games_in_parallel"): "the live games, the return buffer and the traces hold that many slots",
}


def check_resume_changes(saved, wanted) -> None:
    """A ValueError naming the first field of ``FIXED_ON_RESUME`` that differs between two Configs."""
    for (section, key), reason in FIXED_ON_RESUME.items():
        before, after = getattr(getattr(saved, section), key), getattr(getattr(wanted, section), key)
        if before != after:
            raise ValueError(f"{section}.{key} cannot change on resume ({before!r} -> {after!r}): {reason}; "
                             "start a new run for that")


class RunDirectory:
    """One run's directory, held by this process from ``acquire`` to ``release``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.checkpoints = self.path / "checkpoints"
        self._lock: int | None = None

    def holds_run(self) -> bool:
        return any((self.path / name).exists() for name in RUN_FILES) or bool(_checkpoints(self.checkpoints))

    def acquire(self, resuming: bool, overwrite: bool) -> RunDirectory:
        """Lock the directory, refuse a second process and a new run over an existing one, and clear
        what a killed run left behind."""
        check_output_directory(self.path, "--out")
        self.path.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(descriptor)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise ValueError(f"{self.path} is in use by another bgtrain train process (it holds "
                                 f"{self.path / LOCK_NAME}); wait for it or write elsewhere with --out") from None
            raise
        self._lock = descriptor
        if not resuming and not overwrite and self.holds_run():
            self.release()
            raise ValueError(f"{self.path} already holds a run: continue it with bgtrain train --resume "
                             f"{self.path / 'latest.pt'}, or give a new --out DIR, or pass --overwrite to replace it")
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        for folder in (self.path, self.checkpoints):
            remove_stale_temporaries(folder)
        return self

    def start(self, config_text: str, argv: list[str] | None, overwrite: bool, torch_version: str) -> None:
        """Write the config and add this start to ``command.txt``; ``overwrite`` first removes the old run."""
        if overwrite:
            for name in (*RUN_FILES, "command.txt"):
                (self.path / name).unlink(missing_ok=True)
            for _, path in _checkpoints(self.checkpoints):
                path.unlink(missing_ok=True)
            shutil.rmtree(self.path / "tensorboard", ignore_errors=True)
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path / "config.toml", config_text)
        command = self.path / "command.txt"
        previous = command.read_text() if command.exists() else ""
        block = (" ".join(shlex.quote(word) for word in (argv or sys.argv)) + "\n"
                 + f"code version: {code_version()}\npython {platform.python_version()}, torch {torch_version}\n")
        atomic_write(command, previous + ("\n" if previous else "") + block)

    def save(self, payload: dict[str, Any], count: int, keep_last: int, unit: str = "games") -> Path:
        """``checkpoints/games_N.pt`` (or ``epoch_N.pt``) and ``latest.pt``, then the old checkpoints
        pruned."""
        from bgtrain.model.checkpoint import save_checkpoint

        save_checkpoint(self.checkpoints / checkpoint_name(count, unit), payload)
        latest = save_checkpoint(self.path / "latest.pt", payload)
        self.prune(count, keep_last)
        return latest

    def prune(self, count: int, keep_last: int) -> None:
        """Keep the newest ``keep_last`` checkpoints up to ``count`` games or epochs; never touch those
        beyond it."""
        if not keep_last:
            return
        mine = [path for done, path in _checkpoints(self.checkpoints) if done <= count]
        for old in mine[:-keep_last]:
            old.unlink(missing_ok=True)

    def release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # closing the descriptor releases the flock
            self._lock = None


class TensorBoardLog:
    """A SummaryWriter that remembers the points of its latest step, so that a resume replays them.

    A checkpoint is written after the points of its step; on resume the events from that step on are
    purged (they may hold points logged after the checkpoint) and the saved points are logged again, so
    a resumed run's curves equal an uninterrupted one's."""

    def __init__(self, directory: Path, resume_step: int | None = None, replay: list | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(directory), purge_step=resume_step)
        self._step: int | None = None
        self._points: list[tuple[str, float]] = []
        for tag, value, step in replay or []:
            self.add_scalar(tag, value, step)

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        if step != self._step:
            self._step, self._points = step, []
        self._points.append((tag, float(value)))
        self.writer.add_scalar(tag, value, step)

    def add_text(self, tag: str, text: str, step: int) -> None:
        self.writer.add_text(tag, text, step)

    def latest_points(self) -> list[tuple[str, float, int]]:
        return [(tag, value, self._step) for tag, value in self._points]

    def close(self) -> None:
        self.writer.close()
