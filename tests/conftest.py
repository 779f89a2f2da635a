"""Shared test settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """Tests check behaviour, not speed, on shared machines where two torch threads run small and
    mid-sized batches several times slower (measured 6x to 10x): one thread keeps the suite's time
    predictable."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def cluster():
    """A 2-CPU Ray cluster on 127.0.0.1 for the test session (started once: Ray takes seconds to start); its
    workers import this checkout's bgtrain and run the engine's kernels op by op (the tests' batches are
    small: compiling them would cost more than it saves)."""
    ray = pytest.importorskip("ray")
    path = os.environ.get("PYTHONPATH")
    compile_mode = os.environ.get("BGTRAIN_COMPILE")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), path or ""])
    os.environ["BGTRAIN_COMPILE"] = "never"
    started = not ray.is_initialized()
    if started:
        from bgtrain.distributed.local_cluster import keep_loopback

        keep_loopback()  # bound to 127.0.0.1, not the host's network address
        ray.init(address="local", num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False,
                 log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()
    if path is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = path
    if compile_mode is None:
        del os.environ["BGTRAIN_COMPILE"]
    else:
        os.environ["BGTRAIN_COMPILE"] = compile_mode


@pytest.fixture(scope="module")
def workers(cluster):
    """Two Ray workers for one test module (each prepares its evaluator and databases once per job), of
    half a CPU each: a command line started by a test gets the cluster's other CPU."""
    from bgtrain.distributed.executor import make_executor

    executor = make_executor("ray", workers=2, worker_cpus=0.5)
    yield executor
    executor.close()
