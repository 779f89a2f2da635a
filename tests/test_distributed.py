"""bgtrain.distributed: the same seeds give the same results in process and on Ray; workers that die
and drivers that are killed lose nothing; bad addresses and missing Ray are one-line errors.

One real single-node Ray cluster with 2 CPUs serves the whole session (Ray takes seconds to start);
the small batches here stay under the engine's compile threshold, so no worker compiles kernels.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from bgtrain.distributed.duels import chunk_bounds, play_duel_chunked, play_league_chunked
from bgtrain.distributed.executor import ClusterError, InProcessExecutor, WorkUnit, make_executor, run_tasks
from bgtrain.distributed.shards import ShardStore
from bgtrain.distributed.work import SELFPLAY_SHARD, selfplay_context
from bgtrain.model.checkpoint import save_checkpoint
from bgtrain.model.network import ValueNetwork
from bgtrain.training.config import load_config
from engine.keyed_dice import KeyedDice, KeyedMirroredDice

ray = pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    """A small random network saved as a checkpoint: its weights travel to the workers as numpy arrays."""
    torch.manual_seed(3)
    network = ValueNetwork("tesauro198", (16,))
    path = tmp_path_factory.mktemp("model") / "tiny.pt"
    config = load_config(None)
    save_checkpoint(path, {"model": network.model_args(), "weights": network.state_dict(),
                           "config": {"run": {"variant": config.run.variant}}, "counters": {}})
    return str(path)


# --- keyed dice: pair i's dice depend on (seed, i) alone ------------------------------------------------


def test_keyed_dice_of_a_stream_do_not_depend_on_the_batch():
    whole = KeyedDice(7, torch.arange(0, 50))
    part = KeyedDice(7, torch.arange(20, 30))
    whole_opening, whole_first = whole.opening(50)
    part_opening, part_first = part.opening(10)
    assert torch.equal(whole_opening[20:30], part_opening) and torch.equal(whole_first[20:30], part_first)
    for _ in range(5):
        assert torch.equal(whole.roll(50)[20:30], part.roll(10))
    assert not torch.equal(KeyedDice(8, torch.arange(0, 50)).roll(50), KeyedDice(7, torch.arange(0, 50)).roll(50))


def test_keyed_dice_are_fair():
    rolls = KeyedDice(1, torch.arange(60_000)).roll(60_000)
    faces = torch.bincount(rolls.flatten().long(), minlength=7)[1:].double() / rolls.numel()
    assert float((faces - 1 / 6).abs().max()) < 0.005
    assert bool((rolls[:, 0] >= rolls[:, 1]).all())
    assert abs(float((rolls[:, 0] == rolls[:, 1]).double().mean()) - 1 / 6) < 0.006  # doubles
    opening, _ = KeyedMirroredDice(1, 0, 1000).opening(2000)
    assert not bool((opening[:, 0] == opening[:, 1]).any()) and torch.equal(opening[:1000], opening[1000:])


def test_chunking_does_not_change_a_deterministic_duel(model_path):
    results = [play_duel_chunked(model_path, "pubeval", 24, seed=5, chunk_pairs=chunk) for chunk in (5, 12)]
    assert results[0] == results[1]
    assert chunk_bounds(40, 8) == [(0, 8), (8, 8), (16, 4)]


# --- the same results in process and on Ray ----------------------------------------------------------------


def test_bench_and_league_are_the_same_in_process_and_on_ray(cluster, model_path):
    executor = make_executor("ray", workers=2)
    try:
        on_ray = play_duel_chunked(model_path, "random", 24, seed=2, chunk_pairs=4, executor=executor)
        league_on_ray = play_league_chunked(["pubeval", "random", model_path], 8, seed=1, chunk_pairs=2,
                                            executor=executor)
    finally:
        executor.close()
    assert on_ray == play_duel_chunked(model_path, "random", 24, seed=2, chunk_pairs=4)
    assert league_on_ray == play_league_chunked(["pubeval", "random", model_path], 8, seed=1, chunk_pairs=2)
    assert on_ray.games == 24 and len(league_on_ray.matches) == 3


def test_selfplay_shards_are_the_same_in_process_and_on_ray(cluster):
    config = load_config(None, ["train.buffer_turns=4"])
    torch.manual_seed(0)
    network = ValueNetwork("tesauro198", (8,))
    context = selfplay_context(network, 3, config)
    tasks = [(index, {"seed": 10 + index, "slots": 8, "turns": 6}) for index in range(3)]
    local = InProcessExecutor()
    here = dict(run_tasks(local, SELFPLAY_SHARD, local.share(context), tasks))
    executor = make_executor("ray", workers=2)
    try:
        there = dict(run_tasks(executor, SELFPLAY_SHARD, executor.share(context), tasks))
    finally:
        executor.close()
    for index, _ in tasks:
        assert here[index]["boards"].shape == (48, 28) and here[index]["targets"].shape == (48, 5)
        assert here[index]["version"] == there[index]["version"] == 3
        assert np.array_equal(here[index]["boards"], there[index]["boards"])
        assert np.array_equal(here[index]["targets"], there[index]["targets"])
    assert not np.array_equal(here[0]["boards"], here[1]["boards"])  # different seeds, different games


def test_training_gives_the_same_weights_in_process_and_on_ray_at_1_and_2_workers(cluster, tmp_path):
    """With the config's defaults for the schedule (``max_in_flight``, ``worker_cpus``) and the driver at
    two torch threads, as a user's would be on two cores: the shards in flight and the shards' thread
    count are the config's, not the executor's, so every executor trains the same weights."""
    from bgtrain.commands.train import train

    # broadcast_every=1: new weights after every update, so that a schedule that depended on the
    # executor (two shards in flight in process, two per actor on Ray, as before) would differ by the
    # third shard.
    common = ["model.hidden=[40]", "selfplay.turn_limit=120", "train.total_games=12", "train.buffer_turns=4",
              "evaluation.every_games=0", "evaluation.games=2", "checkpoint.every_seconds=0.0",
              "executor.shard_games=4", "executor.shard_turns=64", "executor.broadcast_every=1",
              f"run.out_dir={tmp_path}"]
    finals = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for mode, workers in (("process", 0), ("ray", 1), ("ray", 2)):
            config = load_config(None, [*common, f"executor.mode={mode}", f"executor.workers={workers}",
                                        f"run.name={mode}{workers}"])
            finals[mode, workers] = torch.load(train(config, progress=False), weights_only=False)
    finally:
        torch.set_num_threads(threads)
    reference = finals["process", 0]
    assert reference["counters"]["games"] >= 12 and reference["counters"]["updates"] >= 3
    for key in (("ray", 1), ("ray", 2)):
        for counter in ("games", "turns", "updates"):
            assert finals[key]["counters"][counter] == reference["counters"][counter], (key, counter)
        for name, value in reference["weights"].items():
            assert torch.equal(value, finals[key]["weights"][name]), (key, name)


def test_a_distributed_training_run_resumes_where_it_stopped(tmp_path):
    from bgtrain.commands.train import train

    settings = ["model.hidden=[8]", "selfplay.turn_limit=120", "train.buffer_turns=4", "train.minibatch_size=0",
                "evaluation.every_games=0", "evaluation.games=2", "checkpoint.every_seconds=0.0",
                "executor.mode=process", "executor.shard_games=8", "executor.shard_turns=64",
                f"run.out_dir={tmp_path}", "run.name=resumed"]
    train(load_config(None, [*settings, "train.total_games=8"]), progress=False)
    first = torch.load(tmp_path / "resumed" / "latest.pt", weights_only=False)
    shards = first["training"]["distributed"]["shards"]
    assert shards >= 1 and first["counters"]["updates"] == shards
    final = torch.load(train(load_config(None, [*settings, "train.total_games=16"]),
                             resume=tmp_path / "resumed" / "latest.pt", progress=False), weights_only=False)
    assert final["counters"]["games"] >= 16 and final["counters"]["updates"] > shards


# --- faults -----------------------------------------------------------------------------------------------


def _prepare_nothing(context, device):
    return context


def _dies_on_first_attempt(prepared, task):
    """Doubles ``task["value"]``; the first attempt at task 0 kills its worker process."""
    flag = Path(prepared["flag_dir"]) / f"attempted_{task['value']}"
    if task["value"] == 0 and not flag.exists():
        flag.touch()
        os._exit(1)
    if task.get("sleep"):
        time.sleep(task["sleep"])
    return {"double": 2 * task["value"]}


FRAGILE = WorkUnit("fragile", _prepare_nothing, _dies_on_first_attempt)


@pytest.fixture
def fragile_unit():
    """Ray pickles this test module's functions by value: its workers cannot import it."""
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield FRAGILE
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_a_worker_that_dies_mid_task_loses_nothing(cluster, fragile_unit, tmp_path):
    executor = make_executor("ray", workers=1)
    try:
        shared = executor.share({"flag_dir": str(tmp_path)})
        results = list(run_tasks(executor, fragile_unit, shared, [(k, {"value": k}) for k in range(8)], window=4))
        assert [key for key, _ in results] == list(range(8))
        assert [result["double"] for _, result in results] == [2 * k for k in range(8)]
        assert executor.retried >= 1  # the task ran again on a fresh worker, and counted once
    finally:
        executor.close()


def test_a_killed_actor_has_its_tasks_retried(cluster, fragile_unit, tmp_path):
    executor = make_executor("ray", workers=1)
    try:
        (tmp_path / "attempted_0").touch()  # no self-inflicted death here: the actor is killed from outside
        shared = executor.share({"flag_dir": str(tmp_path)})
        for k in range(4):
            executor.submit(fragile_unit, shared, k, {"value": k, "sleep": 0.5})
        time.sleep(0.3)
        ray.kill(executor.actors[0])
        results = [executor.next_result() for _ in range(4)]
        assert results == [(k, {"double": 2 * k}) for k in range(4)]
        assert executor.retried >= 1
    finally:
        executor.close()


def _bench_command(work_dir: Path, json_path: Path) -> list[str]:
    return [sys.executable, "-m", "bgtrain.cli", "bench", "pubeval", "random", "--games", "120",
            "--batch-pairs", "6", "--seed", "4", "--threads", "1", "--work-dir", str(work_dir), "--json", str(json_path)]


def test_a_killed_driver_resumes_from_its_shards(tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "BGTRAIN_COMPILE": "never"}
    whole = tmp_path / "whole.json"
    subprocess.run(_bench_command(tmp_path / "whole", whole), env=environment, check=True, capture_output=True)
    work_dir = tmp_path / "killed"
    process = subprocess.Popen(_bench_command(work_dir, tmp_path / "unused.json"), env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(list(work_dir.glob("shard_*.npz"))) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    written = len(list(work_dir.glob("shard_*.npz")))
    assert 3 <= written < 10, "killed after some shards and before the end"
    resumed = tmp_path / "resumed.json"
    subprocess.run(_bench_command(work_dir, resumed), env=environment, check=True, capture_output=True)
    timing = ("seconds", "games_per_second")
    first, second = json.loads(whole.read_text()), json.loads(resumed.read_text())
    assert {k: v for k, v in first.items() if k not in timing} == {k: v for k, v in second.items() if k not in timing}


def test_a_work_directory_refuses_another_job(tmp_path):
    ShardStore(tmp_path, {"kind": "duel", "seed": 1})
    with pytest.raises(ValueError, match="holds another job .*seed"):
        ShardStore(tmp_path, {"kind": "duel", "seed": 2})


def test_a_node_with_other_bgtrain_code_is_refused_by_name(cluster, monkeypatch):
    from bgtrain.distributed import ray_executor

    monkeypatch.setattr(ray_executor, "code_version", lambda: "bgtrain 0.0.0, code 000000000000")
    with pytest.raises(ValueError, match=r"^node 127\.0\.0\.1/\w{8} runs bgtrain .*, code \w{12}, this driver runs "
                       r"bgtrain 0\.0\.0, code 0{12}: install the same bgtrain on every node") as error:
        make_executor("ray", workers=1)
    assert "\n" not in str(error.value)


def test_a_task_that_runs_too_long_is_a_one_line_error_naming_it_and_its_node(cluster, fragile_unit, tmp_path):
    (tmp_path / "attempted_0").touch()
    executor = make_executor("ray", workers=1, task_timeout=1.5)
    try:
        shared = executor.share({"flag_dir": str(tmp_path)})
        tasks = [(k, {"value": k, "sleep": 0.1 if k < 2 else 30}) for k in range(4)]
        started = time.monotonic()
        with pytest.raises(ClusterError, match=r"^task 2 \(fragile\) on node 127\.0\.0\.1/\w{8} \(worker pid \d+\) "
                           r"did not finish within --task-timeout 1\.5 s$"):
            for key, result in run_tasks(executor, fragile_unit, shared, tasks):
                assert result["double"] == 2 * key
        assert time.monotonic() - started < 20
    finally:
        executor.close()


def test_the_ray_executor_says_which_cluster_it_joined(cluster, capsys):
    executor = make_executor("ray", workers=1, announce=True)
    executor.close()
    assert "ray: the Ray session this process already holds: 1 worker on 1 node" in capsys.readouterr().err


def test_an_onnx_agent_travels_as_bytes_and_needs_no_file_where_it_plays(tmp_path, monkeypatch):
    """The recipe holds the export's bytes and the bear-off databases' bytes: a worker whose directory
    lacks the file (deleted here after the driver read it) plays with it all the same."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from bgtrain.distributed.work import DUEL_CHUNK, agent_recipe, duel_context, play_chunk
    from bgtrain.export.writer import export_checkpoint
    from engine.variants import get_rules

    rules = get_rules("backgammon")
    monkeypatch.chdir(tmp_path)
    export_checkpoint(ROLLOUT_MODEL, tmp_path / "model.onnx", "onnx")
    data = (tmp_path / "model.onnx").read_bytes()
    context = duel_context([agent_recipe("model.onnx", rules), agent_recipe("pubeval", rules)], rules.name)
    (tmp_path / "model.onnx").unlink()
    assert context["agents"][0]["onnx"] == data and "path" not in context["agents"][0]
    assert sorted(context["databases"]) == ["bearoff-two-sided-v1-6.pt", "bearoff-v1.pt"]
    task = {"a": 0, "b": 1, "seed": 3, "first_pair": 0, "pairs": 4, "seed_a": 3, "seed_b": 4}
    played = play_chunk(DUEL_CHUNK.prepare(context, "cpu"), task)
    assert played["first"].shape == played["second"].shape == (4,)
    with pytest.raises(FileNotFoundError, match="no ONNX model at model.onnx"):
        agent_recipe("model.onnx", rules)  # the driver itself does need the file


# --- user errors: one line -------------------------------------------------------------------------------


@pytest.mark.parametrize("address, message", [
    ("not an address", "give 'auto' or HOST:PORT"),
    ("127.0.0.1:1", "no Ray cluster answers there"),
])
def test_bad_addresses_are_one_line_errors(address, message):
    with pytest.raises(ValueError, match=message) as error:
        make_executor("ray", address=address)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="use it with --executor ray"):
        make_executor("process", address="auto")


def test_ray_address_is_the_cluster_named_when_no_address_is_given(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with pytest.raises(ValueError, match=r"^RAY_ADDRESS 127\.0\.0\.1:1: no Ray cluster answers there"):
        make_executor("ray")


def test_missing_ray_is_a_one_line_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ValueError, match=r"needs Ray, which is not installed \(pip install 'bgtrain\[ray\]'\)"):
        make_executor("ray")


def test_the_cli_reports_a_bad_address_in_one_line():
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "bgtrain.cli", "bench", "pubeval", "random", "--games", "2",
                           "--executor", "ray", "--address", "127.0.0.1:1"], check=False, env=environment,
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no Ray cluster answers there" in done.stderr


def test_bench_on_ray_from_the_command_line_matches_in_process(cluster, tmp_path):
    """The CLI end to end: a second driver joins the session's cluster by its address."""
    address = ray.get_runtime_context().gcs_address
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "BGTRAIN_COMPILE": "never"}
    reports = {}
    for name, extra in (("process", []), ("ray", ["--executor", "ray", "--address", address, "--workers", "2"])):
        path = tmp_path / f"{name}.json"
        subprocess.run([sys.executable, "-m", "bgtrain.cli", "bench", "pubeval", "random", "--games", "16",
                        "--batch-pairs", "2", "--threads", "1", "--json", str(path), *extra],
                       env=environment, check=True, capture_output=True)
        reports[name] = json.loads(path.read_text())
    assert reports["ray"]["executor"] == "ray"
    same = ("points_per_game", "interval95", "a_win", "a_gammon", "b_win", "b_gammon", "games")
    assert {k: reports["ray"][k] for k in same} == {k: reports["process"][k] for k in same}


# --- rollouts: chunks of trials on any executor, the same numbers to the bit ----------------------------

ROLLOUT_MODEL = str(ROOT / "checkpoints" / "bgtrain-default.pt")


def _rollout_inputs():
    from bgtrain.cube import CubeState
    from bgtrain.rollout import RolloutSettings
    from engine.position_id import decode_position_id

    boards = torch.stack([decode_position_id("4HPwATDgc/ABMA"), decode_position_id("4OvgATDgc+QBUA")])
    return boards, RolloutSettings(truncate=6, cube=True), CubeState(2, "centred")


def _same_rollout(a, b) -> bool:
    arrays = ("boards", "outcomes", "raw_outcomes", "plies", "cubeful", "raw_cubeful", "streams")
    return (all(torch.equal(getattr(a, name), getattr(b, name)) for name in arrays)
            and (a.first_trial, a.settings, a.seed, a.rules) == (b.first_trial, b.settings, b.seed, b.rules))


@pytest.fixture(scope="module")
def reference_rollout():
    """108 trials of two positions in one in-process batch: what every chunking must reproduce."""
    from bgtrain.rollout import rollout
    from bgtrain.values.evaluator import Evaluator

    boards, settings, cube = _rollout_inputs()
    return rollout(Evaluator.from_path(ROLLOUT_MODEL), boards, settings, seed=11, trials=108, cubes=cube)


def test_a_rollout_on_ray_is_the_in_process_rollout_to_the_bit(cluster, reference_rollout, tmp_path):
    from bgtrain.distributed.rollouts import rollout_distributed

    boards, settings, cube = _rollout_inputs()
    executor = make_executor("ray", workers=2)
    try:
        on_ray = rollout_distributed(ROLLOUT_MODEL, boards, settings, seed=11, trials=108, chunk=36, cubes=cube,
                                     executor=executor, work_dir=tmp_path / "shards")
    finally:
        executor.close()
    assert _same_rollout(on_ray, reference_rollout)
    assert len(list((tmp_path / "shards").glob("shard_*.npz"))) == 3
    resumed = rollout_distributed(ROLLOUT_MODEL, boards, settings, seed=11, trials=108, chunk=36, cubes=cube,
                                  work_dir=tmp_path / "shards")  # every chunk read back from its shard
    assert _same_rollout(resumed, reference_rollout)


def test_a_rollout_survives_a_killed_worker(cluster, reference_rollout):
    from bgtrain.distributed.rollouts import rollout_distributed

    boards, settings, cube = _rollout_inputs()
    executor = make_executor("ray", workers=1)
    submit, killed = executor.submit, []

    def submit_then_kill_the_worker(*arguments):
        # The kill follows the first chunk's dispatch, not a timer: a fast machine could finish
        # every chunk before a timer fired, and the test would then prove nothing.
        submit(*arguments)
        if not killed:
            killed.append(executor.actors[0])
            ray.kill(killed[0])

    executor.submit = submit_then_kill_the_worker
    try:
        result = rollout_distributed(ROLLOUT_MODEL, boards, settings, seed=11, trials=108, chunk=36, cubes=cube,
                                     executor=executor)
    finally:
        executor.close()
    assert executor.retried >= 1, "the worker was killed while it held chunks"
    assert _same_rollout(result, reference_rollout)


def test_a_distributed_rollout_chunk_keeps_whole_strata():
    from bgtrain.distributed.rollouts import trial_chunks

    assert trial_chunks(100, 36) == [(0, 36), (36, 36), (72, 28)]
    with pytest.raises(ValueError, match="multiple of 36"):
        trial_chunks(100, 50)


@pytest.mark.slow
def test_rollout_on_ray_from_the_command_line_matches_in_process(cluster):
    address = ray.get_runtime_context().gcs_address
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "BGTRAIN_COMPILE": "never"}
    common = [sys.executable, "-m", "bgtrain.cli", "rollout", "4HPwATDgc/ABMA", "--trials", "72", "--truncate", "4",
              "--threads", "1", "--json", "--quiet", "--model", ROLLOUT_MODEL]
    reports = {}
    for name, extra in (("process", []), ("ray", ["--executor", "ray", "--address", address, "--chunk", "36"])):
        done = subprocess.run(common + extra, env=environment, check=True, capture_output=True, text=True)
        reports[name] = json.loads(done.stdout)
    assert reports["ray"]["positions"] == reports["process"]["positions"]
