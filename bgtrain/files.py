"""Files that bgtrain writes: one atomic writer, one tagged torch format, checks of output paths.

Every file (checkpoints, the bear-off cache, exports, reports, configs) is written the same way: into a
temporary file beside its destination (``.NAME.PID.tmp``, the same filesystem, so the rename is atomic),
flushed and fsync'ed, then renamed over the destination with ``os.replace``. A reader therefore sees the
old file or the new one, never half of one. On any failure (a full disk, a kill by an exception, a
serialisation error) the temporary file is removed; a process killed outright leaves it behind, and
``remove_stale_temporaries`` clears such files at the next start (a file whose writer is still alive is
kept).

Write errors name the path the user gave, never the temporary file: ``OSError(errno, text, path)``,
with the text "disk full" when the disk is full (ENOSPC, EDQUOT).

``save_tagged``/``load_tagged`` store a dict with a ``format`` name and ``format_version`` in one
``torch.save`` file and check both when reading; every problem reading one is a ValueError naming the
file (or FileNotFoundError when it does not exist).
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

_TEMPORARY = re.compile(r"^\..+\.(?P<pid>\d+)\.tmp$")
_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def temporary_path(path: Path) -> Path:
    """The temporary file beside ``path`` that this process writes before renaming it into place."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_error(error: OSError, path: Path) -> OSError:
    """``error`` restated for ``path`` (the destination, not the temporary file), in one line."""
    if error.errno in _DISK_FULL:
        return OSError(error.errno, "disk full (the partial file was removed)", str(path))
    return OSError(error.errno, error.strerror or str(error), str(path))


def atomic_write(path: str | Path, content: bytes | str | Callable[[IO[bytes]], Any]) -> Path:
    """Write ``content`` (bytes, text as UTF-8, or a function writing to a binary file) to ``path``
    atomically; creates missing parent directories. Returns ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OSError(errno.ENOTDIR, "a parent of this path is a file, not a directory", str(path)) from None
    except OSError as error:
        raise write_error(error, path) from None
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(path))
    temporary = temporary_path(path)
    try:
        with open(temporary, "wb") as handle:
            if isinstance(content, str):
                handle.write(content.encode("utf-8"))
            elif isinstance(content, (bytes, bytearray, memoryview)):
                handle.write(content)
            else:
                content(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as error:
        raise write_error(error, path) from None
    except Exception as error:
        # A serialiser that fails while writing (torch.save's zip writer after a full disk raises
        # "RuntimeError: unexpected pos ..." during the OSError's handling) reports the OSError.
        cause = _os_error_in(error)
        if cause is None:
            raise
        raise write_error(cause, path) from None
    finally:
        # After os.replace the temporary name no longer exists; before it, this removes the partial file.
        temporary.unlink(missing_ok=True)
    return path


def _os_error_in(error: BaseException) -> OSError | None:
    """The first OSError in the chain of causes and contexts of ``error``, or None."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temporaries(directory: str | Path) -> list[Path]:
    """Remove the ``.NAME.PID.tmp`` files in ``directory`` whose writing process is gone (left by a kill);
    returns what was removed."""
    directory = Path(directory)
    removed = []
    if not directory.is_dir():
        return removed
    for candidate in directory.iterdir():
        match = _TEMPORARY.match(candidate.name)
        if match and candidate.is_file() and (int(match["pid"]) == os.getpid() or not _alive(int(match["pid"]))):
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


# -- checks of output paths, made before the work that fills them --------------------------------


def _creatable_directory(path: Path, option: str, given: Path) -> None:
    for parent in (path, *path.parents):
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{option} {given}: {parent} is a file, not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ValueError(f"{option} {given}: cannot write in {parent} (permission denied)")
            _try_a_file_in(parent, option, given)
            return


def _try_a_file_in(directory: Path, option: str, given: Path) -> None:
    """Create and remove an empty file in ``directory``: ``os.access`` says yes to root everywhere, even
    under ``/proc``, where the real write would fail only after the work."""
    try:
        descriptor, name = tempfile.mkstemp(dir=directory, prefix=".bgtrain-check-")
    except OSError as error:
        raise ValueError(f"{option} {given}: cannot write in {directory} ({error.strerror or error})") from None
    os.close(descriptor)
    os.unlink(name)


def check_output_file(path: str | Path, option: str) -> Path:
    """A ValueError naming ``option`` unless ``path`` can be written as a file (it may exist)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{option} {path}: is a directory; give a file name")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{option} {path}: cannot overwrite it (permission denied)")
    _creatable_directory(path.parent, option, path)
    return path


def check_output_directory(path: str | Path, option: str) -> Path:
    """A ValueError naming ``option`` unless ``path`` is a directory or can be created as one."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{option} {path}: is a file; give a directory")
    _creatable_directory(path, option, path)
    return path


# -- the tagged torch format ------------------------------------------------------------------------


def save_tagged(path: str | Path, format_name: str, format_version: int, payload: dict[str, Any]) -> Path:
    """``payload`` with its format tag, as one ``torch.save`` file written atomically."""
    import torch

    tagged = {"format": format_name, "format_version": format_version, **payload}
    return atomic_write(path, lambda handle: torch.save(tagged, handle))


def is_torchscript_archive(path: Path) -> bool:
    """Whether ``path`` is a TorchScript file (a zip archive with compiled code), not a plain torch.save."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.split("/", 1)[-1].startswith("code/") for name in archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def load_tagged(
    path: str | Path, format_name: str, format_version: int, what: str, weights_only: bool = False,
    map_location: Any = "cpu",
) -> dict[str, Any]:
    """The dict saved by ``save_tagged``; ``what`` names the kind of file in errors ("checkpoint")."""
    import torch

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no {what.removeprefix('bgtrain ')} at {path}")
    if path.is_dir():
        raise ValueError(f"{path} is a directory, not a {what.removeprefix('bgtrain ')} file")
    if is_torchscript_archive(path):
        raise ValueError(f"{path} is a TorchScript export, made for other programs (C++, Java, ...); "
                         f"bgtrain reads its own checkpoints (.pt) and ONNX exports (.onnx)")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=weights_only)
    except Exception as error:  # noqa: BLE001 -- torch raises many types for a corrupt or foreign file
        first_line = (str(error).strip().splitlines() or [""])[0][:120]
        raise ValueError(f"{path} is not a readable {what} ({type(error).__name__}: {first_line})") from None
    if not isinstance(payload, dict) or payload.get("format") != format_name:
        raise ValueError(f"{path} is not a {what} (no '{format_name}' format tag)")
    if payload.get("format_version") != format_version:
        raise ValueError(f"{path} has {what} format version {payload.get('format_version')!r}, "
                         f"this bgtrain reads {format_version}")
    return payload
