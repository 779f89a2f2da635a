"""The encoders' CPU fast path: a small C kernel (``bgtrain/model/_fast_encoders.c``) over the int8 board rows.

``position_phases(board)`` is the phase model's routing (``engine.position_kinds.position_phases``) by the
same kernel: that reference is written in exportable float operations, which on the CPU cost as much as
the networks they route to (measured under cProfile: 28% of a 2-ply decision; docs/performance.md).

``encode(name, board, checkers_per_side)`` returns what ``ENCODERS[name].encode`` returns (and with
``extra_units=True`` what ``extra_units`` returns), bit for bit, for ``tesauro198``, ``tesauro_plus``,
``gnubg_race`` and ``gnubg_contact``; or None where the fast path does not apply, and the caller runs
its torch code. It applies in eager mode on the CPU: never while tracing, exporting or compiling (the
exported graphs hold the torch code, which is also what runs on CUDA), never for another dtype or shape.

The kernel is built with the package (``pip install -e .``, ``setup.py``); where it is not (no C
compiler), the encoders say so once and use their torch code. The torch code stays the reference: the
tests compare the two on random positions from whole games and on drawn boards
(``tests/test_fast_encoders.py``), and ``scripts/bench_gnubg_inputs.py`` times both.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings

import torch

from engine.board import BOARD_WIDTH

_KINDS = {  # (encoder name, extra units only) -> the kernel's name for it
    ("gnubg_contact", False): "CONTACT",
    ("gnubg_contact", True): "CONTACT_EXTRA",
    ("tesauro_plus", False): "PLUS",
    ("tesauro_plus", True): "PLUS_EXTRA",
    ("gnubg_race", False): "RACE",
    ("gnubg_race", True): "RACE_EXTRA",
    ("tesauro198", False): "TESAURO",
}


@functools.cache
def native_kernel():
    """The compiled kernel module, or None (said once) when it was not built."""
    try:
        kernel = importlib.import_module("bgtrain.model._fast_encoders")
    except ImportError as error:
        warnings.warn(f"bgtrain's native encoder kernel is not built ({error}); encoding on the CPU uses the "
                      "slower torch code (build it with `pip install -e .`)", RuntimeWarning, stacklevel=4)
        return None
    return kernel


def applies(board: torch.Tensor) -> bool:
    """Whether the fast path may encode ``board``: an ``int8[B, 28]`` CPU tensor in eager mode."""
    if board.device.type != "cpu" or board.dtype != torch.int8 or board.dim() != 2 or board.shape[1] != BOARD_WIDTH:
        return False
    # Not under tracing, compiling or functorch's transforms (vmap, jacrev: tensors without storage).
    if torch.jit.is_tracing() or torch.compiler.is_compiling() or torch._C._are_functorch_transforms_active():
        return False
    # No export can be under way before torch.onnx is imported, and importing it costs a fifth of a second.
    if "torch.onnx" in sys.modules and torch.onnx.is_in_onnx_export():
        return False
    return native_kernel() is not None


def encode(name: str, board: torch.Tensor, checkers_per_side: int, extra_units: bool = False) -> torch.Tensor | None:
    """``ENCODERS[name].encode(board)`` (or ``.extra_units``) by the kernel: ``float32[B, width]``; None when
    the fast path does not apply or has no kernel for that encoder."""
    kind = _KINDS.get((name, extra_units))
    if kind is None or not applies(board):
        return None
    kernel = native_kernel()
    width = getattr(kernel, f"{kind}_WIDTH")
    out = torch.empty((board.shape[0], width), dtype=torch.float32)
    rows = board.contiguous()
    kernel.encode(getattr(kernel, kind), rows.numpy(), rows.shape[0], checkers_per_side, out.numpy(),
                  torch.get_num_threads())
    return out


def position_phases(board: torch.Tensor) -> torch.Tensor | None:
    """``engine.position_kinds.position_phases(board)`` by the kernel (``int64[B]``, equal element for
    element); None when the fast path does not apply."""
    if not applies(board):
        return None
    rows = board.contiguous()
    out = torch.empty(rows.shape[0], dtype=torch.int64)
    native_kernel().phases(rows.numpy(), rows.shape[0], out.numpy())
    return out
