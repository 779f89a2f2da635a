"""Every script in ``scripts/`` starts: it imports what it needs and its arguments parse (``--help`` prints its
usage and exits 0), so a benchmark or data builder that no default test runs cannot rot unseen."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parent.parent / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[path.stem for path in SCRIPTS])
def test_the_script_starts(script, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exited:
        runpy.run_path(str(script), run_name="__main__")
    assert exited.value.code == 0 and printed.getvalue().startswith("usage:"), printed.getvalue()[:300]
