"""The exported file's format: its name and version, the output order and meanings, and the optional
ONNX dependency. A file names its rules by variant name (``engine.variants``): every variant exports."""

from __future__ import annotations

from typing import Any

from engine.rules import Rules

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


def equity_meaning(rules: Rules) -> str:
    """What the equity output means under ``rules``: games paid by checkers left (acey-deucey) weigh
    the gammon slots by N - 1 and have no backgammons (``bgtrain.outcomes.point_weights``)."""
    if rules.scoring != "checkers_left":
        return EQUITY_MEANING
    weight = max(rules.checkers_per_side - 1, 1)
    return ("float32[batch], cubeless equity for the side to move in points per game (paid by checkers "
            f"left): 2 WIN - 1 + {weight} (WIN_GAMMON - LOSE_GAMMON)")


def require_onnx() -> Any:
    """The ``onnx`` module, or a ValueError telling how to install the optional dependency."""
    try:
        import onnx
        import onnxruntime  # noqa: F401  (every ONNX export is checked in onnxruntime)
    except ImportError as error:
        raise ValueError(f"ONNX export needs the onnx and onnxruntime packages ({error.name} is missing): "
                         f"{INSTALL_HINT}") from None
    return onnx
