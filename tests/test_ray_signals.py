"""Joining Ray keeps the driver's SIGINT and SIGTERM handlers: a training stopped by a signal saves its
state (``bgtrain.training.stop_signals``) on every executor. Run in a child process, so that the private
cluster is this test's alone."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("ray")

CHILD = """
import signal
from bgtrain.distributed.ray_executor import connect

def handler(number, frame):
    pass

signal.signal(signal.SIGTERM, handler)
signal.signal(signal.SIGINT, handler)
started, _ = connect(None)
import ray
assert started and ray.is_initialized()
kept = signal.getsignal(signal.SIGTERM) is handler and signal.getsignal(signal.SIGINT) is handler
ray.shutdown()
print("kept" if kept else "replaced")
"""


def test_joining_ray_keeps_the_drivers_signal_handlers():
    result = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "kept"
