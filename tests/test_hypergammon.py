"""GNU Backgammon's hypergammon databases read by ``bgtrain.values.hypergammon``, checked against the game.

The reader's position mapping is checked by Bellman consistency: for every position and each of the
21 rolls, the mover plays the legal afterstate the file values best (from the opponent's side), and the
roll-weighted average must give the file's own equity of the position, to makehyper's convergence
threshold. Finished games are checked against ``engine.game.winning_points``. ``tests/data/hyper1.bd``
is ``makehyper -c 1``'s output; the 2-checker file is built by ``makehyper -c 2`` (a minute) when GNU
Backgammon is installed, in the slow tests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from bgtrain.outcomes import flip_outcomes, terminal_outcomes
from bgtrain.values.hypergammon import (
    HEADER_SIZE,
    RECORD_SIZE,
    HypergammonDatabase,
    afterstate_equities,
    all_one_sided,
    bellman_equities,
    bellman_residuals,
    board_from_sides,
    default_path,
    live_positions,
    load_hypergammon_database,
    one_sided_rank,
    sampled_positions,
)
from engine.board import flip_board
from engine.game import winning_points
from engine.movegen import legal_afterstates
from engine.variants import get_rules

HYPER1 = Path(__file__).parent / "data" / "hyper1.bd"
MAKEHYPER = shutil.which("makehyper") or ("/usr/games/makehyper" if Path("/usr/games/makehyper").exists() else None)
THRESHOLD = 1e-3  # makehyper stops when no equity moves by more than its threshold (1e-5 by default)


def check_database(database: HypergammonDatabase, board: torch.Tensor) -> None:
    rules = database.rules
    residual = bellman_residuals(database, board)
    assert residual.max() < THRESHOLD, f"Bellman residual {residual.max():.2e} on {database.path}"
    # Finished games: the file's records are the game's score, for either side having finished.
    sides = all_one_sided(database.checkers)[1:]
    finished = board_from_sides(torch.zeros_like(sides), sides)  # the side on roll has borne off all
    won = terminal_outcomes(winning_points(finished, rules).long(), torch.float64)
    torch.testing.assert_close(database.probabilities(finished), won, atol=1e-7, rtol=0)
    torch.testing.assert_close(database.probabilities(flip_board(finished)), flip_outcomes(won), atol=1e-7, rtol=0)


def test_one_sided_rank_is_a_bijection_in_gnu_order():
    for checkers, count in ((1, 26), (2, 351), (3, 3276)):
        sides = all_one_sided(checkers)
        assert sides.shape == (count, 25)
        assert torch.equal(one_sided_rank(sides), torch.arange(count))
    # One checker on place p (its point p, the bar 25) has rank p: the order GNU's files use.
    one = torch.eye(25, dtype=torch.int64)
    assert one_sided_rank(one).tolist() == list(range(1, 26))


def test_hyper1_every_position_is_bellman_consistent():
    database = HypergammonDatabase(HYPER1)
    assert database.checkers == 1 and database.rules.name == "hypergammon1"
    ranks = torch.arange(1, 26)
    mover, opponent = torch.meshgrid(ranks, ranks, indexing="ij")
    board = live_positions(1, mover.flatten(), opponent.flatten())
    assert board.shape[0] == 601  # 625 pairs less the 24 with both checkers on one point
    assert torch.equal(database.index(board) // 26, one_sided_rank(board[:, 1:26].long().clamp(min=0)))
    check_database(database, board)


def test_a_wrong_mapping_is_caught():
    """The check can fail: reading each record as if the sides were swapped breaks the consistency."""
    database = HypergammonDatabase(HYPER1)
    ranks = torch.arange(1, 26)
    mover, opponent = torch.meshgrid(ranks, ranks, indexing="ij")
    board = live_positions(1, mover.flatten(), opponent.flatten())
    swapped = (bellman_equities(database, flip_board(board)) - database.equity(board)).abs()
    assert swapped.max() > 0.1


def test_start_position_equities():
    database = HypergammonDatabase(HYPER1)
    rules = get_rules("hypergammon1")
    start = rules.start_board().unsqueeze(0)
    probabilities = database.probabilities(start)[0]
    # Symmetric start: the side on roll is ahead by its roll.
    assert 0.5 < probabilities[0] < 0.7
    # With one checker a side, every loss is a gammon: the loser has borne off nothing.
    assert abs(probabilities[1] - probabilities[0]) < 1e-6
    assert abs(probabilities[3] - (1 - probabilities[0])) < 1e-6
    assert 0 < probabilities[2] < probabilities[1]
    assert database.equity(start).shape == (1,)


def test_wrong_files_are_refused_in_one_line(tmp_path):
    good = HYPER1.read_bytes()
    cases = {
        "truncated.bd": good[:-28],
        "header.bd": b"gnubg-H9" + good[8:],
        "other.bd": b"not a database".ljust(40, b" ") + good[40:],
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ValueError) as error:
            HypergammonDatabase(path)
        assert "\n" not in str(error.value) and str(path) in str(error.value)
    with pytest.raises(FileNotFoundError, match=r"makehyper -c 2 -f .*hyper2\.bd.*gnubg") as missing:
        HypergammonDatabase(tmp_path / "hyper2.bd")
    assert "\n" not in str(missing.value)


def test_rules_and_default_lookup(tmp_path, monkeypatch):
    monkeypatch.setenv("BGTRAIN_HYPERGAMMON_DIR", str(tmp_path))
    assert default_path(3) == tmp_path / "hyper3.bd"
    with pytest.raises(FileNotFoundError, match="makehyper -c 1"):
        load_hypergammon_database(rules=get_rules("hypergammon1"))
    shutil.copy(HYPER1, tmp_path / "hyper1.bd")
    assert load_hypergammon_database(rules=get_rules("hypergammon1")).checkers == 1
    with pytest.raises(ValueError, match="only hypergammon1, hypergammon2, hypergammon, not 'backgammon'"):
        load_hypergammon_database(rules=get_rules("backgammon"))
    with pytest.raises(ValueError, match="1-checker hypergammon, not 'hypergammon'"):
        load_hypergammon_database(HYPER1, get_rules("hypergammon"))
    monkeypatch.delenv("BGTRAIN_HYPERGAMMON_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_path(2) == tmp_path / "bgtrain" / "hyper2.bd"


def sample_check(database: HypergammonDatabase, samples: int, seed: int) -> None:
    check_database(database, sampled_positions(database, samples, seed))


@pytest.mark.slow
@pytest.mark.skipif(MAKEHYPER is None, reason="GNU Backgammon's makehyper is not installed (Debian package gnubg)")
def test_hyper2_built_by_makehyper_is_bellman_consistent(tmp_path):
    path = tmp_path / "hyper2.bd"
    subprocess.run([MAKEHYPER, "-c", "2", "-n", "-f", str(path)], check=True, capture_output=True, timeout=600)
    sample_check(HypergammonDatabase(path), 4000, seed=1)


@pytest.mark.slow
def test_hyper3_sample_is_bellman_consistent():
    path = default_path(3)
    if not path.is_file():
        pytest.skip(f"no {path} (makehyper -c 3 takes hours)")
    sample_check(HypergammonDatabase(path), 4000, seed=2)


def test_exact_agent_plays_the_best_afterstate_and_refuses_other_variants():
    from bgtrain.arena.exact import ExactHypergammonAgent
    from bgtrain.arena.specs import make_agent
    from engine.random_play import sample_positions
    from engine.state import State

    rules = get_rules("hypergammon1")
    agent = make_agent(f"exact:{HYPER1}", rules)
    assert isinstance(agent, ExactHypergammonAgent) and agent.name == f"exact:{HYPER1}"
    board, dice = sample_positions(400, seed=3, rules=rules, games=64, turns=40)
    afterstates = legal_afterstates(board, dice, rules)
    count = board.shape[0]
    zeros = torch.zeros(count, dtype=torch.int32)
    state = State(board, dice, zeros.to(torch.int8), zeros, zeros.bool(), zeros.to(torch.int8))
    chosen = afterstates.select(agent.choose(state, afterstates))
    values = afterstate_equities(agent.database, afterstates.boards)
    best = torch.full((count,), -9.0, dtype=torch.float64).scatter_reduce(0, afterstates.position, values, "amax")
    torch.testing.assert_close(afterstate_equities(agent.database, chosen), best)
    assert (afterstates.counts > 1).sum() > 10  # real choices among them (one checker has few: a hit on the way)
    with pytest.raises(ValueError, match="only hypergammon1, hypergammon2, hypergammon, not 'nackgammon'"):
        make_agent(f"exact:{HYPER1}", get_rules("nackgammon"))
    with pytest.raises(ValueError, match="1-checker hypergammon, not 'hypergammon2'"):
        make_agent(f"exact:{HYPER1}", get_rules("hypergammon2"))


def test_bench_script_scores_the_database_perfect_and_random_not(tmp_path):
    script = Path(__file__).resolve().parents[1] / "scripts" / "bench_hypergammon_exact.py"
    output = tmp_path / "report.json"
    command = [sys.executable, str(script), "--variant", "hypergammon1", "--model", f"exact:{HYPER1}",
               "--database", str(HYPER1), "--games", "100", "--compare", "random,heuristic", "--json", str(output)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    exact, random_agent, heuristic = report["agents"]
    assert exact["choices"] > 10 and exact["moves"] == report["positions"]
    assert exact["summed_loss"] == 0 and exact["not_best_fraction"] == 0
    assert exact["equity_error"]["largest"] < 1e-6
    assert random_agent["millipoints_per_choice"] > 0 and random_agent["not_best_fraction"] > 0
    assert random_agent["equity_error"] is None
    assert heuristic["moves"] == exact["moves"]
    residual = report["bellman_residual"]  # makehyper ran hyper1 to its threshold
    assert residual["positions"] > 100 and residual["largest"] < THRESHOLD
    assert "signature: positions" in done.stdout
    wrong = subprocess.run([*command[:3], "backgammon"], check=False, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr
    missing_path = str(tmp_path / "hyper1.bd")
    missing = subprocess.run([*command[:7], missing_path], check=False, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "makehyper -c 1" in missing.stderr


def test_bench_script_measures_how_far_an_unfinished_database_is_from_exact(tmp_path):
    """A database away from its fixed point (every record's P(win) off by up to 0.03 at random, as an
    unfinished value iteration leaves it) is scored against as given, and its Bellman residual says so."""
    data = HYPER1.read_bytes()
    body = np.frombuffer(data[HEADER_SIZE:], dtype=np.uint8).reshape(-1, RECORD_SIZE).copy()
    # P(win) is bytes 0..2, little-endian over 2^24 - 1: nudging its top byte by -8..8 moves it by up to 0.03.
    nudge = np.random.default_rng(0).integers(-8, 9, size=len(body))
    body[:, 2] = np.clip(body[:, 2].astype(np.int64) + nudge, 0, 255)
    unfinished = tmp_path / "hyper1.bd"
    unfinished.write_bytes(data[:HEADER_SIZE] + body.tobytes())
    script = Path(__file__).resolve().parents[1] / "scripts" / "bench_hypergammon_exact.py"
    output = tmp_path / "report.json"
    command = [sys.executable, str(script), "--variant", "hypergammon1", "--database", str(unfinished),
               "--model", "exact", "--games", "20", "--compare", "", "--json", str(output)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Bellman residual" in done.stdout
    report = json.loads(output.read_text())
    assert report["agents"][0]["agent"] == f"exact:{unfinished}"
    assert report["bellman_residual"]["largest"] > 0.05


def test_bench_command_with_the_exact_agent(tmp_path):
    def bench(*arguments):
        return subprocess.run([sys.executable, "-m", "bgtrain.cli", "bench", *arguments, "--games", "40",
                               "--seed", "1", "--threads", "1", "--json", str(tmp_path / "bench.json")],
                              check=False, capture_output=True, text=True, timeout=300)

    done = bench(f"exact:{HYPER1}", f"exact:{HYPER1}", "--variant", "hypergammon1")
    assert done.returncode == 0, done.stderr
    # The same perfect player in both seats of every dice sequence: each pair's points cancel.
    assert json.loads((tmp_path / "bench.json").read_text())["points_per_game"] == 0
    refused = bench(f"exact:{HYPER1}", "random", "--variant", "nackgammon")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "only hypergammon1, hypergammon2, hypergammon" in refused.stderr
