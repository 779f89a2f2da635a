"""bgtrain on a real two-node Ray cluster: two `ray start` nodes of 1 CPU each on 127.0.0.1
(``bgtrain.distributed.local_cluster``), each started in its own directory with its own database
cache, as machines that share no disk would be; the drivers are command lines run from a third
directory, whose relative paths do not exist on the nodes.

The module's cluster is started once (Ray takes tens of seconds on a loaded 2-core machine) and
stopped by its own process ids at the end; the test that kills a node runs last. Measured here at a
load average of 18 to 20 on 2 cores: 25 s to start the cluster, 68 s for the node kill, 71 s for the
ONNX job (marked slow).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bgtrain.distributed.duels import play_duel_chunked

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "checkpoints" / "bgtrain-default.pt"
SAME = ("points_per_game", "interval95", "a_win", "a_gammon", "b_win", "b_gammon", "games")


@pytest.fixture(scope="module")
def two_nodes():
    from bgtrain.distributed.local_cluster import LocalCluster

    # A short directory: Ray's socket paths under it must stay within the 107 bytes of a Unix socket name.
    root = Path(tempfile.mkdtemp(prefix="bgray"))
    environment = {"PYTHONPATH": str(ROOT), "BGTRAIN_COMPILE": "never", "XDG_CACHE_HOME": str(root / "node_cache")}
    try:
        cluster = LocalCluster(root / "ray", [root / "node_a", root / "node_b"], cpus=1, environment=environment)
        try:
            yield cluster, root
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _driver_environment(cluster=None) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "BGTRAIN_COMPILE": "never"}
    environment.pop("RAY_ADDRESS", None)
    return {**environment, **(cluster.token_environment if cluster is not None else {})}


def _bench(arguments: list[str], directory: Path, json_path: Path, extra: list[str] = (), cluster=None,
           timeout: float = 240):
    command = [sys.executable, "-m", "bgtrain.cli", "bench", *arguments, "--threads", "1", "--json", str(json_path),
               *extra]
    return subprocess.run(command, check=False, cwd=directory, env=_driver_environment(cluster), capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow  # about a minute more; tests/test_distributed.py checks the bytes-not-paths recipe by default
def test_an_onnx_agent_plays_on_nodes_that_cannot_see_the_drivers_files(two_nodes, tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from bgtrain.export.writer import export_checkpoint
    from bgtrain.values import bearoff, bearoff_two_sided

    cluster, root = two_nodes
    driver = tmp_path / "driver"
    driver.mkdir()
    export_checkpoint(MODEL, driver / "model.onnx", "onnx")
    arguments = ["model.onnx", "pubeval", "--games", "16", "--batch-pairs", "2", "--seed", "3"]
    here = play_duel_chunked(str(driver / "model.onnx"), "pubeval", 16, seed=3, chunk_pairs=2).as_dict()
    there = _bench(arguments, driver, tmp_path / "ray.json",
                   ["--executor", "ray", "--address", cluster.address, "--task-timeout", "120"], cluster)
    assert there.returncode == 0, there.stderr
    assert f"joined the cluster at {cluster.address} (from --address): 2 workers on 2 nodes" in there.stderr
    finished = [line for line in there.stderr.splitlines() if line.startswith("ray: units finished per node")]
    assert len(finished) == 1 and finished[0].count("127.0.0.1/") == 2, there.stderr  # both nodes played
    ray = json.loads((tmp_path / "ray.json").read_text())
    assert {key: ray[key] for key in SAME} == {key: here[key] for key in SAME}
    assert not (root / "node_a" / "model.onnx").exists() and not (root / "node_b" / "model.onnx").exists()
    # The 0-ply agent plays bear-offs from the databases: the nodes got the driver's, as bytes.
    for path in (bearoff.default_path(), bearoff_two_sided.default_path()):
        assert (root / "node_cache" / "bgtrain" / path.name).read_bytes() == path.read_bytes()


def test_a_lost_node_s_work_finishes_on_the_survivor(two_nodes, tmp_path):
    """Node B (its raylet and its worker) is killed while both nodes play: every chunk is played, the
    lost ones again on the head's worker, and the result is the in-process one."""
    cluster, _ = two_nodes
    # Chunks long enough (100 games each) that node B still holds work when it is killed after the first
    # shards: with 20-game chunks a quiet machine finished the job before the kill could matter.
    arguments = ["pubeval", "random", "--games", "1600", "--batch-pairs", "50", "--seed", "6"]
    here = play_duel_chunked("pubeval", "random", 1600, seed=6, chunk_pairs=50).as_dict()
    work_dir = tmp_path / "work"
    command = [sys.executable, "-m", "bgtrain.cli", "bench", *arguments, "--threads", "1", "--json",
               str(tmp_path / "ray.json"), "--executor", "ray", "--address", cluster.address, "--task-timeout", "90",
               "--work-dir", str(work_dir)]
    started = time.monotonic()
    job = subprocess.Popen(command, cwd=tmp_path, env=_driver_environment(cluster), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    while len(list(work_dir.glob("shard_*.npz"))) < 2 and job.poll() is None and time.monotonic() - started < 180:
        time.sleep(0.05)
    assert job.poll() is None, "the job ended before node B was killed"
    cluster.kill_node(1)  # the raylet and its worker at once: the worker alone could finish B's work
    try:
        _, stderr = job.communicate(timeout=240)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, stderr
    assert "workers lost on 127.0.0.1/" in stderr, stderr
    assert len(list(work_dir.glob("shard_*.npz"))) == 16
    ray = json.loads((tmp_path / "ray.json").read_text())
    assert {key: ray[key] for key in SAME} == {key: here[key] for key in SAME}
