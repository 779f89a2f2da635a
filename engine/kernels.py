"""The engine's pure tensor kernels, compiled with ``torch.compile`` on the CPU once they are hot.

A kernel here is a function of tensors (and a few Python constants) whose output sizes do not
depend on the data: a chain of elementwise operations, gathers and table lookups over a batch of
lines. Run op by op, each operation is a pass over memory; compiled, the chain is one fused loop,
several times faster on the 2-core CPU this project is measured on (move generation as a whole is
about 1.4 times faster at batch 2,048 and 8,192).

Compiling costs seconds (about 20 s for all of the move generator's kernels on 2 cores, or about
3 s when inductor's disk cache already holds them), which a one-off call (``bgtrain moves`` on a few
lines, one ``bgtrain eval``) should not pay. So ``call(kernel, *args, rows=..., device=...)`` works
like a tracing JIT: in the default mode ``"auto"`` a kernel is compiled once it has been called
``HOT_CALLS`` times on a CPU with at least ``MIN_ROWS`` rows (self-play, training and benchmarks get
there within a second); before that, and for small batches, it runs op by op. Either way the results
are identical (integer arithmetic; both paths are tested against the reference implementation).

The mode comes from the environment variable ``BGTRAIN_COMPILE``: ``auto`` (the default), ``always``
(compile at the first large call) or ``never``; ``set_mode`` changes it in-process. A GPU always
runs op by op (compiling there is untried). If compiling fails (no C++ compiler, say), a warning
says so once and every later call runs op by op.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

MODES = ("auto", "always", "never")
ENVIRONMENT_VARIABLE = "BGTRAIN_COMPILE"
MIN_ROWS = 256  # smaller batches always run op by op: too little work for a fused loop to matter
HOT_CALLS = 20  # large calls of one kernel before "auto" compiles it
# Each kernel is compiled once per set of Python constants it is called with (move generation: the
# step, the variant's rules); dynamo's default limit of 8 would send the rest back to op-by-op runs.
RECOMPILE_LIMIT = 64

_log = logging.getLogger(__name__)  # the command line shows its INFO lines
_compiled: dict[Callable, Callable] = {}
_large_calls: Counter = Counter()
_failed = False


def _mode_from_environment() -> str:
    mode = os.environ.get(ENVIRONMENT_VARIABLE, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"{ENVIRONMENT_VARIABLE}={mode!r}: expected one of {', '.join(MODES)}")
    return mode


_mode = _mode_from_environment()


def set_mode(mode: str) -> str:
    """Set the compile mode (``auto``, ``always`` or ``never``); returns the previous one."""
    global _mode
    if mode not in MODES:
        raise ValueError(f"unknown compile mode {mode!r}: expected one of {', '.join(MODES)}")
    previous, _mode = _mode, mode
    return previous


@contextmanager
def op_by_op_unless_asked() -> Iterator[None]:
    """Run the block op by op unless ``BGTRAIN_COMPILE`` asks for a mode: for one-off work in a short
    command (an export's check positions, say), which would otherwise reach the compile threshold and pay
    seconds of compiling to save a fraction of one."""
    previous = None if ENVIRONMENT_VARIABLE in os.environ else set_mode("never")
    try:
        yield
    finally:
        if previous is not None:
            set_mode(previous)


def compile_failed() -> bool:
    """Whether compiling failed in this process (every kernel then runs op by op)."""
    return _failed


def describe() -> str:
    """The mode and what has been compiled so far, for benchmark reports."""
    state = "compiling failed, op by op" if _failed else f"{len(_compiled)} kernels compiled"
    return f"{_mode} ({state})"


def call(kernel: Callable, *args, rows: int, device: torch.device):
    """``kernel(*args)``, compiled where that pays (see the module docstring)."""
    if _mode == "never" or _failed or device.type != "cpu" or rows < MIN_ROWS:
        return kernel(*args)
    compiled = _compiled.get(kernel)
    if compiled is None:
        _large_calls[kernel] += 1
        if _mode == "auto" and _large_calls[kernel] < HOT_CALLS:
            return kernel(*args)
        compiled = _compiled[kernel] = _compile(kernel)
    try:
        return compiled(*args)
    except Exception as error:  # noqa: BLE001 (any compiler failure means: run op by op)
        _give_up(error)
        return kernel(*args)


def cache_directory() -> str:
    """Where inductor keeps compiled kernels between processes: ``$TORCHINDUCTOR_CACHE_DIR`` when set, else
    ``$XDG_CACHE_HOME/bgtrain/torchinductor`` (``~/.cache`` by default) beside the bear-off databases.
    Inductor's own default is under /tmp, which a reboot or a container's fresh /tmp empties, so every
    new machine (a Ray worker, say) compiled from scratch; here it is once per machine and torch version."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(cache, "bgtrain", "torchinductor")


def _compile(kernel: Callable) -> Callable:
    import torch._dynamo  # about 1 s to import: only once something is worth compiling

    # Read when inductor first compiles: set before that, for this process and its workers alike.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", cache_directory())

    _log.info("engine: compiling %s with torch.compile (seconds, once per process; cached on disk)",
              kernel.__name__)
    dynamo_config = torch._dynamo.config
    dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, RECOMPILE_LIMIT)
    return torch.compile(kernel, dynamic=True)


def _give_up(error: Exception) -> None:
    global _failed
    _failed = True
    warnings.warn(
        f"torch.compile failed ({type(error).__name__}: {str(error)[:200]}); the engine runs op by op "
        f"from now on, correct but slower. Set {ENVIRONMENT_VARIABLE}=never to skip compiling.",
        RuntimeWarning,
        stacklevel=3,
    )
