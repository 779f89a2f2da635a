"""Which bgtrain a process runs: the package version and a digest of the source of ``bgtrain`` and
``engine``, so that a Ray driver can refuse workers whose code differs from its own.

A work unit's functions travel by reference (module and name), and each node imports its own
installed bgtrain: a node with other code would play other games, or fail with an unpickling
error far from its cause. The digest covers every ``.py`` file of both packages, by its path inside
the package and its bytes (about 120 files, some 30 ms once per process), so an edited checkout is
told apart from the release it was cloned from, and two installs of the same code in different
directories agree.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

PACKAGES = ("bgtrain", "engine")


@functools.cache
def code_version() -> str:
    """``"bgtrain 0.1.0, code 1a2b3c4d5e6f"``: the installed version and the source digest."""
    import bgtrain

    root = Path(bgtrain.__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    try:
        version = metadata.version("bgtrain")
    except metadata.PackageNotFoundError:
        version = "(not installed)"
    return f"bgtrain {version}, code {digest.hexdigest()[:12]}"
