"""Score agents' checker play on the move-error benchmark: mean equity lost per decision × 1000.

    bgtrain benchmark AGENT... [--class contact|crashed|race] [--data PATH] [--by-stage] [--json FILE]
                               [--device D] [--threads T]

Agents: ``pubeval``, ``random``, ``PATH.pt[:Nply]`` (a checkpoint), ``PATH.onnx[:Nply]`` (an export),
``gnubg:0ply|1ply|2ply`` (GNU Backgammon, after ``pip install gnubg-nn``); see ``bgtrain.arena.specs``.

The decisions are the shipped set (``bgtrain/data/benchmark/``: positions from self-play, each
candidate play's equity loss from rollouts for contact and crashed decisions and from GNU Backgammon
2-ply for races; its ``manifest.json`` gives each class's reference and how it was made),
or ``--data`` a file of the same format (``.npz``) or GNU Backgammon's own ``.bm`` benchmark format
(``contact.bm``, ``crashed.bm``, ``race.bm``; ``bgtrain.benchmark.bm_format``). A play that is not
listed for its decision is charged the worst listed loss. Printed per class: each agent's error rate
with its 95% interval and the share of its plays that were not listed; with two or more agents, the
difference of each pair on the same decisions with a paired 95% interval (``bgtrain.benchmark.scorer``).
``--by-stage`` also splits each class's error by the stage of the bear-off (``decisions.STAGES``: the
mover saving a gammon, winning one, neither side nor both with checkers off), to show where it comes from.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from bgtrain.arena.specs import SPEC_FORMS, make_agent
from bgtrain.benchmark.decisions import CLASSES, class_kind, load_decisions
from bgtrain.benchmark.scorer import score_agents
from bgtrain.files import atomic_write


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agents", metavar="AGENT", nargs="+", help="agents to score: " + "; ".join(SPEC_FORMS))
    parser.add_argument("--class", dest="position_class", metavar="CLASS",
                        help=f"score one class only: {', '.join(CLASSES)} (default: all)")
    parser.add_argument("--data", metavar="PATH", help="decisions: a .npz benchmark or a GNU Backgammon .bm file "
                        "(default: the shipped benchmark; 'gnubg-2ply': the set as built, every class labelled by "
                        "GNU Backgammon 2-ply; 'plus-rollouts': the shipped set before 2026-12-03, contact and "
                        "crashed rolled out by bgtrain-plus.pt)")
    parser.add_argument("--by-stage", action="store_true",
                        help="also split each class's error by the stage of the bear-off: saving the gammon, "
                             "winning a gammon, neither side off, both")
    parser.add_argument("--json", metavar="FILE", help="also write the error rates and differences as JSON to FILE")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's own choice)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random agent (default 0)")


def run(args: argparse.Namespace) -> int:
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"--threads must be at least 1, not {args.threads}")
        torch.set_num_threads(args.threads)
    classes = CLASSES if args.position_class is None else (class_kind(args.position_class).name.lower(),)
    names = [agent.strip() for agent in args.agents]
    if len(set(names)) != len(names):
        raise ValueError("each agent may be named once")
    decisions = load_decisions(args.data)
    counts = decisions.class_counts()
    if not any(counts[name] for name in classes):
        raise ValueError(f"the benchmark data holds no {' or '.join(classes)} decisions")
    device = torch.device(args.device)
    agents = [make_agent(name, device=device, seed=args.seed) for name in names]
    start = time.perf_counter()
    report = score_agents(agents, decisions, classes, device=device, by_stage=args.by_stage)
    seconds = time.perf_counter() - start
    source = args.data or "the shipped benchmark"
    total = sum(counts[name] for name in classes)
    print(f"{total:,} decisions from {source}: "
          + ", ".join(f"{name} {counts[name]:,}" for name in classes if counts[name]))
    print(report.table())
    print(f"scored in {seconds:.1f} s")
    if args.json:
        payload = {"data": str(source), "counts": {name: counts[name] for name in classes}, **report.as_dict(),
                   "seconds": round(seconds, 3)}
        atomic_write(args.json, (json.dumps(payload, indent=2) + "\n").encode())
    return 0
