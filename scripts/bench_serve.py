"""Load test of ``bgtrain serve`` on 127.0.0.1: requests per second and latency at 1, 8 and 64 concurrent
clients, each level bounded in time and in count.

    python scripts/bench_serve.py [--model M] [--ply 0] [--seconds 10] [--requests 2000] [--threads 1]

Starts ``bgtrain serve`` on a free port in a child process, waits until it answers, then for each level
runs that many clients, each on its own keep-alive connection, sending wildbg ``/move`` requests (the
start position with each of the 21 rolls in turn) until ``--seconds`` have passed or ``--requests``
have been answered. Prints per level: requests, requests/s, median / 95th / 99th percentile latency, and
non-200 answers (which must be 0); the signature is the number of distinct first moves seen.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = "p24=2&p19=-5&p17=-3&p13=5&p12=-5&p8=3&p6=5&p1=-2"
ROLLS = [(a, b) for a in range(1, 7) for b in range(a, 7)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def get(reader, writer, path: str) -> tuple[int, bytes]:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
    return status, await reader.readexactly(length)


async def level(port: int, clients: int, seconds: float, limit: int, ply: int) -> dict:
    latencies: list[float] = []
    failures = 0
    first_moves: set[str] = set()
    deadline = time.perf_counter() + seconds
    counter = iter(range(10**9))

    async def client() -> None:
        nonlocal failures
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.perf_counter() < deadline:
                index = next(counter)
                if index >= limit:
                    return
                die1, die2 = ROLLS[index % len(ROLLS)]
                started = time.perf_counter()
                status, body = await get(reader, writer, f"/move?die1={die1}&die2={die2}&{START}&ply={ply}")
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    failures += 1
                else:
                    first_moves.add(json.loads(body)["moves"][0]["notation"])
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    latencies.sort()

    def percentile(fraction: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(fraction * len(latencies)))]

    return {"clients": clients, "requests": len(latencies), "per_second": len(latencies) / elapsed,
            "median_ms": 1000 * statistics.median(latencies), "p95_ms": percentile(0.95),
            "p99_ms": percentile(0.99), "failures": failures, "first_moves": len(first_moves)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="checkpoints/bgtrain-distilled.pt")
    parser.add_argument("--ply", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=10.0, help="time bound per level (default 10)")
    parser.add_argument("--requests", type=int, default=2000, help="count bound per level (default 2000)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8, 64])
    args = parser.parse_args()
    port = free_port()
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    server = subprocess.Popen([sys.executable, "-m", "bgtrain.cli", "serve", "--model", args.model, "--port", str(port),
                               "--threads", str(args.threads), "--max-ply", str(max(args.ply, 2))],
                              env=environment, cwd=ROOT)
    try:
        for _ in range(600):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit("the server stopped before answering") from None
                time.sleep(0.5)
        # Warm-up: the databases, and the engine's kernels compiled for the batch sizes of the largest level.
        asyncio.run(level(port, max(args.levels), 5.0, 4 * max(args.levels), args.ply))
        print(f"bgtrain serve {args.model}, {args.ply}-ply, {args.threads} torch thread(s); wildbg /move, start "
              f"position, 21 rolls; at most {args.seconds:.0f} s or {args.requests} requests per level")
        for clients in args.levels:
            result = asyncio.run(level(port, clients, args.seconds, args.requests, args.ply))
            print(f"  {clients:>3} clients: {result['requests']:>5} requests, {result['per_second']:7.1f}/s, "
                  f"latency median {result['median_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms, "
                  f"p99 {result['p99_ms']:.1f} ms, failures {result['failures']}; signature: "
                  f"{result['first_moves']} distinct best moves", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
