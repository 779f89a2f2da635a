"""Play agent A against agent B and report A's points per game with a 95% interval.

    bgtrain bench A B --games N [--seed S] [--device D] [--json FILE] [--save-games DIR]
                      [--cube] [--match N] [--threads T]

Agents: ``random``, ``pubeval``, ``heuristic`` (rules of thumb for the variant), ``PATH.pt[:Nply]`` (a
checkpoint; ``:any-variant`` last for a variant it was not trained for), ``shipped[:Nply]`` (the
``--variant``'s shipped model), ``PATH.onnx[:Nply]`` (an export), ``gnubg:0ply|1ply|2ply`` (GNU
Backgammon, after ``pip install gnubg-nn``), ``exact[:PATH]`` (perfect hypergammon from GNU's
``hyperN.bd``); see ``bgtrain.arena.specs``.

By default: cubeless money games, gammons and backgammons counted. Every dice sequence is played twice
with the seats swapped (``bgtrain.arena.duel``), so N is rounded up to even and the interval is over
the N/2 pair means. The pairs are played in chunks of ``--batch-pairs``, each a seeded unit of work
(``bgtrain.distributed.duels``): pair i's dice depend on (seed, i) alone, so ``--executor ray`` on a
cluster gives the same result as this process, and ``--work-dir DIR`` resumes a killed run. Printed: A's points per game with its 95% interval, the win, gammon and backgammon
rates of both sides, and games per second. ``--json FILE`` writes the same as one JSON object.
``--save-games DIR`` also writes every game as Jellyfish ``.mat`` files (``bgtrain.matfile``) that GNU
Backgammon and eXtreme Gammon import (this costs about 20 ms per game): money sessions of 100 games
per file, or one file per match. Money games count gammons without a cube turn: in GNU Backgammon,
``set jacoby off`` before ``import mat``.

``--cube`` (cubeful money play, no Jacoby rule) and ``--match N`` (N-point matches with the Crawford
rule; then ``--games`` counts matches) decide cube actions with ``bgtrain.cube`` from each agent's own
outcome probabilities (``bgtrain.arena.cube_duel``); pubeval and random never double and always take. Printed
then: A's points per game with the cube (money) or share of matches won, each with a 95% interval,
win and gammon rates, doubles and passes per game.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from bgtrain.arena.duel import DuelResult
from bgtrain.arena.specs import SPEC_FORMS, make_agent
from bgtrain.commands import (
    add_device,
    add_json_file,
    add_seed,
    add_threads,
    add_variant,
    apply_threads,
    positive_int,
)
from bgtrain.distributed.duels import play_duel_chunked
from bgtrain.distributed.executor import add_executor_arguments, executor_from_args
from bgtrain.files import atomic_write, check_output_directory, check_output_file
from engine.variants import get_rules


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent_a", metavar="A", help="agent whose points per game are reported: " + "; ".join(SPEC_FORMS))
    parser.add_argument("agent_b", metavar="B", help="its opponent (same forms)")
    parser.add_argument("--games", type=positive_int, default=2000, help="games to play, rounded up to even (default 2000)")
    add_seed(parser, help="dice seed (default 0); the same seed gives the same dice")
    add_device(parser)
    add_json_file(parser)
    parser.add_argument("--save-games", metavar="DIR", help="write every game as Jellyfish .mat files into DIR")
    parser.add_argument("--cube", action="store_true", help="cubeful money play (default: cubeless)")
    parser.add_argument("--match", type=positive_int, metavar="N", help="play N-point matches with the Crawford rule")
    parser.add_argument("--batch-pairs", type=positive_int,
                        help="seat-swapped pairs per chunk, each a seeded unit of work played in lock step "
                        "(default: 2048, fewer on Ray so that every worker gets a chunk)")
    add_threads(parser)
    add_variant(parser)
    add_executor_arguments(parser)


def _report(mode: str, result, args: argparse.Namespace, device: torch.device, seconds: float) -> dict:
    """The JSON report of a bench run: the result's fields and how it was run."""
    return {
        "mode": mode,
        **result.as_dict(),
        "seed": args.seed,
        "device": str(device),
        "executor": getattr(args, "executor", "process"),
        "threads": torch.get_num_threads(),
        "seconds": round(seconds, 3),
        "games_per_second": round(result.games / max(seconds, 1e-9), 1),
    }


def _rate(value: float) -> str:
    return f"{100 * value:5.1f}%"


def format_result(result: DuelResult, seconds: float) -> str:
    width = max(len(result.agent_a), len(result.agent_b), 5)
    lines = [
        (f"{result.agent_a} vs {result.agent_b}: {result.games:,} cubeless money games "
         f"({result.games // 2:,} seat-swapped pairs)"),
        f"  {result.agent_a}: {result.points_per_game:+.3f} ± {result.interval95:.3f} points per game (95%)",
        f"  {'':<{width}}   wins  gammons  backgammons   (fractions of all games)",
        f"  {result.agent_a:<{width}}  {_rate(result.a_win)}  {_rate(result.a_gammon)}    {_rate(result.a_backgammon)}",
        f"  {result.agent_b:<{width}}  {_rate(result.b_win)}  {_rate(result.b_gammon)}    {_rate(result.b_backgammon)}",
        f"  {result.games:,} games in {seconds:.1f} s: {games_per_second(result.games, seconds)} games/s",
    ]
    return "\n".join(lines)


def games_per_second(games: int, seconds: float) -> str:
    """A rate with three significant figures at most and no exponent (0.39, 16.2, 1,234): a slow model's
    rate is not rounded to 0."""
    rate = games / max(seconds, 1e-9)
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def format_cubeful(result, seconds: float) -> str:
    if result.match_length:
        head = (f"{result.agent_a} vs {result.agent_b}: {result.units:,} {result.match_length}-point matches "
                f"({result.units // 2:,} seat-swapped pairs), {result.games:,} games")
        main = (f"  {result.agent_a} wins {100 * result.match_win:.1f}% ± {100 * result.interval95:.1f}% of the "
                f"matches (95%); {result.points_per_game:+.3f} points per game")
    else:
        head = (f"{result.agent_a} vs {result.agent_b}: {result.games:,} cubeful money games "
                f"({result.games // 2:,} seat-swapped pairs)")
        main = f"  {result.agent_a}: {result.points_per_game:+.3f} ± {result.interval95:.3f} points per game (95%)"
    width = max(len(result.agent_a), len(result.agent_b), 5)
    return "\n".join([
        head,
        main,
        f"  {'':<{width}}   wins  gammons   (fractions of all games; a pass counts as a single win)",
        f"  {result.agent_a:<{width}}  {_rate(result.a_win)}  {_rate(result.a_gammon)}",
        f"  {result.agent_b:<{width}}  {_rate(result.b_win)}  {_rate(result.b_gammon)}",
        f"  doubles per game {result.doubles_per_game:.3f}, passes per game {result.drops_per_game:.3f}",
        f"  {result.games:,} games in {seconds:.1f} s: {games_per_second(result.games, seconds)} games/s",
    ])


def run_cubeful(args: argparse.Namespace) -> int:
    """``--cube`` and ``--match N``: cube decisions by ``bgtrain.cube`` (see ``bgtrain.arena.cube_duel``);
    ``--games`` counts games for money play and matches with ``--match``."""
    from bgtrain.arena.cube_duel import CubeDuelRecords, play_cube_duel

    device = torch.device(args.device)
    rules = get_rules(args.variant)
    agent_a = make_agent(args.agent_a, rules, device, seed=args.seed)
    agent_b = make_agent(args.agent_b, rules, device, seed=args.seed + 1)
    records = CubeDuelRecords() if args.save_games else None
    match_length = args.match or 0
    start = time.perf_counter()
    result, raw = play_cube_duel(agent_a, agent_b, args.games, args.seed, rules, device, match_length, records)
    seconds = time.perf_counter() - start
    print(format_cubeful(result, seconds))
    report = _report(f"match_{match_length}" if match_length else "money_cubeful", result, args, device, seconds)
    if records is not None:
        from bgtrain.matfile import save_cubeful_games

        paths = save_cubeful_games(args.save_games, records, raw["a_seat"], match_length, result.agent_a,
                                   result.agent_b, rules)
        report["saved_games"] = [str(path) for path in paths]
        print(f"  wrote {result.games:,} games to {len(paths)} .mat file(s) in {args.save_games}")
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
    return 0


def _check(args: argparse.Namespace) -> None:
    """What can be checked before any game: the options and the output paths."""
    if args.cube and args.match is not None:
        raise ValueError("--cube is for money play; matches (--match N) always use the cube")
    if args.json:
        check_output_file(args.json, "--json")
    if args.save_games:
        check_output_directory(args.save_games, "--save-games")
        # A second run would overwrite the first one's games_0001.mat, ...: a new directory for each run.
        earlier = sorted(path.name for pattern in ("games_*.mat", "match_*.mat") for path in Path(args.save_games).glob(pattern))
        if earlier:
            raise ValueError(f"--save-games {args.save_games}: already holds the games of an earlier run "
                             f"({earlier[0]}{f' and {len(earlier) - 1} more' if len(earlier) > 1 else ''}); "
                             "give a new directory, or remove those files")
    if (args.cube or args.match is not None) and (args.executor != "process" or args.work_dir):
        raise ValueError("--cube and --match play in this process: leave out --executor ray and --work-dir")


def run(args: argparse.Namespace) -> int:
    _check(args)
    apply_threads(args)
    if args.cube or args.match is not None:
        return run_cubeful(args)
    device = torch.device(args.device)
    rules = get_rules(args.variant)
    history = [] if args.save_games else None
    executor = executor_from_args(args)
    start = time.perf_counter()
    try:
        result = play_duel_chunked(args.agent_a, args.agent_b, args.games, args.seed, rules.name, executor,
                                   args.batch_pairs, args.work_dir, history)
    finally:
        executor.close()
    seconds = time.perf_counter() - start
    print(format_result(result, seconds))
    report = _report("money_cubeless", result, args, device, seconds)
    if history is not None:
        from bgtrain.matfile import save_games

        paths = save_games(args.save_games, history, result.agent_a, result.agent_b, rules)
        report["saved_games"] = [str(path) for path in paths]
        print(f"  wrote {len(history):,} games to {len(paths)} .mat file(s) in {args.save_games}")
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
    sys.stdout.flush()
    return 0
