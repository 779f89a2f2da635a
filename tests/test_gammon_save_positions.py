"""scripts/make_gammon_save_positions.py: race positions where one side may still lose a gammon."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import torch

from bgtrain.datasets.shards import read_manifest, verify_shards
from engine.board import borne_off, flip_board
from engine.position_kinds import PositionKind, phase_kinds, position_kinds

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "make_gammon_save_positions.py"


def load_script():
    spec = importlib.util.spec_from_file_location("make_gammon_save_positions", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_positions_are_races_with_a_gammon_at_stake_seen_from_both_sides():
    script = load_script()
    board = script.gammon_save_positions(400, seed=3)
    assert torch.equal(board, script.gammon_save_positions(400, seed=3))  # seeded
    assert not torch.equal(board, script.gammon_save_positions(400, seed=4))
    assert bool((phase_kinds(position_kinds(board)) == PositionKind.RACE).all())
    # Seen from the saving side (even rows as drawn, odd rows flipped back): all 15 on the board, 1 to 6
    # of them on points 7..18; the finishing side 1 to 14 left, all on its home board.
    saving = board.clone()
    saving[1::2] = flip_board(board[1::2])
    mover_off, opponent_off = borne_off(saving, 15)
    assert bool((mover_off == 0).all()) and bool(((opponent_off >= 1) & (opponent_off <= 14)).all())
    outside = saving[:, 7:25].clamp(min=0).sum(1)
    assert int(outside.min()) == 1 and int(outside.max()) == 6
    assert int(saving[:, 19:25].clamp(min=0).sum()) == 0  # nothing of the saver's beyond its 18-point
    assert int((-saving[:, 1:19]).clamp(min=0).sum()) == 0  # the finisher only on its home board (19..24)
    assert int(saving[:, 25].abs().sum() + saving[:, 0].abs().sum()) == 0  # nobody on the bar


def test_script_writes_a_dataset_relabel_can_take(tmp_path):
    out = tmp_path / "gammon-save"
    command = [sys.executable, str(SCRIPT), "--out", str(out), "--positions", "60", "--seed", "5",
               "--model", "checkpoints/bgtrain-default.pt"]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300,
                          cwd=SCRIPT.parents[1])
    assert done.returncode == 0, done.stderr
    manifest = read_manifest(out)
    verify_shards(out, manifest)
    assert manifest["positions"] == 60 and manifest["labeller"]["ply"] == 0
    shard = torch.load(out / manifest["shards"][0]["file"], weights_only=True)
    assert torch.equal(shard["positions"], load_script().gammon_save_positions(60, seed=5))
    again = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300, cwd=SCRIPT.parents[1])
    assert again.returncode == 2 and "already holds a dataset" in again.stderr
