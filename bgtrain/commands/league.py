"""A round robin between agents: a table of points per game and a rating per agent.

    bgtrain league A B C ... --games N [--seed S] [--device D] [--out DIR] [--threads T]

Every pair of agents plays N seat-swapped cubeless money games on the same dice (``bgtrain.arena.league``),
in chunks of ``--batch-pairs`` pairs, each a seeded unit of work (``bgtrain.distributed.duels``): the
same in this process and on a Ray cluster (``--executor ray``), resumable with ``--work-dir DIR``.
Printed: the matrix of points per game (row agent against column agent, ± 95%) and a rating per
agent (weighted least squares on points per game: the rating difference of two agents predicts their
points per game; ratings sum to zero). Written to DIR (default ``league``): ``league.json`` with
the same, and ``league.png`` (with matplotlib installed, ``pip install 'bgtrain[plot]'``) or else
``league.svg``: a heat map of the matrix beside the ratings.

Agent forms as for ``bgtrain bench``: ``random``, ``pubeval``, ``heuristic``, ``PATH.pt[:Nply][:any-variant]``,
``shipped[:Nply]`` (the ``--variant``'s shipped model), ``PATH.onnx[:Nply]``, ``gnubg:0ply|1ply|2ply``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bgtrain.arena.league import format_table, write_json, write_plot
from bgtrain.arena.specs import SPEC_FORMS
from bgtrain.commands import add_device, add_seed, add_threads, add_variant, apply_threads, positive_int
from bgtrain.distributed.duels import play_league_chunked
from bgtrain.distributed.executor import add_executor_arguments, executor_from_args
from bgtrain.files import check_output_directory
from engine.variants import get_rules


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agents", nargs="+", metavar="AGENT", help="two or more agents: " + "; ".join(SPEC_FORMS))
    parser.add_argument("--games", type=positive_int, default=2000, help="games per pair, rounded up to even (default 2000)")
    add_seed(parser, help="dice seed, the same for every pair (default 0)")
    add_device(parser)
    parser.add_argument("--out", default="league", help="directory for league.json and the plot (default ./league)")
    parser.add_argument("--batch-pairs", type=positive_int,
                        help="seat-swapped pairs per chunk, each a seeded unit of work played in lock step "
                        "(default: 2048, fewer on Ray so that every worker gets a chunk)")
    add_threads(parser)
    add_variant(parser)
    add_executor_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if len(args.agents) < 2:
        raise ValueError("a league needs at least two agents")
    check_output_directory(args.out, "--out")
    apply_threads(args)
    rules = get_rules(args.variant)
    executor = executor_from_args(args)
    start = time.perf_counter()

    def progress(result) -> None:
        print(f"  {result.summary()}", flush=True)

    try:
        league = play_league_chunked(args.agents, args.games, args.seed, rules.name, executor, args.batch_pairs,
                                     args.work_dir, [args.seed + k for k in range(len(args.agents))], progress)
    finally:
        executor.close()
    seconds = time.perf_counter() - start
    print()
    print(format_table(league))
    out = Path(args.out)
    json_path = write_json(league, out / "league.json")
    plot_path = write_plot(league, out)
    games = sum(match.games for match in league.matches)
    print(f"\n{games:,} games in {seconds:.1f} s; wrote {json_path} and {plot_path}")
    return 0
