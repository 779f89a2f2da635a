"""Exported ONNX value models behind the evaluation interface of ``ValueNetwork``.

``OnnxValueModel`` opens a file written by ``bgtrain export --format onnx``; like a ``ValueNetwork`` it
offers ``evaluate(board, rules)`` and ``evaluate_flipped(afterstates, rules)`` returning ``float32[B, 5]``
in the contract of ``bgtrain.outcomes``, so agents, ``bgtrain eval`` and ``bgtrain bench`` take either
(``bgtrain.model.loading.load_model`` opens both kinds of file).
onnxruntime is an optional dependency (``pip install 'bgtrain[onnx]'``), imported only here.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from bgtrain.model.encoding import get_encoder
from bgtrain.model.export_format import FORMAT, FORMAT_VERSION, INSTALL_HINT, OUTCOME_ORDER
from engine.board import BOARD_WIDTH, flip_board
from engine.rules import STANDARD, Rules
from engine.variants import get_rules

# Rows per onnxruntime call: its first layer materialises [rows, 14, H] gathered table rows, which
# should stay in the L2 cache (measured with the 198-80 pairs graph: 1024 beats 256 and 4096).
ONNX_CHUNK = 1024


def _onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise ValueError(f"evaluating an .onnx model needs onnxruntime: {INSTALL_HINT}") from None
    return onnxruntime


class OnnxValueModel:
    """An exported value model run by onnxruntime on the CPU.

    ``metadata`` holds the file's metadata properties (``bgtrain.export.export_metadata``); the
    constructor checks the format tag, the output contract and, for a ``--bare`` export (encoded
    inputs), that this bgtrain has the same encoder and version, which then encodes boards in Python.
    ``threads`` (default: ``torch.get_num_threads()``) sets onnxruntime's intra-op threads.
    """

    def __init__(self, path: str | Path, device: str | torch.device = "cpu", threads: int | None = None,
                 data: bytes | None = None):
        """``data``: the file's bytes, read elsewhere (a Ray worker gets them from the driver, which may
        share no disk with it); ``path`` then only names the model in messages."""
        onnxruntime = _onnxruntime()
        path = Path(path)
        if data is None and not path.exists():
            raise FileNotFoundError(f"no ONNX model at {path}")
        if data is None and path.is_dir():
            raise ValueError(f"{path} is a directory, not an ONNX model")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        try:
            self.session = onnxruntime.InferenceSession(str(path) if data is None else data, options,
                                                        providers=["CPUExecutionProvider"])
        # onnxruntime's errors (InvalidProtobuf, InvalidGraph, Fail, ...) derive from Exception directly.
        except Exception as error:  # noqa: BLE001
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"{path} is not a readable ONNX model ({first_line})") from None
        self.path = path
        self.device = torch.device(device)
        self.metadata: dict[str, str] = dict(self.session.get_modelmeta().custom_metadata_map)
        self._check_contract()
        meta = self.metadata
        self.rules = get_rules(meta["rules"])
        self.encoder = SimpleNamespace(name=meta["encoder.name"], version=int(meta["encoder.version"]),
                                       size=int(meta["encoder.size"]))
        self.input_name = self.session.get_inputs()[0].name
        self.encoded_input = meta["input"] == "encoded"
        self._encoder = None
        if self.encoded_input:
            encoder = get_encoder(self.encoder.name)
            if encoder.version != self.encoder.version:
                raise ValueError(f"{path} takes encoder {encoder.name!r} version {self.encoder.version} inputs, "
                                 f"this bgtrain has version {encoder.version}")
            self._encoder = encoder

    def _check_contract(self) -> None:
        meta, path = self.metadata, self.path
        if meta.get("bgtrain.format") != FORMAT:
            raise ValueError(f"{path} is not a bgtrain export (no '{FORMAT}' metadata tag)")
        if meta.get("bgtrain.format_version") != str(FORMAT_VERSION):
            raise ValueError(f"{path} has export format version {meta.get('bgtrain.format_version')}, "
                             f"this bgtrain reads {FORMAT_VERSION}")
        missing = [key for key in ("input", "encoder.name", "encoder.version", "encoder.size", "rules")
                   if key not in meta]
        if missing:
            raise ValueError(f"{path} is damaged: metadata {', '.join(missing)} missing")
        if meta.get("probabilities.order") != ",".join(OUTCOME_ORDER):
            raise ValueError(f"{path} has outputs in the order {meta.get('probabilities.order')!r}, "
                             f"bgtrain needs {','.join(OUTCOME_ORDER)!r}")
        names = [output.name for output in self.session.get_outputs()]
        if names[:1] != ["probabilities"] or meta.get("outputs", "").split(",")[:1] != ["probabilities"]:
            raise ValueError(f"{path} does not return 'probabilities' first (outputs: {', '.join(names)})")

    def model_args(self) -> dict[str, Any]:
        """The exported network's ``ValueNetwork.model_args()``."""
        return json.loads(self.metadata["model"])

    def __repr__(self) -> str:
        return f"OnnxValueModel({str(self.path)!r}, encoder={self.encoder.name!r}, input={self.metadata['input']!r})"

    def evaluate_with_equity(self, board: torch.Tensor, rules: Rules = STANDARD) -> tuple[torch.Tensor, torch.Tensor]:
        """``board: int8[B, 28]`` -> ``(probabilities float32[B, 5], equity float32[B])`` on the board's device."""
        if rules != self.rules:
            raise ValueError(f"{self.path} was exported for rules {self.rules.name!r}, not {rules.name!r}")
        if board.dim() != 2 or board.shape[1] != BOARD_WIDTH:
            raise ValueError(f"boards must be int8[B, {BOARD_WIDTH}], not {tuple(board.shape)}")
        rows = board.detach().to("cpu", torch.int8)
        if self._encoder is not None:
            rows = self._encoder.encode(rows, rules)
        inputs = rows.contiguous().numpy()
        parts = [self.session.run(None, {self.input_name: inputs[start : start + ONNX_CHUNK]})
                 for start in range(0, inputs.shape[0], ONNX_CHUNK)]
        if parts:
            probabilities = np.concatenate([part[0] for part in parts])
            equity = np.concatenate([part[1] for part in parts])
        else:
            probabilities, equity = np.zeros((0, 5), np.float32), np.zeros((0,), np.float32)
        return torch.from_numpy(probabilities).to(board.device), torch.from_numpy(equity).to(board.device)

    def evaluate(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        """Outcome probabilities for the side to move: ``int8[B, 28]`` -> ``float32[B, 5]``."""
        return self.evaluate_with_equity(board, rules)[0]

    def evaluate_flipped(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        """``evaluate(flip_board(board))``: afterstates are seen by the side that moved, and their value
        is the next side to move's. ``int8[B, 28]`` -> ``float32[B, 5]``."""
        return self.evaluate(flip_board(board), rules)
