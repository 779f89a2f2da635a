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

Modules: ``format`` (the file format's constants and meanings), ``graph`` (the encoders as exportable
graphs), ``modules`` (the exported modules), ``writer`` (metadata, bytes, checks, the file),
``onnx_reader`` (an exported ONNX file as an evaluator's network).
"""

from __future__ import annotations

from bgtrain.export.writer import (
    bgtrain_version,
    check_positions,
    export_checkpoint,
    export_metadata,
    export_model,
)
from bgtrain.model.export_format import (
    BOARD_LAYOUT,
    DEFAULT_FIRST_LAYER,
    EQUITY_MEANING,
    EXPORT_TOLERANCE,
    FIRST_LAYERS,
    FORMAT,
    FORMAT_VERSION,
    FORMATS,
    INSTALL_HINT,
    ONNX_OPSET,
    OUTCOME_ORDER,
    PROBABILITIES_MEANING,
    TORCHSCRIPT_METADATA_FILE,
    equity_meaning,
    require_onnx,
)
from bgtrain.model.loading import load_model
from bgtrain.model.onnx_model import ONNX_CHUNK, OnnxValueModel

__all__ = [
    "BOARD_LAYOUT",
    "DEFAULT_FIRST_LAYER",
    "EQUITY_MEANING",
    "EXPORT_TOLERANCE",
    "FIRST_LAYERS",
    "FORMAT",
    "FORMATS",
    "FORMAT_VERSION",
    "INSTALL_HINT",
    "ONNX_CHUNK",
    "ONNX_OPSET",
    "OUTCOME_ORDER",
    "PROBABILITIES_MEANING",
    "TORCHSCRIPT_METADATA_FILE",
    "OnnxValueModel",
    "bgtrain_version",
    "check_positions",
    "equity_meaning",
    "export_checkpoint",
    "export_metadata",
    "export_model",
    "load_model",
    "require_onnx",
]
