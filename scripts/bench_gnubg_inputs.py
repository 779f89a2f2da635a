"""Speed of the encoders' native CPU fast path (``bgtrain.model.fast_encoders``) against their torch code.

    python scripts/bench_gnubg_inputs.py [--batch 4096] [--repeats 5] [--threads 1 2]

For each thread count: positions per second of each encoder's torch code (``reference_encode``, what the
exports and CUDA run) and of the fast path (``encode`` on the CPU), timed alternately in one run, medians
of the repeats, by the wall clock and per CPU-second (the process's CPU time: on a shared machine the
wall clock also counts other processes' turns), their ratios, and a signature per encoder (the sum of
its units, and whether the two paths agree bit for bit); a 0-ply ``ValueNetwork.evaluate`` (128 hidden
units) per encoder. Then, with 1 thread, where ``gnubg_contact``'s time goes by feature group in both,
found by leaving each group out in turn (the torch code's functions replaced by zeros, the kernel's
``skip`` mask), CPU microseconds per position. Positions: ``--batch`` reached by random play (seed 1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import contextmanager

import torch

from bgtrain.model import fast_encoders, gnubg_inputs
from bgtrain.model.encoding import ENCODERS
from bgtrain.model.gnubg_inputs import contact_features
from bgtrain.model.network import ValueNetwork
from engine import kernels
from engine.random_play import sample_positions
from engine.rules import STANDARD

ENCODER_NAMES = ("gnubg_contact", "gnubg_race", "tesauro_plus", "tesauro198")


def seconds(function, boards: torch.Tensor) -> tuple[float, float]:
    """(wall-clock, CPU) seconds of one call; the CPU time is the process's, every thread's."""
    wall, cpu = time.perf_counter(), time.process_time()
    function(boards)
    return time.perf_counter() - wall, time.process_time() - cpu


def alternate(functions: dict, boards: torch.Tensor, repeats: int, clock: int = 0) -> dict[str, float]:
    """Median seconds (``clock`` 0: wall-clock, 1: CPU) of each function over ``repeats`` rounds, the
    functions taking turns in each round (so a change in the machine's load falls on all of them)."""
    return {name: values[clock] for name, values in alternate_both(functions, boards, repeats).items()}


def alternate_both(functions: dict, boards: torch.Tensor, repeats: int) -> dict[str, tuple[float, float]]:
    for function in functions.values():
        function(boards)  # warm up
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            times[name].append(seconds(function, boards))
    return {name: (statistics.median(t[0] for t in values), statistics.median(t[1] for t in values))
            for name, values in times.items()}


# ---------------------------------------------------------------------------------------------------
# Feature groups of gnubg_contact.

GROUPS = {  # group -> (the torch code's functions it replaces by zeros, the kernel's skip bit name)
    "shots (pip_loss, p1, p2)": (("_shots",), "SKIP_SHOTS"),
    "escapes, containment, mobility": (("_escapes",), "SKIP_ESCAPES"),
    "timing": (("_timing",), "SKIP_TIMING"),
    "entering, backbone": (("_entering_loss", "_backbone"), "SKIP_ENTERING_BACKBONE"),
}
ZEROS = {
    "_shots": lambda ours, theirs: (torch.zeros(ours.shape[0]),) * 3,
    "_escapes": lambda blocked, table: torch.zeros_like(blocked),
    "_timing": lambda ours, their_back: torch.zeros(ours.shape[0]),
    "_entering_loss": lambda closed, on_bar: torch.zeros_like(on_bar),
    "_backbone": lambda made, index: torch.zeros(made.shape[0]),
}


@contextmanager
def without(names: tuple[str, ...]):
    """``bgtrain.model.gnubg_inputs`` with the functions ``names`` giving zeros."""
    saved = {name: getattr(gnubg_inputs, name) for name in names}
    try:
        for name in names:
            setattr(gnubg_inputs, name, ZEROS[name])
        yield
    finally:
        for name, function in saved.items():
            setattr(gnubg_inputs, name, function)


def reference_without(names: tuple[str, ...]):
    def encode(boards: torch.Tensor) -> torch.Tensor:
        with without(names):
            return ENCODERS["gnubg_contact"].reference_encode(boards, STANDARD)
    return encode


def fast_without(skip: int):
    kernel = fast_encoders.native_kernel()

    def encode(boards: torch.Tensor) -> torch.Tensor:
        out = torch.empty((boards.shape[0], kernel.CONTACT_WIDTH))
        kernel.encode(kernel.CONTACT, boards.numpy(), boards.shape[0], 15, out.numpy(), torch.get_num_threads(), skip)
        return out
    return encode


def breakdown(boards: torch.Tensor, repeats: int) -> None:
    """Microseconds per position of each feature group of gnubg_contact, torch code and kernel: the
    time it saves when left out; the rest is what remains with every group out, less the Tesauro units."""
    kernel = fast_encoders.native_kernel()
    every_function = tuple(name for functions, _ in GROUPS.values() for name in functions)
    every_skip = sum(getattr(kernel, bit) for _, bit in GROUPS.values())
    functions = {
        ("reference", "all"): lambda b: ENCODERS["gnubg_contact"].reference_encode(b, STANDARD),
        ("fast", "all"): fast_without(0),
        ("reference", "tesauro198"): lambda b: ENCODERS["tesauro198"].reference_encode(b, STANDARD),
        ("fast", "tesauro198"): lambda b: ENCODERS["tesauro198"].encode(b, STANDARD),
        ("reference", "none"): reference_without(every_function),
        ("fast", "none"): fast_without(every_skip),
    }
    for group, (names, bit) in GROUPS.items():
        functions[("reference", group)] = reference_without(names)
        functions[("fast", group)] = fast_without(getattr(kernel, bit))
    # CPU time: on a shared machine the wall clock also counts other processes' turns.
    median = alternate(functions, boards, repeats, clock=1)
    per_position = {key: value / boards.shape[0] * 1e6 for key, value in median.items()}
    print(f"where gnubg_contact's time goes, CPU microseconds a position (median of {repeats}, 1 thread):")
    print(f"  {'group':36} {'torch code':>10} {'fast path':>10}")
    rows = [("Tesauro's 198 units", {path: per_position[(path, "tesauro198")] for path in ("reference", "fast")})]
    for group in GROUPS:
        rows.append((group, {path: per_position[(path, "all")] - per_position[(path, group)]
                             for path in ("reference", "fast")}))
    rows.append(("the rest (view, sums, anchors, ...)",
                 {path: per_position[(path, "none")] - per_position[(path, "tesauro198")]
                  for path in ("reference", "fast")}))
    rows.append(("total", {path: per_position[(path, "all")] for path in ("reference", "fast")}))
    for name, cost in rows:
        print(f"  {name:36} {cost['reference']:10.3f} {cost['fast']:10.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    if fast_encoders.native_kernel() is None:
        raise SystemExit("the native encoder kernel is not built: pip install -e .")
    kernels.set_mode("never")  # the positions only: compiling the move generator would cost more than it saves
    boards, _ = sample_positions(args.batch, seed=1)
    print(f"{args.batch} positions from random play (seed 1); load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    print(f"signature: {float(contact_features(boards).double().sum()):.6f} (gnubg_contact's GNU-style units)")
    for threads in args.threads:
        torch.set_num_threads(threads)
        print(f"threads {threads}:")
        print(f"  {'positions/s':14} {'torch code':>12} {'fast path':>12} {'ratio':>7}  "
              f"{'per CPU-second: torch':>22} {'fast':>12} {'ratio':>7}   signature")
        for name in ENCODER_NAMES:
            encoder = ENCODERS[name]
            median = alternate_both({"reference": lambda b, e=encoder: e.reference_encode(b, STANDARD),
                                     "fast": lambda b, e=encoder: e.encode(b, STANDARD)}, boards, args.repeats)
            fast, reference = encoder.encode(boards, STANDARD), encoder.reference_encode(boards, STANDARD)
            same = "identical" if torch.equal(fast.view(torch.int32), reference.view(torch.int32)) else "DIFFERENT"
            wall = {path: args.batch / value[0] for path, value in median.items()}
            cpu = {path: args.batch / max(value[1], 1e-9) for path, value in median.items()}
            print(f"  {name:14} {wall['reference']:12,.0f} {wall['fast']:12,.0f} {wall['fast'] / wall['reference']:6.1f}x  "
                  f"{cpu['reference']:22,.0f} {cpu['fast']:12,.0f} {cpu['fast'] / cpu['reference']:6.1f}x   "
                  f"{float(fast.double().sum()):.6f} ({same})")
        for name in ENCODER_NAMES:
            torch.manual_seed(0)
            network = ValueNetwork(name, (128,)).eval()
            median = alternate({"evaluate": network.evaluate}, boards, args.repeats)
            print(f"  0-ply evaluate (128 hidden), {name:14} {args.batch / median['evaluate']:12,.0f} positions/s")
    torch.set_num_threads(1)
    breakdown(boards, 3 * args.repeats)  # differences of medians: more repeats


if __name__ == "__main__":
    main()
