"""Export a trained value network as one self-describing file: ONNX or TorchScript.

The exported model needs no bgtrain code to be fed. By default it takes the raw position,
``board: int8[B, 28]`` (the row of ``engine.board``, from the side to move, any batch size), computes
the encoder inside the graph and returns

* ``probabilities: float32[B, 5]``, the contract of ``bgtrain.outcomes`` (WIN, WIN_GAMMON,
  WIN_BACKGAMMON, LOSE_GAMMON, LOSE_BACKGAMMON for the side to move, before it rolls), exactly what
  ``ValueNetwork.evaluate`` returns (no ``clamp_outcomes``);
* ``equity: float32[B]``, ``cubeless_equity`` of those probabilities.

With ``bare=True`` it is the network alone, taking the encoded units ``float32[B, encoder.size]``.
Everything a user needs to trust the file rides in it (``export_metadata``): ONNX metadata properties,
or the TorchScript extra file ``bgtrain.json`` holding the same keys. ``docs/export.md`` is the
reference for programmers in other languages.

How the first layer is computed inside the graph (``first_layer``); all equal
``Linear(encoder.encode(board, rules))`` to float tolerance, and every export is checked against
``ValueNetwork.evaluate`` before it is written:

``"encode"``  the encoder's units, computed exactly (``GraphEncoder``), then the Linear layer.
``"table"``   ``FirstLayerTable``: one row per board column, ``table[board + column * 31 + 15]``
              summed over the 28 columns (``embedding_bag`` in TorchScript, Gather + ReduceSum in ONNX).
``"pairs"``   the same with the columns taken two at a time: a row per (column pair, count, count),
              14 rows summed. A larger table (14 * 961 rows) but half the Gather indices, and
              onnxruntime's Gather costs about 15 ns an index whatever the row size. Measured by
              ``scripts/bench_export.py`` (198-80, one thread, 100,000 positions): pairs 2.1M
              positions/s, table 1.1M, encode 0.5M, PyTorch's ``evaluate`` 6.2M: without an
              ``embedding_bag`` operator ONNX materialises the gathered rows before summing them.

Units that are not column-separable (``tesauro_plus``'s race features) are computed in the graph by
``GraphRaceUnits`` with comparisons, reductions and small matrix products: the encoder's own version
uses ``frexp``, bit operations and a loop with a data-dependent exit, none of which export.
"""

from __future__ import annotations

import copy
import io
import json
import os
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from bgtrain.encoding import (
    COUNT_VALUES,
    MAX_CHECKERS,
    Encoder,
    FirstLayerTable,
    _escape_table,
)
from bgtrain.network import ACTIVATIONS, ValueNetwork
from bgtrain.outcomes import cubeless_equity
from engine.board import (
    BOARD_WIDTH,
    MOVER_BAR,
    MOVER_IN_HAND,
    OPPONENT_BAR,
    OPPONENT_IN_HAND,
    flip_board,
)
from engine.random_play import sample_positions
from engine.rules import STANDARD, Rules

FORMAT = "bgtrain-value-model"
FORMAT_VERSION = 1
FORMATS = ("onnx", "torchscript")
FIRST_LAYERS = ("pairs", "table", "encode")
DEFAULT_FIRST_LAYER = {"onnx": "pairs", "torchscript": "table"}  # the fastest, measured by bench_export
ONNX_OPSET = 17  # onnxruntime >= 1.14 runs it
TORCHSCRIPT_METADATA_FILE = "bgtrain.json"
OUTCOME_ORDER = ("WIN", "WIN_GAMMON", "WIN_BACKGAMMON", "LOSE_GAMMON", "LOSE_BACKGAMMON")
EXPORT_TOLERANCE = 1e-5  # largest difference from ValueNetwork.evaluate an export may have
INSTALL_HINT = "pip install 'bgtrain[onnx]'"
KNOWN_RULES = {STANDARD.name: STANDARD}

BOARD_LAYOUT = (
    "int8[batch, 28], always from the side to move ('mover'). Index 0: the opponent's checkers on the bar, "
    "as a count <= 0. Indices 1..24: the points numbered from the mover's side (the mover moves from 24 "
    "towards 1 and bears off below 1; the opponent moves from 1 towards 24); a count > 0 is the mover's "
    "checkers, < 0 the opponent's. Index 25: the mover's checkers on the bar (>= 0). Index 26: the mover's "
    "checkers not yet entered (variants only, else 0; >= 0). Index 27: the opponent's checkers not yet "
    "entered (<= 0). Borne-off counts are derived: checkers_per_side minus the side's checkers on the row."
)
PROBABILITIES_MEANING = (
    "float32[batch, 5], cumulative probabilities for the side to move, before it rolls: P(win), "
    "P(win a gammon or backgammon), P(win a backgammon), P(lose a gammon or backgammon), P(lose a backgammon)"
)
EQUITY_MEANING = (
    "float32[batch], cubeless equity for the side to move in points per game: "
    "2 WIN - 1 + WIN_GAMMON - LOSE_GAMMON + WIN_BACKGAMMON - LOSE_BACKGAMMON"
)


def require_onnx() -> Any:
    """The ``onnx`` module, or a ValueError telling how to install the optional dependency."""
    try:
        import onnx
        import onnxruntime  # noqa: F401  (every ONNX export is checked in onnxruntime)
    except ImportError as error:
        raise ValueError(f"ONNX export needs the onnx and onnxruntime packages ({error.name} is missing): "
                         f"{INSTALL_HINT}") from None
    return onnx


def rules_named(name: str) -> Rules:
    try:
        return KNOWN_RULES[name]
    except KeyError:
        raise ValueError(f"rules {name!r} unknown to this bgtrain; known: {', '.join(KNOWN_RULES)}") from None


# ---------------------------------------------------------------------------------------------------
# The encoders as exportable graphs: only ops that torch.onnx (opset 17) and TorchScript tracing keep,
# with no data-dependent control flow. Every unit is an exact small integer (or such an integer
# divided by a constant, in the same float operation as the encoder), so the results are bit-identical
# to ``Encoder.encode`` (tests/test_export.py checks it on random boards).


class GraphPointUnits(nn.Module):
    """``Tesauro198`` units: ``int8[B, 28]`` -> ``float32[B, 198]``, exactly ``encode``."""

    def __init__(self, rules: Rules):
        super().__init__()
        self.checkers = float(rules.checkers_per_side)
        # Unit k of a point holding n >= 0 own checkers: min(relu(n - k), cap_k) * scale_k, i.e. n >= 1,
        # n >= 2, n >= 3 and (n - 3) / 2 beyond 3, for integer n.
        self.register_buffer("steps", torch.tensor([0.0, 1.0, 2.0, 3.0]))
        self.register_buffer("caps", torch.tensor([1.0, 1.0, 1.0, float("inf")]))
        self.register_buffer("scales", torch.tensor([1.0, 1.0, 1.0, 0.5]))

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        b = board.to(torch.float32)
        points = b[:, 1:25]
        # The mover's counts on its points, then the opponent's on its own (its point j is the mover's 25 - j).
        counts = torch.cat((points, -points.flip(-1)), dim=-1)
        units = torch.minimum(torch.relu(counts.unsqueeze(-1) - self.steps), self.caps) * self.scales
        mover_on = torch.relu(b[:, 1:27]).sum(-1)
        opponent_on = torch.relu(-b[:, 0:25]).sum(-1) - b[:, OPPONENT_IN_HAND]
        others = torch.stack(
            (
                (b[:, MOVER_BAR] + b[:, MOVER_IN_HAND]) * 0.5,
                (b[:, OPPONENT_BAR] + b[:, OPPONENT_IN_HAND]) * -0.5,
                (self.checkers - mover_on) / 15.0,
                (self.checkers - opponent_on) / 15.0,
                torch.ones_like(mover_on),
                torch.zeros_like(mover_on),
            ),
            dim=-1,
        )
        return torch.cat((units.flatten(1), others), dim=-1)


class GraphPipUnits(nn.Module):
    """``TesauroPlus`` units 198, 199, the pip counts / 100: ``int8[B, 28]`` -> ``float32[B, 2]``."""

    def __init__(self):
        super().__init__()
        self.register_buffer("distance", torch.arange(1, 26, dtype=torch.float32))  # columns 1..25

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        b = board.to(torch.float32)
        mover = (torch.relu(b[:, 1:26]) * self.distance).sum(-1) + 25.0 * b[:, MOVER_IN_HAND]
        # The opponent's checker on the mover's point p (or its bar, column 0) needs 25 - p pips.
        opponent = (torch.relu(-b[:, 0:25]) * self.distance.flip(0)).sum(-1) - 25.0 * b[:, OPPONENT_IN_HAND]
        return torch.stack((mover, opponent), dim=-1) / 100.0


class GraphRaceUnits(nn.Module):
    """``TesauroPlus.extra_units`` (units 200..206): ``int8[B, 28]`` -> ``float32[B, 7]``, exactly.

    The encoder reads rearmost checkers off bitmasks with ``frexp`` and longest primes with a loop that
    stops when every mask is empty; here the same numbers come from reductions over the 24 points:

    * rearmost checkers: the largest point number holding the mover's checkers, the smallest holding
      the opponent's (25 / 0 when waiting to enter);
    * escape patterns: bit k is "the point k + 1 pips ahead is made by the other side"; the patterns
      of all 26 possible starting points come from one ``[24, 26]`` matrix of powers of two, and the
      starting point's column is picked by a one-hot product (sums of distinct powers of two below
      4096: exact in float32);
    * longest prime: the longest run of made points ending at p is p minus the last unmade point at or
      before p, a prefix maximum taken by doubling (5 shifted maxima cover 25 entries).
    """

    def __init__(self):
        super().__init__()
        point = torch.arange(1, 25)
        start = torch.arange(26)
        # Mover starting from b (moving down): bit k <- the opponent made point b - 1 - k.
        ahead = start[None, :] - 1 - point[:, None]
        self.register_buffer("mover_window", torch.where((ahead >= 0) & (ahead <= 11), 2.0 ** ahead.clamp(0, 11), 0.0))
        # Opponent starting from f (moving up, mover's numbering): bit j <- the mover made point f + 1 + j.
        ahead = point[:, None] - start[None, :] - 1
        self.register_buffer("opponent_window", torch.where((ahead >= 0) & (ahead <= 11), 2.0 ** ahead.clamp(0, 11), 0.0))
        self.register_buffer("starts", start.to(torch.float32))
        self.register_buffer("numbers", point.to(torch.float32))
        self.register_buffer("run_index", torch.arange(25, dtype=torch.float32))  # 0 = a never-made sentinel
        self.register_buffer("escapes", _escape_table(torch.device("cpu")).to(torch.float32))

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        b = board.to(torch.float32)
        points = b[:, 1:25]
        mover_waiting = (torch.relu(b[:, MOVER_BAR]) + torch.relu(b[:, MOVER_IN_HAND])) > 0
        opponent_waiting = (torch.relu(-b[:, OPPONENT_BAR]) + torch.relu(-b[:, OPPONENT_IN_HAND])) > 0
        mover_occupied = (points > 0).to(torch.float32)
        opponent_occupied = (points < 0).to(torch.float32)
        mover_made = (points >= 2).to(torch.float32)
        opponent_made = (points <= -2).to(torch.float32)

        # In the mover's numbering: 0 when the mover has no checker left, 25 when the opponent has none.
        mover_back = torch.where(mover_waiting, 25.0, (mover_occupied * self.numbers).amax(-1))
        opponent_front = 25.0 - (opponent_occupied * (25.0 - self.numbers)).amax(-1)
        opponent_front = torch.where(opponent_waiting, 0.0, opponent_front)

        mover_pattern = self._pick(opponent_made @ self.mover_window, mover_back)
        mover_escapes = torch.where(mover_back > 0, self.escapes[mover_pattern.to(torch.int64)], 0.0)
        opponent_pattern = self._pick(mover_made @ self.opponent_window, opponent_front)
        opponent_has_checkers = (opponent_occupied.amax(-1) > 0) | opponent_waiting
        opponent_escapes = torch.where(opponent_has_checkers, self.escapes[opponent_pattern.to(torch.int64)], 0.0)

        made = torch.stack((mover_made, opponent_made), dim=1)  # [B, 2, 24]
        unmade_index = torch.cat((torch.zeros_like(made[..., :1]), (1.0 - made) * self.numbers), dim=-1)
        last_unmade = unmade_index
        for shift in (1, 2, 4, 8, 16):
            shifted = torch.cat((torch.zeros_like(last_unmade[..., :shift]), last_unmade[..., :-shift]), dim=-1)
            last_unmade = torch.maximum(last_unmade, shifted)
        primes = (self.run_index - last_unmade).amax(-1)  # [B, 2]

        return torch.stack(
            (
                (mover_back < opponent_front).to(torch.float32),  # is_race
                mover_back / 25.0,
                (25.0 - opponent_front) / 25.0,
                mover_escapes / 36.0,
                opponent_escapes / 36.0,
                primes[:, 0] / 6.0,
                primes[:, 1] / 6.0,
            ),
            dim=-1,
        )

    def _pick(self, candidates: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        """``candidates: float[B, 26]`` (one pattern per starting point), ``start: float[B]`` -> ``float[B]``."""
        return (candidates * (start.unsqueeze(-1) == self.starts)).sum(-1)


def graph_extra_units(encoder: Encoder) -> nn.Module | None:
    """The exportable module computing ``encoder.extra_units``; None when the encoder has none."""
    if encoder.separable_size == encoder.size:
        return None
    if encoder.name == "tesauro_plus" and encoder.version == 1:
        return GraphRaceUnits()
    raise ValueError(f"encoder {encoder.name!r} version {encoder.version} has no in-graph version of its "
                     "non-separable units; export it with --bare (the network alone, on encoded inputs)")


class GraphEncoder(nn.Module):
    """``encoder.encode(board, rules)`` as an exportable graph: ``int8[B, 28]`` -> ``float32[B, size]``."""

    def __init__(self, encoder: Encoder, rules: Rules):
        super().__init__()
        if encoder.name not in ("tesauro198", "tesauro_plus") or encoder.version != 1:
            raise ValueError(f"encoder {encoder.name!r} version {encoder.version} has no in-graph version; "
                             "export it with --bare (the network alone, on encoded inputs)")
        parts: list[nn.Module] = [GraphPointUnits(rules)]
        if encoder.name == "tesauro_plus":
            parts += [GraphPipUnits(), GraphRaceUnits()]
        self.parts = nn.ModuleList(parts)

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        return torch.cat([part(board) for part in self.parts], dim=-1)


# ---------------------------------------------------------------------------------------------------
# The exported modules.


class _Head(nn.Module):
    """Everything after the first layer's pre-activation: -> (probabilities [B, 5], equity [B])."""

    def __init__(self, network: ValueNetwork, rules: Rules):
        super().__init__()
        self.rules = rules  # how the outcome slots are valued (``bgtrain.outcomes.point_weights``)
        self.activation = ACTIVATIONS[network.activation_name]
        self.layers = copy.deepcopy(network.hidden_layers[1:])
        self.output_layer = copy.deepcopy(network.output_layer)

    def forward(self, first_pre_activation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.activation(first_pre_activation)
        for layer in self.layers:
            hidden = self.activation(layer(hidden))
        probabilities = torch.sigmoid(self.output_layer(hidden))
        return probabilities, cubeless_equity(probabilities, self.rules)


class _TableLayer(nn.Module):
    """The first layer as summed table rows (``FirstLayerTable``), over single columns or column pairs."""

    def __init__(self, network: ValueNetwork, rules: Rules, pairs: bool, embedding_bag: bool):
        super().__init__()
        first = network.hidden_layers[0]
        # Built in float64 and rounded once: each row is then the float32 nearest to its exact value.
        wide = copy.deepcopy(first).to(torch.float64)
        with torch.no_grad():
            folded = FirstLayerTable(network.encoder, wide, rules)
        table = folded.table
        columns = torch.arange(BOARD_WIDTH, dtype=torch.int32)
        if pairs:
            # Row (i, u, v) holds column 2i at count u - 15 plus column 2i + 1 at count v - 15.
            rows = table.reshape(BOARD_WIDTH, COUNT_VALUES, -1)
            table = (rows[0::2, :, None, :] + rows[1::2, None, :, :]).reshape(BOARD_WIDTH // 2 * COUNT_VALUES**2, -1)
            # Row index = 31 * count(2i) + count(2i + 1) + offset(i), as one small float matrix product
            # (measured faster in onnxruntime than int32 slicing); exact, as every value is below 2 ** 24.
            index_weights = torch.zeros(BOARD_WIDTH, BOARD_WIDTH // 2)
            index_weights[columns[0::2], columns[0::2] // 2] = float(COUNT_VALUES)
            index_weights[columns[1::2], columns[1::2] // 2] = 1.0
            self.register_buffer("index_weights", index_weights)
            pair = torch.arange(BOARD_WIDTH // 2)
            offsets = pair * COUNT_VALUES**2 + MAX_CHECKERS * COUNT_VALUES + MAX_CHECKERS
            self.register_buffer("offsets", offsets.to(torch.float32))
        else:
            self.register_buffer("offsets", columns * COUNT_VALUES + MAX_CHECKERS)
        self.pairs = pairs
        self.embedding_bag = embedding_bag
        self.register_buffer("table", table.to(torch.float32).contiguous())
        self.extra_units = graph_extra_units(network.encoder)
        self.register_buffer("extra_weight", folded.extra_weight.to(torch.float32).contiguous())

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        if self.pairs:
            rows = (board.to(torch.float32) @ self.index_weights + self.offsets).to(torch.int64)
        else:
            rows = board.to(torch.int32) + self.offsets
        if self.embedding_bag:
            hidden = F.embedding_bag(rows, self.table, mode="sum")
        else:
            hidden = self.table[rows].sum(1)
        if self.extra_units is not None:
            hidden = hidden + self.extra_units(board) @ self.extra_weight
        return hidden


class _EncodeLayer(nn.Module):
    def __init__(self, network: ValueNetwork, rules: Rules):
        super().__init__()
        self.encoder = GraphEncoder(network.encoder, rules)
        self.linear = copy.deepcopy(network.hidden_layers[0])

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        return self.linear(self.encoder(board))


class BoardModel(nn.Module):
    """``board: int8[B, 28]`` -> ``(probabilities: float32[B, 5], equity: float32[B])``."""

    def __init__(self, network: ValueNetwork, rules: Rules = STANDARD, first_layer: str = "pairs",
                 embedding_bag: bool = False):
        super().__init__()
        if first_layer not in FIRST_LAYERS:
            raise ValueError(f"first layer {first_layer!r} unknown; known: {', '.join(FIRST_LAYERS)}")
        if first_layer == "encode":
            self.first = _EncodeLayer(network, rules)
        else:
            self.first = _TableLayer(network, rules, pairs=first_layer == "pairs", embedding_bag=embedding_bag)
        self.head = _Head(network, rules)

    def forward(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head(self.first(board))


class BareModel(nn.Module):
    """``encoded: float32[B, encoder.size]`` -> ``(probabilities: float32[B, 5], equity: float32[B])``."""

    def __init__(self, network: ValueNetwork, rules: Rules = STANDARD):
        super().__init__()
        self.first = copy.deepcopy(network.hidden_layers[0])
        self.head = _Head(network, rules)

    def forward(self, encoded: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head(self.first(encoded))


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
                         f"{encoder.version} (bgtrain.encoding)") if bare else BOARD_LAYOUT,
        "outputs": "probabilities,equity",
        "probabilities.order": ",".join(OUTCOME_ORDER),
        "probabilities.meaning": PROBABILITIES_MEANING,
        "equity.meaning": EQUITY_MEANING,
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
    """Reachable positions of both sides to move, for the export checks: ``int8[2 count, 28]``."""
    boards, _ = sample_positions(count, seed, rules, "cpu")
    return torch.cat((boards, flip_board(boards)))


def _check(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    difference = float((got - want).abs().max()) if got.numel() else 0.0
    if not difference <= EXPORT_TOLERANCE:
        raise RuntimeError(f"{name} differs from ValueNetwork.evaluate by {difference:.2e} "
                           f"(> {EXPORT_TOLERANCE:g}); not written")


def _atomic_write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


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
        if bare:
            module: nn.Module = BareModel(network, rules).eval()
            example = network.encoder.encode(boards, rules)
        else:
            module = BoardModel(network, rules, first_layer, embedding_bag=file_format == "torchscript").eval()
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
    _atomic_write(path, data)
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
    docs = {input_name: metadata["input.layout"], "probabilities": PROBABILITIES_MEANING, "equity": EQUITY_MEANING}
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
    """Export the network of a checkpoint file (``bgtrain.checkpoint``); ValueError for a bad file."""
    from bgtrain.checkpoint import load_network

    network, payload = load_network(checkpoint, "cpu")
    rules = rules_named(payload.get("rules", STANDARD.name))
    return export_model(network, payload, path, file_format, bare, first_layer, rules, source=str(checkpoint))
