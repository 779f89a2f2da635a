"""Pooling finished bench runs on several seeds into one result (``scripts/pool_duels.py``,
``bgtrain.distributed.duels.pool_duel_work_directories``): the pairs of all of them, as one duel of all
those games would report them, and refusals where pooling would mislead."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from bgtrain.cli import main
from bgtrain.distributed.duels import pool_duel_work_directories

ROOT = Path(__file__).resolve().parent.parent


def _pool_script():
    spec = importlib.util.spec_from_file_location("pool_duels", ROOT / "scripts" / "pool_duels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def benches(tmp_path_factory):
    """Two finished duels of pubeval against random on seeds 4 and 5, and bench's own JSON of each."""
    root = tmp_path_factory.mktemp("benches")
    runs = {}
    for seed in (4, 5):
        work_dir, report = root / f"seed{seed}", root / f"seed{seed}.json"
        assert main(["bench", "pubeval", "random", "--games", "60", "--batch-pairs", "7", "--seed", str(seed),
                     "--threads", "1", "--work-dir", str(work_dir), "--json", str(report)]) == 0
        runs[seed] = (work_dir, json.loads(report.read_text()))
    return runs


def _pair_means(work_dir: Path) -> np.ndarray:
    shards = sorted(work_dir.glob("shard_*.npz"))
    return np.concatenate([(np.load(path)["first"] + np.load(path)["second"]) / 2 for path in shards])


def test_one_directory_pooled_is_the_bench_itself(benches):
    work_dir, report = benches[4]
    pooled, duels = pool_duel_work_directories([work_dir])
    assert pooled == duels[0]
    assert pooled.games == report["games"] == 60
    assert pooled.points_per_game == pytest.approx(report["points_per_game"])
    assert pooled.interval95 == pytest.approx(report["interval95"])


def test_two_seeds_pool_every_pair_of_both(benches):
    directories = [benches[4][0], benches[5][0]]
    pooled, duels = pool_duel_work_directories(directories)
    pairs = np.concatenate([_pair_means(directory) for directory in directories])
    assert len(pairs) == 60 and pooled.games == 120
    assert pooled.points_per_game == pytest.approx(pairs.mean())
    assert pooled.interval95 == pytest.approx(1.96 * pairs.std(ddof=1) / np.sqrt(len(pairs)))
    assert pooled.points_per_game == pytest.approx(np.mean([duel.points_per_game for duel in duels]))
    assert pooled.interval95 < max(duel.interval95 for duel in duels)  # twice the pairs: a narrower interval
    assert pooled.agent_a == "pubeval" and pooled.a_win > 0.5  # pubeval beats random


def test_pooling_refuses_what_would_mislead(benches, tmp_path):
    seed4, seed5 = benches[4][0], benches[5][0]
    with pytest.raises(ValueError, match="same dice .seed 4.: pooled, those games would count twice"):
        pool_duel_work_directories([seed4, seed4])
    unfinished = tmp_path / "unfinished"
    shutil.copytree(seed5, unfinished)
    max(unfinished.glob("shard_*.npz")).unlink()
    with pytest.raises(ValueError, match="unfinished: 4 of its 5 chunks are played; run its bench command again"):
        pool_duel_work_directories([seed4, unfinished])
    reversed_seats = tmp_path / "reversed"
    shutil.copytree(seed5, reversed_seats)
    job = json.loads((reversed_seats / "job.json").read_text())
    (reversed_seats / "job.json").write_text(json.dumps({**job, "agents": ["random", "pubeval"]}))
    with pytest.raises(ValueError, match="random vs pubeval .backgammon., where the first directory holds pubeval vs random"):
        pool_duel_work_directories([seed4, reversed_seats])
    with pytest.raises(ValueError, match="no job.json: not a bgtrain work directory"):
        pool_duel_work_directories([seed4, tmp_path / "missing"])
    assert not (tmp_path / "missing").exists(), "a refused directory is not created"


def test_a_checkpoint_under_another_path_is_the_same_agent(benches, tmp_path):
    from bgtrain.distributed.duels import _agent_identity

    copy = tmp_path / "copy.pt"
    shutil.copyfile(ROOT / "checkpoints" / "bgtrain-default.pt", copy)
    assert _agent_identity(f"{copy}:1ply") == _agent_identity("checkpoints/bgtrain-default.pt:1ply")
    assert _agent_identity(str(copy)) != _agent_identity("checkpoints/bgtrain-default.pt:1ply")
    assert _agent_identity(str(copy)) != _agent_identity("checkpoints/bgtrain-plus.pt")
    assert _agent_identity("gnubg:0ply") == "gnubg:0ply"


def test_the_script_prints_each_duel_and_the_pool_and_refuses_in_one_line(benches, tmp_path, capsys):
    script = _pool_script()
    out = tmp_path / "pooled.json"
    assert script.main([str(benches[4][0]), str(benches[5][0]), "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pubeval vs random" and lines[-1].strip().startswith("pooled: +")
    assert "over 120 games" in lines[-1] and len(lines) == 4
    report = json.loads(out.read_text())
    assert report["pooled"]["games"] == 120 and [duel["games"] for duel in report["duels"]] == [60, 60]
    assert script.main([str(benches[4][0]), str(benches[4][0])]) == 2
    error = capsys.readouterr().err
    assert error.startswith("pool_duels: ") and error.count("\n") == 1 and "Traceback" not in error


@pytest.fixture(scope="module")
def heuristic_benches(tmp_path_factory):
    """The heuristic agent against random on the dice of ``benches`` (seeds 4 and 5)."""
    root = tmp_path_factory.mktemp("heuristic")
    for seed in (4, 5):
        assert main(["bench", "heuristic", "random", "--games", "60", "--batch-pairs", "7", "--seed", str(seed),
                     "--threads", "1", "--work-dir", str(root / f"seed{seed}")]) == 0
    return {seed: root / f"seed{seed}" for seed in (4, 5)}


def test_two_agents_against_one_opponent_differ_pair_for_pair_on_the_same_dice(benches, heuristic_benches):
    from bgtrain.distributed.duels import paired_duel_difference

    pubeval = [benches[4][0], benches[5][0]]
    heuristic = [heuristic_benches[5], heuristic_benches[4]]  # matched by seed, not by order
    paired = paired_duel_difference(pubeval, heuristic)
    differences = np.concatenate([_pair_means(benches[seed][0]) - _pair_means(heuristic_benches[seed]) for seed in (4, 5)])
    assert paired.pairs == len(differences) == 60
    assert paired.difference == pytest.approx(differences.mean())
    assert paired.interval95 == pytest.approx(1.96 * differences.std(ddof=1) / np.sqrt(len(differences)))
    assert (paired.agent_a, paired.agent_b, paired.opponent) == ("pubeval", "heuristic", "random")
    itself = paired_duel_difference(pubeval, pubeval[::-1])  # the same games twice: no difference at all
    assert itself.difference == 0 and itself.interval95 == 0 and itself.correlation == pytest.approx(1)


def test_a_paired_difference_refuses_other_dice_or_another_opponent(benches, heuristic_benches, tmp_path, capsys):
    from bgtrain.distributed.duels import paired_duel_difference

    with pytest.raises(ValueError, match="seed5: no duel of the second agent on its seed 5"):
        paired_duel_difference([benches[4][0], benches[5][0]], [heuristic_benches[4]])
    other = tmp_path / "other"
    shutil.copytree(heuristic_benches[4], other)
    job = json.loads((other / "job.json").read_text())
    (other / "job.json").write_text(json.dumps({**job, "agents": ["heuristic", "pubeval"]}))
    with pytest.raises(ValueError, match="against random, the second against pubeval: a paired difference needs one"):
        paired_duel_difference([benches[4][0]], [other])
    script = _pool_script()
    assert script.main([str(benches[4][0]), str(benches[5][0]), "--minus", str(heuristic_benches[4]),
                        str(heuristic_benches[5])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("pubeval - heuristic against random on the same dice: ") and "over 60 pairs" in lines[-1]
    assert script.main([str(benches[4][0]), "--minus", str(other)]) == 2
    assert capsys.readouterr().err.startswith("pool_duels: the first duels are against random")
