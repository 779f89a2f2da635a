"""Every bad input is one line and exit status 2: the probe cases of the faults issue (wrong results,
tracebacks, unbounded work, output paths), each rerun as written."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from bgtrain.cli import main
from bgtrain.files import atomic_write, save_tagged
from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.network import ValueNetwork
from bgtrain.training.config import Config, RunConfig
from bgtrain.values.bearoff import build_bearoff_database, default_path

START = "4HPwATDgc/ABMA"
ROOT = Path(__file__).resolve().parent.parent
QUICK = ["--config", "configs/quick.toml", "--no-progress"]


@pytest.fixture(autouse=True)
def small_bearoff_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    build_bearoff_database(2).save(default_path())


def tiny_model(path: Path, variant: str = "backgammon") -> str:
    torch.manual_seed(5)
    network = ValueNetwork("tesauro198", (8,))
    save_checkpoint(path, checkpoint_payload(network, Config(run=RunConfig(variant=variant))))
    return str(path)


def refused(capsys, argv: list[str], *fragments: str) -> str:
    """``argv`` ends with status 2 and one line on standard error holding every fragment."""
    capsys.readouterr()
    assert main(argv) == 2, argv
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


# -- wrong results ------------------------------------------------------------------------------------


def test_eval_draws_a_variant_board_with_its_own_checker_count(tmp_path, capsys):
    """Hypergammon's start (3 checkers a side) shows 0 off, not 12 off."""
    model = tiny_model(tmp_path / "hyper.pt", "hypergammon")
    assert main(["eval", "AACgAgAAKgAAAA", "--model", model, "--variant", "hypergammon"]) == 0
    out = capsys.readouterr().out
    assert "O: 69 pips, 0 off" in out and "X: 69 pips, 0 off" in out and "12 off" not in out


def test_an_owned_cube_of_one_is_refused_as_for_an_xgid(tmp_path, capsys):
    model = tiny_model(tmp_path / "m.pt")
    refused(capsys, ["eval", START, "--model", model, "--cube", "1", "--owner", "mover"], "--owner mover", "centred")


# -- tracebacks instead of one line ----------------------------------------------------------------


@pytest.mark.parametrize("argv, fragments", [
    (["eval", START, "--device", "foo"], ("--device", "'foo'")),
    (["bench", "pubeval", "random", "--device", "foo"], ("--device",)),
    (["train", *QUICK, "run.device=cuda:abc"], ("[run] device", "cuda:abc")),
    (["train", *QUICK, "--threads", "-1"], ("--threads", "at least 1")),
    (["train", *QUICK, "train.learning_rate=inf"], ("learning_rate", "finite")),
    (["train", *QUICK, "--out", "{tmp}/huge", "model.hidden=[1000000000000]"], ("model", "hidden", "allocated")),
    (["bench", "pubeval", "random", "--seed", str(1 << 64)], ("--seed", "2**63")),
    (["train", *QUICK, "--seed", str(1 << 64)], ("--seed",)),
    (["train", *QUICK, f"run.seed={1 << 64}"], ("[run] seed",)),
    (["eval", START, "--ply", "99"], ("--ply 99", "0 to 4")),
    (["bench", "pubeval", "missing.pt:99ply", "--games", "2"], ("99-ply", "at most 4")),
    (["bench", "pubeval"], ("the following arguments are required", "B")),
    (["eval", START, "--nosuch"], ("unrecognized arguments", "--nosuch")),
    (["moves", START, "31", "hand=²,0", "--variant", "dutch"], ("argument group 1", "hand=")),
    (["train", "--config", "configs/quick.toml", "--train.learning_rate"], ("has no value",)),
])
def test_bad_options_are_one_line(argv, fragments, tmp_path, capsys):
    refused(capsys, [word.replace("{tmp}", str(tmp_path)) for word in argv], *fragments)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_one_line(tmp_path, capsys):
    refused(capsys, ["eval", START, "--device", "cuda"], "CUDA is not available")
    refused(capsys, ["train", *QUICK, "--out", str(tmp_path / "c"), "--device", "cuda"], "CUDA is not available")


def test_a_scalar_where_a_config_section_belongs(tmp_path, capsys):
    config = tmp_path / "scalar.toml"
    config.write_text("run = 3\n")
    refused(capsys, ["train", "--config", str(config), "--no-progress", "run.seed=1"], "[run] must be a table")
    refused(capsys, ["train", "--config", str(config), "--no-progress"], "[run] must be a table")


def test_output_paths_that_are_files_are_refused_before_the_work(tmp_path, capsys, monkeypatch):
    a_file = tmp_path / "file"
    a_file.write_text("mine\n")

    def no_games(*args, **kwargs):
        raise AssertionError("the games were played before the output path was checked")

    monkeypatch.setattr("bgtrain.commands.bench.play_duel_chunked", no_games)
    monkeypatch.setattr("bgtrain.commands.league.play_league_chunked", no_games)
    refused(capsys, ["bench", "pubeval", "random", "--games", "2", "--save-games", str(a_file)], "--save-games", str(a_file))
    refused(capsys, ["bench", "pubeval", "random", "--games", "2", "--json", str(a_file / "r.json")], "--json",
            str(a_file / "r.json"))
    refused(capsys, ["bench", "pubeval", "random", "--json", str(tmp_path)], "is a directory")
    refused(capsys, ["league", "pubeval", "random", "--games", "2", "--out", str(a_file)], "--out", str(a_file))
    refused(capsys, ["train", *QUICK, "--out", str(a_file)], "--out", str(a_file))
    refused(capsys, ["export", tiny_model(tmp_path / "m.pt"), "--format", "torchscript", "-o", str(a_file / "m.ts")],
            "-o", str(a_file / "m.ts"))
    assert a_file.read_text() == "mine\n"


def test_damaged_checkpoints_with_a_valid_tag_are_one_line(tmp_path, capsys):
    network = ValueNetwork("tesauro198", (8,))
    good = checkpoint_payload(network, Config())
    damages = {
        "weights": {**good, "weights": "x"},
        "tensor": {**good, "weights": {"first.weight": 3}},
        "hidden": {**good, "model": {**good["model"], "hidden": "abc"}},
        "counters": {**good, "counters": {"games": "many"}},
        "config": {**good, "config": {"run": 3}},
        "shape": {**good, "weights": {k: v[:1] for k, v in good["weights"].items()}},
    }
    for name, payload in damages.items():
        path = tmp_path / f"{name}.pt"
        save_tagged(path, "bgtrain-checkpoint", 1, payload)
        refused(capsys, ["eval", START, "--model", str(path)], str(path))
        refused(capsys, ["bench", f"{path}", "pubeval", "--games", "2"], str(path))


def test_torchscript_models_are_named_as_such_without_a_torch_warning(tmp_path, capsys):
    refused(capsys, ["eval", START, "--model", str(tmp_path / "x.ts")], "TorchScript", "other programs")
    disguised = tmp_path / "disguised.pt"
    with zipfile.ZipFile(disguised, "w") as archive:
        archive.writestr("disguised/code/__torch__.py", "")
        archive.writestr("disguised/data.pkl", "")
    err = refused(capsys, ["eval", START, "--model", str(disguised)], "TorchScript")
    assert "warn" not in err.lower()


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(tmp_path, capsys, monkeypatch):
    def full(handle):
        handle.write(b"x" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")

    folder = tmp_path / "out"
    with pytest.raises(OSError, match="disk full") as caught:
        atomic_write(folder / "out.bin", full)
    assert caught.value.filename == str(folder / "out.bin")
    assert list(folder.iterdir()) == []

    def no_space(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("bgtrain.files.os.fsync", no_space)
    report = folder / "report.json"
    refused(capsys, ["bench", "pubeval", "random", "--games", "2", "--json", str(report)], "disk full", str(report))
    assert list(folder.iterdir()) == []


def test_a_checkpoint_write_on_a_full_disk(tmp_path, monkeypatch):
    def no_space(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("bgtrain.files.os.fsync", no_space)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path / "run" / "latest.pt", checkpoint_payload(ValueNetwork("tesauro198", (4,)), Config()))
    assert list((tmp_path / "run").iterdir()) == []


# -- moves: streamed, bounded, quiet when the reader leaves -----------------------------------------


def test_moves_answers_batch_by_batch_and_names_a_bad_line(capsys, monkeypatch):
    import io

    lines = [f"{START} {dice}\n" for dice in ("31", "42", "65", "11")] + ["nonsense 31\n"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(lines)))
    assert main(["moves", "--batch", "2"]) == 2
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 4  # the batches before the bad line were answered
    assert "line 5" in captured.err and len(captured.err.strip().splitlines()) == 1


def test_moves_quotes_a_long_line_cut_short(capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{START} 31 " + "x" * 100_000 + "\n"))
    err = refused(capsys, ["moves"], "line 1", "characters")
    assert len(err) < 300


def test_moves_into_a_closed_pipe_stops_quietly(tmp_path):
    source = tmp_path / "lines.txt"
    source.write_text("".join(f"{START} {a}{b}\n" for a in range(1, 7) for b in range(1, 7)) * 200)
    with open(source, "rb") as stdin:
        process = subprocess.Popen([sys.executable, "-m", "bgtrain.cli", "moves", "--batch", "64"], cwd=ROOT,
                                   stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = process.stdout.readline()
    process.stdout.close()  # as `| head -1` does
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141
    assert json.loads(first)["position_id"] == START and "Traceback" not in err and err == ""
