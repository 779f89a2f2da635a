"""Writing an export: metadata, the ONNX or TorchScript bytes, the check against the network, the file."""

from __future__ import annotations

import copy
import io
import json
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from bgtrain.export.modules import BareModel, board_model
from bgtrain.files import atomic_write
from bgtrain.model.export_format import (
    BOARD_LAYOUT,
    DEFAULT_FIRST_LAYER,
    EXPORT_TOLERANCE,
    FORMAT,
    FORMAT_VERSION,
    FORMATS,
    ONNX_OPSET,
    OUTCOME_ORDER,
    PROBABILITIES_MEANING,
    TORCHSCRIPT_METADATA_FILE,
    equity_meaning,
    require_onnx,
)
from bgtrain.model.network import ValueNetwork
from bgtrain.outcomes import cubeless_equity
from engine.board import flip_board
from engine.kernels import op_by_op_unless_asked
from engine.random_play import sample_positions
from engine.rules import STANDARD, Rules

# ---------------------------------------------------------------------------------------------------
# Metadata and writing.


def bgtrain_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bgtrain")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def export_metadata(network: ValueNetwork, payload: dict[str, Any], rules: Rules, bare: bool,
                    first_layer: str, source: str = "") -> dict[str, str]:
    """The string key/value pairs embedded in every exported file (the keys docs/export.md lists)."""
    encoder = network.encoder
    return {
        "bgtrain.format": FORMAT,
        "bgtrain.format_version": str(FORMAT_VERSION),
        "bgtrain.version": bgtrain_version(),
        "bgtrain.code_version": str(payload.get("code_version", "unknown")),
        "source.checkpoint": Path(source).name,
        "input": "encoded" if bare else "board",
        "input.layout": (f"float32[batch, {encoder.size}]: the units of encoder {encoder.name!r} version "
                         f"{encoder.version} (bgtrain.model.encoding)") if bare else BOARD_LAYOUT,
        "outputs": "probabilities,equity",
        "probabilities.order": ",".join(OUTCOME_ORDER),
        "probabilities.meaning": PROBABILITIES_MEANING,
        "equity.meaning": equity_meaning(rules),
        "encoder.name": encoder.name,
        "encoder.version": str(encoder.version),
        "encoder.size": str(encoder.size),
        "rules": rules.name,
        "rules.checkers_per_side": str(rules.checkers_per_side),
        "model": json.dumps(network.model_args(), sort_keys=True),
        "first_layer": "bare" if bare else first_layer,
        "training.counters": json.dumps(payload.get("counters", {}), sort_keys=True, default=str),
        "training.strength": json.dumps(payload.get("strength", {}), sort_keys=True, default=str),
    }


def check_positions(rules: Rules, count: int = 2048, seed: int = 7) -> torch.Tensor:
    """Reachable positions of both sides to move, for the export checks: ``int8[2 count, 28]`` (played op
    by op: an export must not stop to compile the move generator for its check)."""
    with op_by_op_unless_asked():
        boards, _ = sample_positions(count, seed, rules, "cpu")
    return torch.cat((boards, flip_board(boards)))


def _check(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    difference = float((got - want).abs().max()) if got.numel() else 0.0
    if not difference <= EXPORT_TOLERANCE:
        raise RuntimeError(f"{name} differs from ValueNetwork.evaluate by {difference:.2e} "
                           f"(> {EXPORT_TOLERANCE:g}); not written")


def export_model(network: ValueNetwork, payload: dict[str, Any], path: str | Path, file_format: str,
                 bare: bool = False, first_layer: str | None = None, rules: Rules = STANDARD,
                 source: str = "") -> dict[str, str]:
    """Write ``network`` to ``path`` (``file_format`` "onnx" or "torchscript"); returns the metadata written.

    Before writing, the exported graph's outputs are compared with ``network.evaluate`` (and
    ``cubeless_equity``) on a few thousand reachable positions; a difference above
    ``EXPORT_TOLERANCE`` is a RuntimeError and nothing is written.
    """
    if file_format not in FORMATS:
        raise ValueError(f"format {file_format!r} unknown; known: {', '.join(FORMATS)}")
    first_layer = first_layer or DEFAULT_FIRST_LAYER[file_format]
    network = copy.deepcopy(network).cpu().eval()
    onnx = require_onnx() if file_format == "onnx" else None
    metadata = export_metadata(network, payload, rules, bare, first_layer, source)
    boards = check_positions(rules)
    with torch.no_grad():
        want = network.evaluate(boards, rules)
        kind = network.model_args().get("kind")
        if bare and kind in ("phases", "ensemble"):
            name = "a phase model" if kind == "phases" else "an ensemble"
            raise ValueError(f"{name} has no single encoded input; export it without --bare")
        if bare:
            module: nn.Module = BareModel(network, rules).eval()
            example = network.encoder.encode(boards, rules)
        else:
            module = board_model(network, rules, first_layer, embedding_bag=file_format == "torchscript").eval()
            example = boards
        module.requires_grad_(False)  # an inference model: outputs that need no .detach()
        probabilities, equity = module(example)
    _check(f"the {first_layer} graph", probabilities, want)
    _check("its equity", equity, cubeless_equity(want, rules))

    path = Path(path)
    if file_format == "onnx":
        data = _onnx_bytes(onnx, module, example, metadata, bare)
        _check_onnx(data, example, want, rules)
    else:
        data = _torchscript_bytes(module, example, metadata)
    atomic_write(path, data)
    return metadata


def _onnx_bytes(onnx: Any, module: nn.Module, example: torch.Tensor, metadata: dict[str, str], bare: bool) -> bytes:
    input_name = "encoded" if bare else "board"
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # torch >= 2.9 warns that this (TorchScript-based) exporter is deprecated; the torch.export-based
        # one needs the onnxscript package, and the graphs here are plain enough for either.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (example[:4],),
            buffer,
            dynamo=False,
            input_names=[input_name],
            output_names=["probabilities", "equity"],
            dynamic_axes={input_name: {0: "batch"}, "probabilities": {0: "batch"}, "equity": {0: "batch"}},
            opset_version=ONNX_OPSET,
            do_constant_folding=True,
        )
    model = onnx.load_from_string(buffer.getvalue())
    model.producer_name = "bgtrain"
    model.producer_version = metadata["bgtrain.version"]
    model.doc_string = (f"bgtrain value network ({metadata['encoder.name']}, {metadata['model']}): "
                        f"{metadata['input']} -> probabilities [WIN, WIN_GAMMON, WIN_BACKGAMMON, LOSE_GAMMON, "
                        "LOSE_BACKGAMMON] and cubeless equity, for the side to move. See the metadata.")
    docs = {input_name: metadata["input.layout"], "probabilities": PROBABILITIES_MEANING, "equity": metadata["equity.meaning"]}
    for value in (*model.graph.input, *model.graph.output):
        value.doc_string = docs[value.name]
    onnx.helper.set_model_props(model, metadata)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _check_onnx(data: bytes, example: torch.Tensor, want: torch.Tensor, rules: Rules) -> None:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    probabilities, equity = session.run(None, {session.get_inputs()[0].name: example.numpy()})
    _check("the ONNX file in onnxruntime", torch.from_numpy(probabilities), want)
    _check("the ONNX file's equity", torch.from_numpy(equity), cubeless_equity(want, rules))


def _torchscript_bytes(module: nn.Module, example: torch.Tensor, metadata: dict[str, str]) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch >= 2.10 marks TorchScript deprecated in favour of torch.export
        traced = torch.jit.trace(module, (example[:4],), check_trace=False)
        buffer = io.BytesIO()
        torch.jit.save(traced, buffer, _extra_files={TORCHSCRIPT_METADATA_FILE: json.dumps(metadata, indent=1)})
        # A trace records one batch size's shapes only where code reads them as Python numbers; reload and
        # run another size to be sure the batch axis stayed free.
        buffer.seek(0)
        reloaded = torch.jit.load(buffer)
        probabilities, _ = reloaded(example)
    if probabilities.shape[0] != example.shape[0]:
        raise RuntimeError("the traced TorchScript module fixed the batch size; not written")
    return buffer.getvalue()


def export_checkpoint(checkpoint: str | Path, path: str | Path, file_format: str, bare: bool = False,
                      first_layer: str | None = None) -> dict[str, str]:
    """Export the network of a checkpoint file (``bgtrain.model.checkpoint``); ValueError for a bad file."""
    from bgtrain.model.loading import load_model

    loaded = load_model(checkpoint, device="cpu")
    if loaded.payload is None:
        raise ValueError(f"{checkpoint} is an export already; export a bgtrain checkpoint (.pt)")
    return export_model(loaded.model, loaded.payload, path, file_format, bare, first_layer, loaded.rules,
                        source=str(checkpoint))
