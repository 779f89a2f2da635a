"""How long ``bgtrain play``'s post-game analysis takes (it runs in the request that ends a game), and
the batched luck against a loop of one evaluation per roll.

    python scripts/bench_play_analysis.py [--model checkpoints/bgtrain-default.pt] [--seed 7] [--runs 3]

A whole game is played from the opening through ``bgtrain.web.game.Session``, the person's decisions
made by the clock at zero (the best play, 0-ply), the dice seeded. Then, ``--runs`` times each,
alternating: the analysis at 1-ply (the default: errors, luck, timeline, review), the luck of every
roll batched (``bgtrain.web.luck.roll_luck``: positions x 21 rolls in one evaluation), and the same
luck with one ``Evaluator.hint`` call per position and roll. Prints each median and the ratio, and a
signature (the game's plays and the sum of its rolls' luck, deterministic for a model and seed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bgtrain.values.evaluator import Evaluator
from bgtrain.web import analysis
from bgtrain.web.dice import SeededDice
from bgtrain.web.game import Session, Settings
from bgtrain.web.luck import roll_luck
from engine import kernels
from engine.dice import ALL_ROLLS, roll_weights


class StepClock:
    """A clock that jumps past every deadline: each ``tick`` makes the person's decision."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def play_game(evaluator: Evaluator, seed: int) -> Session:
    clock = StepClock()
    session = Session(evaluator, Settings(clock_seconds=1, clock_cube=True, analysis_ply=0), SeededDice(seed), clock)
    session.roll()
    while session.phase not in ("game_over", "match_over"):
        clock.now += 2
        session.tick()
    return session


def luck_one_roll_at_a_time(evaluator: Evaluator, boards, dice) -> list[float]:
    """The reference: each roll of each position valued by its own ``hint`` call."""
    weights = roll_weights().tolist()
    out = []
    for board, rolled in zip(boards, dice):
        tensor = torch.tensor([board], dtype=torch.int8)
        values = [evaluator.hint(tensor, torch.tensor([roll]), 0, 1, notation=False)[0][0].equity
                  for roll in ALL_ROLLS]
        average = sum(v * w for v, w in zip(values, weights))
        out.append(values[ALL_ROLLS.index((max(rolled), min(rolled)))] - average)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="checkpoints/bgtrain-default.pt")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    kernels.set_mode("never")  # as bgtrain play runs
    evaluator = Evaluator.from_path(args.model, bearoff=False)
    session = play_game(evaluator, args.seed)
    decisions = session.games[-1]["result"] and session.decisions
    moves = [d["move"] for d in decisions if d["kind"] == "move"][1:]  # the opening roll has no luck
    boards, dice = [m["before"] for m in moves], [m["dice"] for m in moves]

    times = {"analysis at 1-ply": [], "luck batched": [], "luck one roll at a time": []}
    for _ in range(args.runs):
        start = time.perf_counter()
        analysis.analyse_game(evaluator, [dict(d) for d in decisions], 1, session.settings.names)
        times["analysis at 1-ply"].append(time.perf_counter() - start)
        start = time.perf_counter()
        batched = roll_luck(evaluator, boards, dice)
        times["luck batched"].append(time.perf_counter() - start)
        start = time.perf_counter()
        looped = luck_one_roll_at_a_time(evaluator, boards, dice)
        times["luck one roll at a time"].append(time.perf_counter() - start)
    worst = max(abs(a - b) for a, b in zip(batched, looped))
    print(f"game: {len(decisions)} decisions, {len(moves)} rolls with luck, seed {args.seed}, {args.threads} thread(s)")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name}: median {medians[name]:.3f} s  ({', '.join(f'{v:.3f}' for v in values)})")
    print(f"luck: batched {medians['luck one roll at a time'] / medians['luck batched']:.1f}x faster than one roll "
          f"at a time; largest difference {worst:.2e}")
    print(f"signature: {' | '.join(m['play'] for m in moves[:6])} ... luck sum {sum(batched):+.6f}")


if __name__ == "__main__":
    main()
