"""The second reliability probe's tracebacks, unclear messages and unbounded waits, each rerun: one line
and status 2 for every bad input, an interactive ``bgtrain moves``, nothing overwritten by ``bench``."""

from __future__ import annotations

import errno
import io
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_cli_faults import refused, small_bearoff_cache  # noqa: F401 -- the fixture, for every test here

from bgtrain.cli import main
from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.network import ValueNetwork
from bgtrain.training.config import Config

ROOT = Path(__file__).resolve().parent.parent
START = "4HPwATDgc/ABMA"


def test_a_full_disk_inside_torch_save_is_one_line(tmp_path, monkeypatch):
    # Case 305: torch.save's zip writer turned the OSError into "RuntimeError: unexpected pos ...".
    real_open = open

    class FullDisk(io.FileIO):
        written = 0

        def write(self, data):
            FullDisk.written += len(data)
            if FullDisk.written > 2000:
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(data)

    monkeypatch.setattr("bgtrain.files.open", lambda path, mode: FullDisk(path, "w") if "w" in mode
                        else real_open(path, mode), raising=False)
    target = tmp_path / "run" / "latest.pt"
    with pytest.raises(OSError, match="disk full") as caught:
        save_checkpoint(target, checkpoint_payload(ValueNetwork("tesauro198", (40,)), Config()))
    assert caught.value.filename == str(target) and list(target.parent.iterdir()) == []


def test_ctrl_c_while_the_command_loads_is_one_line(monkeypatch, capsys):
    # Case E10: a SIGINT during the imports printed a KeyboardInterrupt traceback.
    import bgtrain.cli

    def interrupted(name, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(bgtrain.cli.importlib, "import_module", interrupted)
    assert main(["export", "checkpoints/bgtrain-default.pt", "-o", "x.onnx"]) == 130
    assert capsys.readouterr().err == "bgtrain export: interrupted\n"


def test_a_10_megabyte_line_is_quoted_short(capsys, monkeypatch):
    # Case 141: the error repeated the whole 10 MB line.
    monkeypatch.setattr(sys, "stdin", io.StringIO("A" * 10_000_000 + " 31\n"))
    err = refused(capsys, ["moves"], "line 1", "must be 14 characters, not 10,000,000")
    assert len(err) < 300


def test_benchmark_data_that_is_not_a_benchmark(tmp_path, capsys):
    # Cases K13, K14, K16.
    binary = tmp_path / "binary.bm"
    binary.write_bytes(b"m \xb8\xff\x00 garbage")
    refused(capsys, ["benchmark", "pubeval", "--data", str(binary)], "binary.bm:1: not text")
    folder = tmp_path / "notabench"
    folder.mkdir()
    err = refused(capsys, ["benchmark", "pubeval", "--data", str(folder)], "is a directory")
    assert "does not exist" not in err
    garbage = tmp_path / "garbage.npz"
    from bgtrain.benchmark.decisions import _DTYPES

    np.savez(garbage, **{name: np.array([object()], dtype=object) for name in _DTYPES})
    err = refused(capsys, ["benchmark", "pubeval", "--data", str(garbage)], "garbage.npz", "pickled objects")
    assert "allow_pickle" not in err
    garbage.write_bytes(os.urandom(300))  # not even a zip archive: numpy would try to unpickle it
    refused(capsys, ["benchmark", "pubeval", "--data", str(garbage)], "garbage.npz", "not a .npz (zip) archive")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_output_paths_under_proc_are_refused_before_the_work(capsys, monkeypatch):
    # Case 209 and the notes: os.access says yes to root under /proc; the export failed after minutes.
    monkeypatch.setattr("bgtrain.files.os.access", lambda path, mode: True)  # as for root
    started = time.monotonic()
    refused(capsys, ["export", "checkpoints/bgtrain-default.pt", "--format", "onnx", "-o", "/proc/nope.onnx"],
            "-o /proc/nope.onnx: cannot write in /proc")
    refused(capsys, ["bench", "pubeval", "random", "--games", "2", "--save-games", "/proc/nope"],
            "--save-games /proc/nope: cannot write in /proc")
    assert time.monotonic() - started < 30


def test_bench_keeps_the_games_of_an_earlier_run(tmp_path, capsys):
    # Case L4: a second --save-games into one directory replaced games_0001.mat without a word.
    folder = tmp_path / "mat"
    assert main(["bench", "pubeval", "random", "--games", "2", "--seed", "3", "--save-games", str(folder)]) == 0
    out = capsys.readouterr().out
    first = (folder / "games_0001.mat").read_bytes()
    assert " 0 games/s" not in out and "games/s" in out
    refused(capsys, ["bench", "pubeval", "random", "--games", "2", "--seed", "9", "--save-games", str(folder)],
            "already holds the games of an earlier run (games_0001.mat)")
    assert (folder / "games_0001.mat").read_bytes() == first


def test_rates_are_not_rounded_to_zero():
    from bgtrain.commands.bench import games_per_second

    assert games_per_second(20, 51.6) == "0.388"
    assert games_per_second(100, 6.0) == "16.7" and games_per_second(123_456, 10.0) == "12,346"


def test_moves_answers_a_line_on_an_open_pipe_at_once():
    # Case I6: one line on a pipe that stays open waited for 4,096 lines or the end of the input.
    process = subprocess.Popen([sys.executable, "-m", "bgtrain.cli", "moves"], cwd=ROOT, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        def ask(line: str, timeout: float) -> tuple[bytes, float]:
            started = time.monotonic()
            process.stdin.write(line.encode())
            process.stdin.flush()
            ready, _, _ = select.select([process.stdout], [], [], timeout)
            assert ready, f"no answer to {line!r} within {timeout} s"
            return process.stdout.readline(), time.monotonic() - started

        first, _ = ask(f"{START} 31\n", 120)  # the first pays for starting Python and torch
        assert b'"dice": "31"' in first
        second, seconds = ask(f"{START} 65\n", 10)
        assert b'"dice": "65"' in second and b'"play": "24/13"' in second
        assert seconds < 5, seconds  # about 0.07 s measured; the margin is for a crowded machine
    finally:
        process.stdin.close()
        assert process.wait(timeout=60) == 0
        process.stdout.close()
        process.stderr.close()
