"""Supervised training on Ray Train (``bgtrain.distributed.ray_train``) on a real two-node cluster on
127.0.0.1 (``tests/test_distributed_cluster.py``'s, each node started in its own directory): at 2
workers it trains the single-process run's weights (within float tolerance), writes the same
checkpoints and TensorBoard logs, opens no path of the driver's on the workers, and a run whose driver
is killed resumes to the weights of an uninterrupted one.

The drivers are command lines run from a directory of their own holding the dataset at the relative
path ``data``, which exists nowhere else: not in the nodes' directories, where their workers start.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers import random_boards
from test_distributed_cluster import _driver_environment, two_nodes  # noqa: F401 -- the module's cluster

from bgtrain.datasets.shards import FORMAT_VERSION, MANIFEST_FORMAT, write_manifest, write_shard
from bgtrain.model.loading import load_model
from engine.position_kinds import position_kinds

pytest.importorskip("ray.train.torch")
ROOT = Path(__file__).resolve().parent.parent
POSITIONS = 200
# 180 training positions in batches of 48 (the last one of 36), 20 epochs: enough that a signal after the
# first epoch's checkpoint finds the workers still training (they run at most 3 epochs ahead of the driver).
SETTINGS = ["supervised.datasets=['data']", "model.encoder=tesauro_plus", "model.hidden=[32]",
            "supervised.kinds=['contact','crashed','race','bearoff']", "supervised.heldout_fraction=0.1",
            "supervised.epochs=20", "supervised.batch_size=48", "evaluation.games=2", "evaluation.benchmark=false",
            "checkpoint.keep_last=0"]


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    """The drivers' directory, with a dataset of 200 positions (random targets) at ``data``."""
    directory = tmp_path_factory.mktemp("driver")
    positions = random_boards(POSITIONS, seed=1)
    targets = torch.rand(POSITIONS, 5, generator=torch.Generator().manual_seed(0)).sort(dim=1, descending=True).values
    tensors = {"positions": positions, "targets": targets, "standard_errors": torch.zeros(POSITIONS, 5),
               "zero_ply": targets, "kinds": position_kinds(positions).to(torch.int8)}
    (directory / "data").mkdir()
    entry = write_shard(directory / "data", 0, tensors)
    write_manifest(directory / "data", {"format": MANIFEST_FORMAT, "format_version": FORMAT_VERSION,
                                        "labeller": {"kind": "test"}, "source_model": "", "shards": [entry]})
    return directory


def _train_command(out: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bgtrain.cli", "train", "--config", str(ROOT / "configs" / "supervised_gen1.toml"),
            "--out", out, "--threads", "1", "--no-progress", *SETTINGS, *extra]


def _train(directory: Path, command: list[str], cluster=None, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=False, cwd=directory, env=_driver_environment(cluster), capture_output=True,
                          text=True, timeout=timeout)


def _max_difference(first: Path, second: Path) -> float:
    a, b = load_model(first).model.state_dict(), load_model(second).model.state_dict()
    return max(float((a[name] - b[name]).abs().max()) for name in a)


@pytest.fixture(scope="module")
def uninterrupted(two_nodes, driver):  # noqa: F811 -- the fixture imported above
    """A 2-worker Ray run to its end (shared by the tests below)."""
    cluster, _ = two_nodes
    done = _train(driver, _train_command("ray_whole", "--executor", "ray", "--address", cluster.address), cluster)
    assert done.returncode == 0, done.stderr
    return done


def test_two_workers_train_the_single_process_weights(two_nodes, driver, uninterrupted):  # noqa: F811
    cluster, root = two_nodes
    assert f"joined the cluster at {cluster.address} (from --address): Ray Train, 2 workers" in uninterrupted.stderr
    single = _train(driver, _train_command("single"))
    assert single.returncode == 0, single.stderr
    run = driver / "ray_whole"
    assert _max_difference(driver / "single" / "final.pt", run / "final.pt") < 1e-5
    payload = load_model(run / "final.pt").payload
    assert payload["counters"]["epochs"] == 20 and payload["counters"]["steps"] == 20 * 4  # ceil(180 / 48) an epoch
    assert payload["datasets"][0]["positions"] == POSITIONS
    assert sorted(path.name for path in (run / "checkpoints").iterdir()) == [f"epoch_{n:04d}.pt" for n in range(1, 21)]
    assert (run / "latest.pt").is_file() and list((run / "tensorboard").glob("events.out.tfevents.*"))
    assert "held-out loss" in uninterrupted.stdout
    # The relative path `data` is the driver's alone: no node (nor Ray's session files) holds a dataset.
    assert not list(root.rglob("manifest.json"))


@pytest.mark.slow  # two more Ray runs each: about 90 s on a loaded 2-core machine
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "terminated"])
def test_a_stopped_driver_resumes_to_the_uninterrupted_weights(two_nodes, driver, uninterrupted, stop):  # noqa: F811
    """SIGKILL: the run resumes from its last epoch checkpoint. SIGTERM: the workers stop before the same
    step, the driver saves latest.pt there (inside an epoch, as a rule) and exits with status 143."""
    cluster, _ = two_nodes
    name = f"ray_{signal.Signals(stop).name}"
    run = driver / name
    # A benchmark check after every epoch keeps the driver busy (the workers wait on it), so that the
    # run is still going when its first epoch's checkpoint appears.
    slow_epochs = ["evaluation.benchmark=true", "evaluation.benchmark_decisions=100"]
    job = subprocess.Popen(_train_command(name, "--executor", "ray", "--address", cluster.address, *slow_epochs),
                           cwd=driver, env=_driver_environment(cluster), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    while not (run / "checkpoints" / "epoch_0001.pt").exists() and job.poll() is None:
        assert time.monotonic() - started < 180, "no epoch checkpoint within 180 s"
        time.sleep(0.05)
    assert job.poll() is None, job.stderr.read()
    os.kill(job.pid, stop)
    _, stderr = job.communicate(timeout=120)
    assert not (run / "final.pt").exists(), stderr
    if stop == signal.SIGTERM:
        assert job.returncode == 128 + signal.SIGTERM, stderr
        assert f"saved {name}/latest.pt at epoch" in stderr, stderr
    resumed = _train(driver, [sys.executable, "-m", "bgtrain.cli", "train", "--resume", str(run / "latest.pt"),
                              "--threads", "1", "--no-progress", "--address", cluster.address], cluster)
    assert resumed.returncode == 0, resumed.stderr
    assert _max_difference(driver / "ray_whole" / "final.pt", run / "final.pt") < 1e-6


def test_a_fraction_of_a_gpu_is_refused_in_one_line(driver, capsys):
    from bgtrain.cli import main

    status = main(["train", "--config", str(ROOT / "configs" / "supervised_gen1.toml"), "--out",
                   str(driver / "gpu_fraction"), *SETTINGS, "supervised.datasets=['" + str(driver / "data") + "']",
                   "--executor", "ray", "executor.worker_gpus=0.5"])
    error = capsys.readouterr().err.strip()
    assert status == 2 and len(error.splitlines()) == 1, error
    assert "worker_gpus = 0.5" in error and "NCCL" in error


@pytest.mark.slow  # another Ray Train start: about 30 s
def test_a_node_with_other_code_is_refused_by_name(two_nodes, driver):  # noqa: F811
    """The workers compare their bgtrain with the driver's; here the driver claims other code."""
    cluster, _ = two_nodes
    claim = ("import sys; from bgtrain.distributed import ray_train; from bgtrain.cli import main; "
             "ray_train.code_version = lambda: 'bgtrain 0.0.0, code 000000000000'; sys.exit(main(sys.argv[1:]))")
    done = _train(driver, [sys.executable, "-c", claim, *_train_command("other_code", "--executor", "ray", "--address",
                                                                        cluster.address)[3:]], cluster)
    error = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2, done.stderr
    assert re.match(r"^bgtrain train: error: Ray Train: node 127\.0\.0\.1 runs bgtrain .*, this driver runs "
                    r"bgtrain 0\.0\.0, code 000000000000: install the same bgtrain on every node", error), error
