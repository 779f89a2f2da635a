"""Serve a model over HTTP for other programs: wildbg's API (``/move``, ``/eval``) and bgtrain's own
(``/bgtrain/move``, ``/bgtrain/eval``: position IDs and XGIDs, cube and score, variants).

    bgtrain serve [--model M]... [--ply N] [--max-ply N] [--host 127.0.0.1] [--port 8080]

``curl 'http://127.0.0.1:8080/move?die1=3&die2=1&p24=2&p19=-5&p17=-3&p13=5&p12=-5&p8=3&p6=5&p1=-2'`` gives the
legal moves of 31 from the start, best first, each with its checker steps and outcome probabilities, as
wildbg answers. The description is at ``/openapi.json``. ``--model`` may be given once per variant (the
first is the default; a request picks another with ``variant=``); it defaults to
``checkpoints/bgtrain-gen9-deep.pt``. ``--ply`` is the default search depth, ``--max-ply`` the deepest a
request may ask for. Concurrent requests are evaluated together in batches (``bgtrain.api.batching``).
The server listens on 127.0.0.1 unless ``--host`` says otherwise (it has no authentication: expose it
only on purpose). The engine's kernels run op by op (``BGTRAIN_COMPILE=auto`` to compile them once hot),
so that no request waits for a compiler.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch

from bgtrain.commands import add_device, add_threads, apply_threads
from bgtrain.values.evaluator import MAX_PLY, Evaluator
from engine import kernels


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", action="append", help="checkpoint (.pt) or export (.onnx); once per variant "
                        "(default checkpoints/bgtrain-gen9-deep.pt)")
    parser.add_argument("--ply", type=int, default=0, help="default search depth of a request (default 0)")
    parser.add_argument("--max-ply", type=int, default=2, help=f"deepest search a request may ask for, at most "
                        f"{MAX_PLY} (default 2)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument("--max-batch", type=int, default=256, help="requests evaluated together at most (default 256)")
    parser.add_argument("--max-wait-ms", type=float, default=2.0,
                        help="how long a batch waits for more requests, in milliseconds (default 2)")
    add_device(parser)
    add_threads(parser)


def run(args: argparse.Namespace) -> int:
    from bgtrain.api.app import Engines, create_app
    from bgtrain.model.shipped import shipped_model

    if not 0 <= args.max_ply <= MAX_PLY:
        raise ValueError(f"--max-ply {args.max_ply}: must be 0 to {MAX_PLY}")
    if not 0 <= args.ply <= args.max_ply:
        raise ValueError(f"--ply {args.ply}: must be 0 to --max-ply {args.max_ply}")
    if not 0 < args.port < 65536:
        raise ValueError(f"--port {args.port}: must be 1 to 65535")
    if args.max_batch < 1 or args.max_wait_ms < 0:
        raise ValueError("--max-batch must be at least 1 and --max-wait-ms not negative")
    try:
        import uvicorn
    except ImportError:
        raise ValueError("bgtrain serve needs the web extra: pip install 'bgtrain[web]'") from None
    apply_threads(args)
    if kernels.ENVIRONMENT_VARIABLE not in os.environ:
        # A server's batches vary in size from request to request: compiling the engine's kernels once
        # they are hot stalls every waiting request for the tens of seconds it takes (measured: p95
        # latency 20-30 s at 64 clients); op by op, move generation is about 1.4 times slower but steady.
        kernels.set_mode("never")
    models = [Path(model) for model in args.model] if args.model else [shipped_model()]
    evaluators = [Evaluator.from_path(model, torch.device(args.device)) for model in models]
    app = create_app(Engines(evaluators, args.ply, args.max_ply), args.max_batch, args.max_wait_ms / 1000.0)
    print(f"bgtrain serve: http://{args.host}:{args.port}/ (variants: "
          f"{', '.join(evaluator.rules.name for evaluator in evaluators)}; description at /openapi.json)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
