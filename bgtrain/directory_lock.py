"""One process at a time in a directory: an exclusive ``fcntl.flock`` on a lock file inside it.

The operating system releases the lock when the process ends, however it ends (a kill included), so a
lock is never left stuck; a second process that asks for a held lock is refused at once with one line
saying who holds it. Used by dataset generation and relabelling (``dataset.lock``); training runs hold
``run.lock`` the same way (``bgtrain.training.run_directory``).
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def directory_lock(directory: str | Path, lock_name: str, holder: str) -> Iterator[Path]:
    """Hold ``directory/lock_name`` exclusively for the ``with`` block (the directory is created);
    ``holder`` names the kind of process in the refusal ("bgtrain dataset"). Yields the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / lock_name
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise ValueError(f"{directory} is in use by another {holder} process (it holds {path}); "
                                 "wait for it or write elsewhere with --out") from None
            raise
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        yield directory
    finally:
        os.close(descriptor)  # closing the descriptor releases the flock
