"""Where a bot wins or loses points against an opponent, by kind of position.

    python scripts/strength_by_kind.py MODEL OPPONENT [--kinds contact,crashed,race] [--substitute SPEC]
                                       [--games 40000] [--seed 2043] [--chunk-pairs 2000] [--workers 2]
                                       [--threads 1] [--json FILE]

MODEL plays OPPONENT (agent specs, as ``bgtrain bench`` takes them: ``gnubg:0ply``, a checkpoint,
``PATH.pt:1ply``, ``pubeval``) over ``--games`` seat-swapped cubeless games, once as it is and once for
each kind of ``--kinds`` with the substitute's plays (``--substitute``, by default OPPONENT's) in that
kind of position and its own elsewhere (``bgtrain.arena.substitution``). Every run plays the same dice
(each game's rolls come from its pair's seeded stream, whatever is played), so two runs differ only
where the substituted plays differ and the paired difference is far narrower than either run's
interval. A positive difference is a kind of position where the substitute plays better than MODEL:
with the opponent as the substitute, where MODEL loses to it.

Kinds: ``everywhere``, GNU Backgammon's classes ``contact``, ``crashed`` and ``race``, and within
contact ``contact-opening`` (the first 3 moves of each side), ``contact-bar`` (a checker on either bar),
``contact-ahead``, ``contact-even`` and ``contact-behind`` (the mover's race lead over 25 pips, within
25, or behind by more).

The runs' chunks of ``--chunk-pairs`` pairs are spread over ``--workers`` processes; each pair's rolls
depend on the seed and the pair's number alone (``engine.keyed_dice``), so the run as it is plays the
games of ``bgtrain bench MODEL OPPONENT --games G --seed S`` (with any executor and chunking).
Printed per run: points per game for MODEL with its 95% interval (over the pairs), the substituted
decisions per game, the paired difference from the run as it is with its 95% interval, and the share
of pairs whose result changed. ``--json`` writes the same (atomically).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bgtrain.arena.agents import RandomAgent
from bgtrain.arena.duel import play_pairs
from bgtrain.arena.specs import make_agent
from bgtrain.arena.substitution import POSITION_GROUPS, SubstitutedAgent, group_named
from bgtrain.benchmark.scorer import mean_interval
from bgtrain.files import atomic_write
from engine.keyed_dice import KeyedMirroredDice
from engine.rules import STANDARD

AS_IS = "as is"


@functools.cache
def _agent(spec: str):
    """Each worker process loads an agent once (a model's load and the move generator's compile take seconds)."""
    return make_agent(spec)


def _chunk_agent(spec: str, seed: int, first_pair: int):
    """The agent of one chunk: a random agent draws from the chunk's own stream, as in ``bgtrain bench``,
    so results do not depend on which process plays which chunk; others are cached."""
    if spec.strip().lower() == "random":
        return RandomAgent.for_chunk(seed, first_pair)
    return _agent(spec)


def _play_chunk(model: str, opponent: str, substitute: str, kind: str, seed: int, start: int, pairs: int,
                threads: int) -> tuple[str, int, torch.Tensor, int]:
    """One chunk of one run: ``(kind, start, MODEL's mean points per pair float64[pairs], substituted
    decisions)``; game i and game i + pairs of a chunk share their dice."""
    torch.set_num_threads(threads)
    base = _chunk_agent(model, seed, start)
    agent = base if kind == AS_IS else SubstitutedAgent(base, _chunk_agent(substitute, seed + 2, start), kind)
    dice = KeyedMirroredDice(seed, start, pairs, "cpu")  # pair i's rolls depend on (seed, i) alone
    opponent_agent = _chunk_agent(opponent, seed + 1, start)
    points = play_pairs(agent, opponent_agent, pairs, seed, STANDARD, "cpu", first_pair=start, dice=dice)
    points = points.cpu().double()
    return kind, start, (points[:pairs] + points[pairs:]) / 2, getattr(agent, "substituted", 0)


def measure(model: str, opponent: str, kinds: list[str], games: int, seed: int, chunk_pairs: int = 2000,
            workers: int = 1, threads: int = 1, substitute: str | None = None) -> dict:
    """The runs and their paired differences (see the module docstring) as a JSON-ready dict."""
    for kind in kinds:
        group_named(kind)
    substitute = substitute or opponent
    for spec in {model, opponent, substitute}:
        _agent(spec)  # a bad spec fails here, in one line, before any worker starts
    pairs = max(1, math.ceil(games / 2))
    starts = list(range(0, pairs, chunk_pairs))
    chunks = [min(chunk_pairs, pairs - start) for start in starts]
    runs = [AS_IS, *kinds]
    tasks = [(model, opponent, substitute, kind, seed, start, size, threads)
             for kind in runs for start, size in zip(starts, chunks)]
    began = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_play_chunk, *zip(*tasks)))
    else:
        results = [_play_chunk(*task) for task in tasks]
    by_run = {kind: {} for kind in runs}
    substituted = dict.fromkeys(runs, 0)
    for kind, start, pair_means, count in results:
        by_run[kind][start] = pair_means
        substituted[kind] += count
    means = {kind: torch.cat([by_run[kind][start] for start in starts]) for kind in runs}
    report = {"model": model, "opponent": opponent, "substitute": substitute, "games": 2 * pairs, "seed": seed,
              "chunk_pairs": chunk_pairs, "seconds": round(time.perf_counter() - began, 1), "runs": []}
    for kind in runs:
        points_per_game, half_width = mean_interval(means[kind])
        row = {"kind": kind, "points_per_game": points_per_game, "interval95": half_width,
               "substituted_per_game": substituted[kind] / (2 * pairs)}
        if kind != AS_IS:
            difference = means[kind] - means[AS_IS]
            row["difference"], row["difference_interval95"] = mean_interval(difference)
            row["pairs_changed"] = float((difference != 0).double().mean())
        report["runs"].append(row)
    return report


def format_report(report: dict) -> str:
    lines = [(f"{report['model']} against {report['opponent']}, {report['games']} games (seed {report['seed']}), "
             f"{report['substitute']}'s plays substituted; {report['seconds']:.0f} s"),
             f"{'kind':<16} {'points/game':>16} {'substituted/game':>17} {'difference':>18} {'pairs changed':>14}"]
    for row in report["runs"]:
        line = (f"{row['kind']:<16} {row['points_per_game']:+9.4f} ± {row['interval95']:.4f} "
                f"{row['substituted_per_game']:>17.2f}")
        if "difference" in row:
            line += f" {row['difference']:+10.4f} ± {row['difference_interval95']:.4f} {row['pairs_changed']:>13.1%}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="the agent measured (an agent spec)")
    parser.add_argument("opponent", help="the agent it plays (an agent spec)")
    parser.add_argument("--kinds", default="contact,crashed,race",
                        help=f"comma-separated kinds of position, of: {', '.join(POSITION_GROUPS)}")
    parser.add_argument("--substitute", default=None, help="whose plays are substituted (default: the opponent)")
    parser.add_argument("--games", type=int, default=40000)
    parser.add_argument("--seed", type=int, default=2043)
    parser.add_argument("--chunk-pairs", type=int, default=2000, help="pairs of games a work unit plays")
    parser.add_argument("--workers", type=int, default=1, help="processes")
    parser.add_argument("--threads", type=int, default=1, help="torch threads a process")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    if args.games < 2 or args.chunk_pairs < 1 or args.workers < 1 or args.threads < 1:
        parser.error("--games must be at least 2, --chunk-pairs, --workers and --threads at least 1")
    try:
        report = measure(args.model, args.opponent, kinds, args.games, args.seed, args.chunk_pairs, args.workers,
                         args.threads, args.substitute)
    except (ValueError, FileNotFoundError) as error:
        raise SystemExit(f"error: {error}") from None
    print(format_report(report))
    if args.json is not None:
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
