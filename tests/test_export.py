"""Exported models (ONNX, TorchScript): same numbers as PyTorch, self-describing, loadable without bgtrain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import random_boards

from bgtrain.cli import main
from bgtrain.export import BOARD_LAYOUT, FIRST_LAYERS, export_checkpoint
from bgtrain.export.graph import GraphEncoder
from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.encoding import ENCODERS, Encoder
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.onnx_model import OnnxValueModel
from bgtrain.outcomes import cubeless_equity
from bgtrain.training.config import Config
from engine.board import flip_board
from engine.random_play import sample_positions
from engine.rules import STANDARD

TOLERANCE = 1e-5
NETWORKS = {  # small seeded networks: (hidden sizes, activation)
    "tesauro198": ([16], "sigmoid"),
    "tesauro_plus": ([12, 8], "silu"),
    "gnubg_race": ([10, 6], "sigmoid-relu"),  # a deepened network's activations
}
COUNTERS = {"games": 1234, "turns": 56789, "updates": 321, "train_seconds": 12.5}
STRENGTH = {"pubeval": {"points_per_game": 0.25, "interval95": 0.05, "games": 1000}, "games": 1234}


def onnx_session(path: Path):
    onnxruntime = pytest.importorskip("onnxruntime")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("checkpoints")
    paths = {}
    for encoder, (hidden, activation) in NETWORKS.items():
        torch.manual_seed(11)
        network = ValueNetwork(encoder, hidden, activation)
        payload = checkpoint_payload(network, Config(), STANDARD.name, COUNTERS, STRENGTH, "test")
        paths[encoder] = save_checkpoint(directory / f"{encoder}.pt", payload)
    return paths


@pytest.fixture(scope="module")
def networks(checkpoints) -> dict[str, ValueNetwork]:
    return {encoder: load_model(path).model for encoder, path in checkpoints.items()}


@pytest.fixture(scope="module")
def boards() -> torch.Tensor:
    """10,000 random positions, some with checkers on the bar, borne off or in hand."""
    return torch.cat((random_boards(8000, seed=21), random_boards(2000, seed=22, in_hand=True)))


# ---------------------------------------------------------------------------------------------------
# The encoders inside the graph.


def edge_boards() -> torch.Tensor:
    empty = torch.zeros(1, 28, dtype=torch.int8)
    start = STANDARD.start_board()[None]
    mover_done = start.clone()
    mover_done[:, 1:26] = mover_done[:, 1:26].clamp(max=0)  # the mover has borne everything off
    opponent_gone = start.clamp(min=0)  # and the opponent
    closed_out = torch.zeros(1, 28, dtype=torch.int8)
    closed_out[0, 1:7] = 2  # a six-point prime, opponent on the bar
    closed_out[0, 7] = 3
    closed_out[0, 0] = -3
    closed_out[0, 24] = -12
    edges = torch.cat((empty, start, mover_done, opponent_gone, closed_out))
    return torch.cat((edges, flip_board(edges)))


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
def test_graph_encoder_is_exactly_encode(encoder: str) -> None:
    boards = torch.cat(
        (
            random_boards(4000, seed=1),
            random_boards(2000, seed=2, in_hand=True),
            random_boards(2000, seed=3, race=True),
            sample_positions(2000, seed=4)[0],
            edge_boards(),
        )
    )
    boards = torch.cat((boards, flip_board(boards)))
    graph = GraphEncoder(ENCODERS[encoder], STANDARD)
    assert torch.equal(graph(boards), ENCODERS[encoder].encode(boards, STANDARD))


def test_encoder_without_a_graph_version_is_refused() -> None:
    class Unexportable(Encoder):
        name, version, size, separable_size = "mystery", 1, 3, 1

    with pytest.raises(ValueError, match="--bare"):
        GraphEncoder(Unexportable(), STANDARD)


# ---------------------------------------------------------------------------------------------------
# ONNX.


@pytest.mark.parametrize("first_layer", FIRST_LAYERS)
@pytest.mark.parametrize("encoder", sorted(NETWORKS))
def test_onnx_matches_pytorch_on_10000_positions(checkpoints, networks, boards, tmp_path, encoder, first_layer):
    pytest.importorskip("onnx")
    path = tmp_path / "model.onnx"
    export_checkpoint(checkpoints[encoder], path, "onnx", first_layer=first_layer)
    session = onnx_session(path)
    probabilities, equity = session.run(None, {"board": boards.numpy()})
    want = networks[encoder].evaluate(boards)
    assert probabilities.shape == (10_000, 5) and equity.shape == (10_000,)
    assert (torch.from_numpy(probabilities) - want).abs().max() <= TOLERANCE
    assert (torch.from_numpy(equity) - cubeless_equity(want)).abs().max() <= TOLERANCE
    for batch in (1, 3):  # the batch axis is free
        assert session.run(None, {"board": boards[:batch].numpy()})[0].shape == (batch, 5)


def test_onnx_metadata_and_signature(checkpoints, networks, tmp_path) -> None:
    onnx = pytest.importorskip("onnx")
    path = tmp_path / "model.onnx"
    assert main(["export", str(checkpoints["tesauro_plus"]), "--format", "onnx", "-o", str(path)]) == 0
    model = onnx.load(str(path))
    metadata = {entry.key: entry.value for entry in model.metadata_props}
    assert metadata == onnx_session(path).get_modelmeta().custom_metadata_map
    assert metadata["bgtrain.format"] == "bgtrain-value-model" and metadata["bgtrain.format_version"] == "1"
    assert metadata["bgtrain.version"] and metadata["bgtrain.code_version"] == "test"
    assert (metadata["encoder.name"], metadata["encoder.version"], metadata["encoder.size"]) == ("tesauro_plus", "1", "207")
    assert metadata["probabilities.order"] == "WIN,WIN_GAMMON,WIN_BACKGAMMON,LOSE_GAMMON,LOSE_BACKGAMMON"
    assert metadata["outputs"] == "probabilities,equity"
    assert metadata["input"] == "board" and metadata["input.layout"] == BOARD_LAYOUT
    assert (metadata["rules"], metadata["rules.checkers_per_side"]) == ("backgammon", "15")
    assert json.loads(metadata["model"]) == networks["tesauro_plus"].model_args()
    assert json.loads(metadata["training.counters"]) == COUNTERS
    assert json.loads(metadata["training.strength"]) == STRENGTH
    assert metadata["source.checkpoint"] == "tesauro_plus.pt"

    def signature(values):
        return [(v.name, v.type.tensor_type.elem_type,
                 [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]) for v in values]

    assert signature(model.graph.input) == [("board", onnx.TensorProto.INT8, ["batch", 28])]
    assert signature(model.graph.output) == [
        ("probabilities", onnx.TensorProto.FLOAT, ["batch", 5]),
        ("equity", onnx.TensorProto.FLOAT, ["batch"]),
    ]


def test_bare_onnx_takes_encoded_inputs(checkpoints, networks, boards, tmp_path) -> None:
    pytest.importorskip("onnx")
    path = tmp_path / "bare.onnx"
    export_checkpoint(checkpoints["tesauro_plus"], path, "onnx", bare=True)
    session = onnx_session(path)
    assert [(i.name, i.type, i.shape) for i in session.get_inputs()] == [("encoded", "tensor(float)", ["batch", 207])]
    assert session.get_modelmeta().custom_metadata_map["input"] == "encoded"
    encoded = ENCODERS["tesauro_plus"].encode(boards, STANDARD)
    probabilities, _ = session.run(None, {"encoded": encoded.numpy()})
    assert (torch.from_numpy(probabilities) - networks["tesauro_plus"].evaluate(boards)).abs().max() <= TOLERANCE


@pytest.mark.parametrize("bare", [False, True])
def test_onnx_value_model_evaluates_like_the_network(checkpoints, networks, boards, tmp_path, bare) -> None:
    pytest.importorskip("onnx")
    path = tmp_path / "model.onnx"
    export_checkpoint(checkpoints["tesauro198"], path, "onnx", bare=bare)
    model = load_model(path).model
    network = networks["tesauro198"]
    assert isinstance(model, OnnxValueModel) and model.encoder.name == "tesauro198"
    assert model.model_args() == network.model_args()
    assert (model.evaluate(boards) - network.evaluate(boards)).abs().max() <= TOLERANCE
    assert (model.evaluate_flipped(boards) - network.evaluate_flipped(boards)).abs().max() <= TOLERANCE
    assert model.evaluate(boards[:0]).shape == (0, 5)


def test_load_model_by_extension(checkpoints, tmp_path) -> None:
    assert isinstance(load_model(checkpoints["tesauro198"]).model, ValueNetwork)
    with pytest.raises(ValueError, match=r"\.pt.*\.onnx"):
        load_model(tmp_path / "model.ts")
    foreign = tmp_path / "foreign.onnx"
    foreign.write_bytes(os.urandom(300))
    with pytest.raises(ValueError, match="not a readable ONNX model"):
        load_model(foreign)


def test_onnx_model_without_bgtrain_metadata_is_refused(tmp_path) -> None:
    onnx = pytest.importorskip("onnx")
    helper, path = onnx.helper, tmp_path / "plain.onnx"
    graph = helper.make_graph(
        [helper.make_node("Identity", ["board"], ["probabilities"])], "plain",
        [helper.make_tensor_value_info("board", onnx.TensorProto.FLOAT, ["batch", 5])],
        [helper.make_tensor_value_info("probabilities", onnx.TensorProto.FLOAT, ["batch", 5])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ValueError, match="not a bgtrain export"):
        OnnxValueModel(path)


# ---------------------------------------------------------------------------------------------------
# TorchScript.

# Runs with python -S in an empty directory: no .pth files are processed, so the editable install's
# finder is absent too, and only torch's own site-packages directory goes onto sys.path.
FRESH_PROCESS = """
import json, sys
sys.path.append(sys.argv[1])
try:
    import bgtrain
except ImportError:
    pass
else:
    raise SystemExit("bgtrain is importable")
import torch
torch.set_num_threads(1)
extra = {"bgtrain.json": ""}
model = torch.jit.load(sys.argv[2], _extra_files=extra)
probabilities, equity = model(torch.load(sys.argv[3]))
torch.save({"probabilities": probabilities, "equity": equity}, sys.argv[4])
print(json.dumps({"metadata": json.loads(extra["bgtrain.json"]),
                  "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("bgtrain", "engine"))}))
"""


@pytest.mark.parametrize("encoder", sorted(NETWORKS))
def test_torchscript_runs_in_a_fresh_process_without_bgtrain(checkpoints, networks, boards, tmp_path, encoder):
    model_path, boards_path, out_path = tmp_path / "model.ts", tmp_path / "boards.pt", tmp_path / "out.pt"
    assert main(["export", str(checkpoints[encoder]), "--format", "torchscript", "-o", str(model_path)]) == 0
    torch.save(boards, boards_path)
    site_packages = str(Path(torch.__file__).resolve().parent.parent)
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment["OMP_NUM_THREADS"] = "1"
    done = subprocess.run(
        [sys.executable, "-S", "-c", FRESH_PROCESS, site_packages, str(model_path), str(boards_path), str(out_path)],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["modules"] == []
    metadata = report["metadata"]
    assert metadata["encoder.name"] == encoder and metadata["input"] == "board"
    assert json.loads(metadata["training.counters"]) == COUNTERS
    assert json.loads(metadata["model"]) == networks[encoder].model_args()

    outputs = torch.load(out_path)
    want = networks[encoder].evaluate(boards)
    assert (outputs["probabilities"] - want).abs().max() <= TOLERANCE
    assert (outputs["equity"] - cubeless_equity(want)).abs().max() <= TOLERANCE


# ---------------------------------------------------------------------------------------------------
# Bad input: one line on standard error, exit status 2, nothing written.


def foreign_checkpoint(path: Path) -> None:
    torch.save({"state_dict": {"weight": torch.zeros(3)}, "epoch": 4}, path)


def corrupt_checkpoint(path: Path) -> None:
    path.write_bytes(bytes(torch.randint(0, 256, (4096,), generator=torch.Generator().manual_seed(5)).tolist()))


@pytest.mark.parametrize("make, message", [
    (corrupt_checkpoint, "is not a readable bgtrain checkpoint"),
    (foreign_checkpoint, "is not a bgtrain checkpoint"),
    (None, "no checkpoint at"),
])
@pytest.mark.parametrize("file_format", ["onnx", "torchscript"])
def test_export_of_a_bad_checkpoint_fails_with_one_line(tmp_path, capsys, make, message, file_format) -> None:
    checkpoint, out = tmp_path / "model.pt", tmp_path / "out.file"
    if make is not None:
        make(checkpoint)
    assert main(["export", str(checkpoint), "--format", file_format, "-o", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("bgtrain export: error: ") and message in error
    assert not out.exists() and list(tmp_path.iterdir()) == ([checkpoint] if make else [])


def test_missing_onnx_package_names_the_extra(checkpoints, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    out = tmp_path / "model.onnx"
    assert main(["export", str(checkpoints["tesauro198"]), "--format", "onnx", "-o", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "pip install 'bgtrain[onnx]'" in error
    assert not out.exists()


def test_evaluator_and_eval_accept_an_onnx_export(checkpoints, tmp_path, capsys) -> None:
    from bgtrain.cli import main
    from bgtrain.values.evaluator import Evaluator

    path = tmp_path / "model.onnx"
    export_checkpoint(checkpoints["tesauro198"], path, "onnx")
    board = STANDARD.start_board().unsqueeze(0)
    from_onnx = Evaluator.from_path(path, bearoff=False)
    from_checkpoint = Evaluator.from_path(checkpoints["tesauro198"], bearoff=False)
    for ply in (0, 1):
        assert (from_onnx.probabilities(board, ply) - from_checkpoint.probabilities(board, ply)).abs().max() <= 1e-5
    assert main(["eval", "4HPwATDgc/ABMA", "--dice", "31", "--model", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == str(path) and len(report["hint"]) == 16


@pytest.mark.parametrize("variant", ["hypergammon", pytest.param("acey-deucey", marks=pytest.mark.slow)])
def test_a_variant_checkpoint_exports_and_reads_back_for_its_variant(tmp_path, variant) -> None:
    """A checkpoint that names its variant only in its config exports for that variant, and the ONNX
    file evaluates the variant's positions as the network does (acey-deucey, slow: sampling its
    positions takes a minute; its equity weighs checkers left)."""
    pytest.importorskip("onnx")
    from dataclasses import replace

    from engine.variants import get_rules

    rules = get_rules(variant)
    torch.manual_seed(3)
    network = ValueNetwork("tesauro198", [8], "sigmoid")
    config = Config()
    config = replace(config, run=replace(config.run, variant=variant))
    payload = checkpoint_payload(network, config, counters=COUNTERS)
    checkpoint = save_checkpoint(tmp_path / f"{variant}.pt", payload)
    metadata = export_checkpoint(checkpoint, tmp_path / f"{variant}.onnx", "onnx")
    assert (metadata["rules"], metadata["rules.checkers_per_side"]) == (variant, str(rules.checkers_per_side))
    assert ("checkers left" in metadata["equity.meaning"]) == (rules.scoring == "checkers_left")
    model = load_model(tmp_path / f"{variant}.onnx").model
    assert model.rules == rules
    boards, _ = sample_positions(500, 5, rules, "cpu")
    probabilities, equity = model.evaluate_with_equity(boards, rules)
    want = network.evaluate(boards, rules)
    assert (probabilities - want).abs().max() <= TOLERANCE
    assert (equity - cubeless_equity(want, rules)).abs().max() <= TOLERANCE


def test_equity_meaning_follows_the_scoring() -> None:
    from bgtrain.export import EQUITY_MEANING, equity_meaning
    from engine.variants import get_rules

    assert equity_meaning(get_rules("hypergammon")) == EQUITY_MEANING
    assert "14 (WIN_GAMMON - LOSE_GAMMON)" in equity_meaning(get_rules("acey-deucey"))
