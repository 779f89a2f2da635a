"""How far from perfect a hypergammon player is: its errors against GNU Backgammon's exact database.

    python scripts/bench_hypergammon_exact.py [--variant hypergammon] [--model SPEC] [--database PATH]
                                             [--games 200] [--seed 1] [--compare random,heuristic]
                                             [--threads 1] [--bellman 4000] [--json FILE]

The model (an agent spec, ``bgtrain.arena.specs``; by default ``shipped``, the variant's shipped model;
``PATH.pt:any-variant`` lets the 3-checker model play hypergammon1 and hypergammon2) plays ``--games``
games against itself, seeded, and every position of those games (side to move, game not over, with the
roll it was played with) is scored against the exact cubeless equities of ``hyperN.bd``
(``bgtrain.values.hypergammon``; the default lookup, or ``--database``):

(a) position equity: the model's cubeless equity of each position before its roll against the exact
    one, mean absolute error and RMS (agents that value positions: models and ``exact``);
(b) checker play: for each position and its roll, the exact equity lost by the agent's play against
    the best play, in millipoints per move (1 millipoint = 0.001 points of cubeless money equity, as GNU
    Backgammon's error rates), over every move and over the moves with a real choice (plays of different
    exact equity), with a 95% interval from the spread between games (moves of one game are not
    independent); and the fraction of those choices where the agent's play was not the best;
(c) the same for the ``--compare`` agents on the same positions and rolls, as a scale;
(d) how exact the database itself is: its Bellman residual (a position's value against the roll-weighted
    value of its best plays, valued by the file) on ``--bellman`` positions drawn uniformly from it,
    seeded. A finished ``makehyper`` run leaves it under makehyper's threshold; a file taken from an
    unfinished run's checkpoint (``hyperN.bd.tmp``) shows here how far from its fixed point it still is.

Prints a table and a signature (positions, moves with a choice, and the model's summed loss, fixed for a
given model, database and seed); ``--json FILE`` writes the figures. Positions are scored in batches:
one move generation and one database gather per batch, no per-position Python loop.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bgtrain.arena.cube_duel import cube_probabilities
from bgtrain.arena.specs import make_agent
from bgtrain.files import atomic_write
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.hypergammon import (
    VARIANT_CHECKERS,
    afterstate_equities,
    bellman_residuals,
    load_hypergammon_database,
    sampled_positions,
)
from engine.dice import RandomDice
from engine.game import new_games, play
from engine.movegen import legal_afterstates
from engine.state import State
from engine.variants import get_rules

BATCH = 8192  # positions per move generation while scoring
MAX_TURNS = 2000  # a bound on the lock-step loop: hypergammon games end long before (positions so far are kept)
BEST_TOLERANCE = 1e-6  # plays within this of the best exact equity count as best (the file holds 2^-24 steps)


def self_play_positions(agent, rules, games: int, seed: int):
    """Every position of ``games`` games the agent plays against itself: ``(board int8[P, 28], dice
    int8[P, 2], game int64[P])``, in lock step over the whole batch."""
    dice = RandomDice(seed)
    state = new_games(rules, games, dice)
    number = torch.arange(games)
    boards, rolls, game_of = [], [], []
    for _ in range(MAX_TURNS):
        live = ~state.game_over
        if not bool(live.any()):
            break
        boards.append(state.board[live])
        rolls.append(state.dice[live])
        game_of.append(number[live])
        afterstates = legal_afterstates(state.board, state.dice, rules)
        choice = agent.choose(state, afterstates)
        state = play(state, afterstates.select(choice), rules, dice)
    return torch.cat(boards), torch.cat(rolls), torch.cat(game_of)


def as_state(board: torch.Tensor, dice: torch.Tensor) -> State:
    """Positions with their rolls as a ``State`` for ``Agent.choose`` (seat and turn do not matter here)."""
    count = board.shape[0]
    zeros = torch.zeros(count, dtype=torch.int32)
    return State(board, dice, zeros.to(torch.int8), zeros, zeros.bool(), zeros.to(torch.int8))


def play_losses(agent, database, rules, board, dice):
    """Per position: the exact equity the agent's play loses against the best play (``float64[P]``, >= 0),
    and whether the roll offered plays of different exact equity (``bool[P]``)."""
    losses, choices = [], []
    for start in range(0, board.shape[0], BATCH):
        part_board, part_dice = board[start : start + BATCH], dice[start : start + BATCH]
        afterstates = legal_afterstates(part_board, part_dice, rules)
        values = afterstate_equities(database, afterstates.boards)
        count = part_board.shape[0]
        best = torch.full((count,), -math.inf, dtype=values.dtype).scatter_reduce(0, afterstates.position, values, "amax")
        worst = torch.full((count,), math.inf, dtype=values.dtype).scatter_reduce(0, afterstates.position, values, "amin")
        chosen = values[afterstates.offsets + agent.choose(as_state(part_board, part_dice), afterstates)]
        losses.append(best - chosen)
        choices.append(best - worst > BEST_TOLERANCE)
    return torch.cat(losses), torch.cat(choices)


def clustered_mean(values: torch.Tensor, game: torch.Tensor, games: int) -> tuple[float, float]:
    """The mean of ``values`` and its 95% half-interval, with the games as clusters (the ratio
    estimator's variance over per-game sums), since moves of one game are not independent."""
    count = values.numel()
    if count == 0:
        return float("nan"), float("nan")
    mean = float(values.mean())
    sums = torch.zeros(games, dtype=torch.float64).index_add_(0, game, values.double())
    sizes = torch.zeros(games, dtype=torch.float64).index_add_(0, game, torch.ones(count, dtype=torch.float64))
    used = sizes > 0
    clusters = int(used.sum())
    if clusters < 2:
        return mean, float("nan")
    residual = (sums - mean * sizes)[used]
    variance = clusters / (clusters - 1) * float((residual**2).sum()) / count**2
    return mean, 1.96 * math.sqrt(variance)


def equity_errors(agent, database, rules, board) -> dict | None:
    """Mean absolute and RMS error of the agent's cubeless equity of the positions, or None for agents
    that do not value positions."""
    probabilities = cube_probabilities(agent)
    if probabilities is None:
        return None
    estimated = torch.cat([cubeless_equity(probabilities(board[start : start + BATCH]).double(), rules)
                           for start in range(0, board.shape[0], BATCH)])
    error = estimated - database.equity(board)
    return {"mean_absolute": float(error.abs().mean()), "rms": float(error.pow(2).mean().sqrt()),
            "largest": float(error.abs().max()), "mean_signed": float(error.mean())}


def score(agent, database, rules, board, dice, game, games: int) -> dict:
    start = time.perf_counter()
    loss, choice = play_losses(agent, database, rules, board, dice)
    per_move, per_move_interval = clustered_mean(loss * 1000, game, games)
    per_choice, per_choice_interval = clustered_mean(loss[choice] * 1000, game[choice], games)
    not_best = (loss[choice] > BEST_TOLERANCE).double()
    not_best_rate, not_best_interval = clustered_mean(not_best, game[choice], games)
    return {
        "agent": agent.name,
        "moves": int(loss.numel()),
        "choices": int(choice.sum()),
        "millipoints_per_move": per_move,
        "millipoints_per_move_95": per_move_interval,
        "millipoints_per_choice": per_choice,
        "millipoints_per_choice_95": per_choice_interval,
        "not_best_fraction": not_best_rate,
        "not_best_fraction_95": not_best_interval,
        "summed_loss": float(loss.sum()),
        "equity_error": equity_errors(agent, database, rules, board),
        "seconds": round(time.perf_counter() - start, 2),
    }


def database_residual(database, samples: int, seed: int) -> dict | None:
    """The database's Bellman residual on ``samples`` drawn positions: mean, 99th percentile and largest."""
    if samples < 1:
        return None
    residual = bellman_residuals(database, sampled_positions(database, samples, seed))
    return {"positions": int(residual.numel()), "mean": float(residual.mean()),
            "p99": float(torch.quantile(residual, 0.99)), "largest": float(residual.max())}


def run(variant: str, model: str, database_path: str | None, games: int, seed: int, compare: list[str],
        bellman: int = 0) -> dict:
    rules = get_rules(variant)
    database = load_hypergammon_database(database_path, rules)
    residual = database_residual(database, bellman, seed)
    # A bare ``exact`` plays from the database scored against, wherever --database found it.
    model, *compare = [f"exact:{database.path}" if spec == "exact" else spec for spec in [model, *compare]]
    player = make_agent(model, rules, seed=seed)
    start = time.perf_counter()
    board, dice, game = self_play_positions(player, rules, games, seed)
    self_play_seconds = time.perf_counter() - start
    rows = [score(player, database, rules, board, dice, game, games)]
    for index, spec in enumerate(compare):
        rows.append(score(make_agent(spec, rules, seed=seed + 1 + index), database, rules, board, dice, game, games))
    return {"variant": variant, "database": str(database.path), "model": model, "games": games, "seed": seed,
            "positions": int(board.shape[0]), "self_play_seconds": round(self_play_seconds, 2), "agents": rows,
            "bellman_residual": residual}


def print_report(report: dict) -> None:
    print(f"{report['variant']}: {report['positions']:,} positions of {report['games']} games of {report['model']} "
          f"against itself (seed {report['seed']}, {report['self_play_seconds']:.1f} s), "
          f"scored against {report['database']}")
    print(f"{'agent':<48} {'mp/move':>16} {'mp/choice':>16} {'not best':>14} {'|eq err|':>9} {'eq RMS':>8}")
    for row in report["agents"]:
        errors = row["equity_error"]
        equity = f"{errors['mean_absolute']:9.4f} {errors['rms']:8.4f}" if errors else f"{'-':>9} {'-':>8}"
        if row["choices"]:
            choice = (f"{row['millipoints_per_choice']:8.2f} ± {row['millipoints_per_choice_95']:5.2f} "
                      f"{100 * row['not_best_fraction']:6.2f}% ± {100 * row['not_best_fraction_95']:4.2f}")
        else:
            choice = f"{'-':>16} {'-':>14}"  # no roll offered plays of different equity
        print(f"{row['agent']:<48} {row['millipoints_per_move']:8.2f} ± {row['millipoints_per_move_95']:5.2f} "
              f"{choice} {equity}")
    first = report["agents"][0]
    print(f"  moves {first['moves']:,}, with a choice {first['choices']:,}; mp = millipoints of cubeless money "
          "equity lost against the exact best play, 95% intervals over games")
    print(f"  signature: positions {report['positions']}, choices {first['choices']}, "
          f"model's summed loss {first['summed_loss']:.6f}")
    residual = report.get("bellman_residual")
    if residual:
        print(f"  database: Bellman residual on {residual['positions']:,} drawn positions: mean {residual['mean']:.1e}, "
              f"99th percentile {residual['p99']:.1e}, largest {residual['largest']:.1e} (points of equity)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="hypergammon", choices=tuple(VARIANT_CHECKERS))
    parser.add_argument("--model", default="shipped", help="agent spec of the player (default: the variant's shipped model)")
    parser.add_argument("--database", help="hyperN.bd (default: $BGTRAIN_HYPERGAMMON_DIR/hyperN.bd, else the cache)")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compare", default="random,heuristic", help="comma-separated agent specs scored as a scale")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--bellman", type=int, default=4000,
                        help="positions drawn to measure the database's Bellman residual (0: skip)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    if args.games < 1:
        parser.error("--games must be at least 1")
    if args.bellman < 0:
        parser.error("--bellman must be 0 or more")
    torch.set_num_threads(args.threads)
    compare = [spec.strip() for spec in args.compare.split(",") if spec.strip()]
    try:
        report = run(args.variant, args.model, args.database, args.games, args.seed, compare, args.bellman)
    except (ValueError, FileNotFoundError) as error:
        print(f"bench_hypergammon_exact: error: {error}", file=sys.stderr)
        return 2
    print_report(report)
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
