"""The one-command GPU check, for the day a GPU is lent: the ``gpu`` tests and the CUDA figures.

    python scripts/check_gpu.py [--report gpu_report.md] [--budget 540]

Runs, each with its own share of ``--budget`` seconds (under 10 minutes in all): the tests marked
``gpu`` (``tests/test_gpu.py``, ``tests/test_engine_vs_reference.py``), then ``scripts/bench_engine.py``,
``scripts/bench_train.py``, ``scripts/bench_eval.py`` and ``scripts/bench_rollout.py --labels`` (rollout labels an
hour, full and pruned luck) with ``--device cuda`` and short settings. It
writes a short report (each step's status, time and last lines of output) to ``--report`` and exits
with status 1 if a step failed, 0 if all passed; without CUDA it says so in the report and exits 2.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (name, command, share of the budget)
STEPS = [
    ("gpu tests", [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/test_gpu.py",
                   "tests/test_engine_vs_reference.py"], 0.3),
    ("bench_engine cuda", [sys.executable, "scripts/bench_engine.py", "--device", "cuda", "--repeats", "3",
                           "--selfplay-turns", "100", "--reference-positions", "300"], 0.15),
    ("bench_train cuda", [sys.executable, "scripts/bench_train.py", "--device", "cuda", "--seconds", "15",
                          "--warmup", "10", "--repeats", "2"], 0.2),
    ("bench_eval cuda", [sys.executable, "scripts/bench_eval.py", "--device", "cuda", "--repeats", "3",
                         "--positions", "50", "--games", "0"], 0.15),
    # Generation 9's missing piece: rollout labels (36 whole-game trials) of the default, an hour on the GPU.
    ("rollout labels cuda", [sys.executable, "scripts/bench_rollout.py", "--model", "checkpoints/bgtrain-gen9-deep.pt",
                             "--labels", "512", "--device", "cuda", "--runs", "1"], 0.2),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", default="gpu_report.md", help="where to write the report")
    parser.add_argument("--budget", type=float, default=540.0, help="seconds for all steps together")
    args = parser.parse_args()
    import torch

    lines = [f"# GPU check ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", ""]
    if not torch.cuda.is_available():
        lines.append("CUDA is not available on this machine: nothing was run.")
        Path(args.report).write_text("\n".join(lines) + "\n")
        print(lines[-1])
        return 2
    lines.append(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    failed = False
    for name, command, share in STEPS:
        limit = args.budget * share
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True,
                                  timeout=limit, check=False)
            status = "passed" if done.returncode == 0 else f"FAILED (status {done.returncode})"
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as expired:
            status = f"TIMED OUT after {limit:.0f} s"
            output = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) else (
                expired.stdout or "")
        failed |= status != "passed"
        seconds = time.perf_counter() - start
        tail = [line for line in output.strip().splitlines() if line.strip()][-12:]
        lines += ["", f"## {name}: {status}, {seconds:.0f} s", "", "```", *tail, "```"]
        print(f"{name}: {status}, {seconds:.0f} s", flush=True)
    Path(args.report).write_text("\n".join(lines) + "\n")
    print(f"report: {args.report}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
