"""Engine benchmark: legal-move generation and random self-play throughput, the ratio to the
reference implementation, and a deterministic signature of the rules.

    python scripts/bench_engine.py [--device cpu|cuda] [--repeats 5] [--json FILE]

Figures are medians over ``--repeats`` runs. The signature (distinct afterstates over a fixed
seeded position set x 21 rolls, and a fixed-seed self-play checksum) changes if and only if the
rules the engine plays change, so compare it across commits.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from engine import kernels
from engine.dice import ALL_ROLLS, RandomDice
from engine.game import new_games, play, restart_finished
from engine.movegen import legal_afterstates
from engine.random_play import random_choice, sample_positions
from engine.reference import reference_afterstates
from engine.rules import STANDARD


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(function, device: torch.device, repeats: int) -> tuple[float, object]:
    """Median seconds of ``repeats`` calls (after one warm-up call), and the last result."""
    result = function()
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        result = function()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def movegen_throughput(boards, dice, batch: int, device, repeats: int) -> dict:
    board, roll = boards[:batch], dice[:batch]
    seconds, afterstates = timed(lambda: legal_afterstates(board, roll), device, repeats)
    return {
        "batch": batch,
        "positions_per_s": batch / seconds,
        "afterstates_per_s": afterstates.total / seconds,
    }


def random_selfplay(batch: int, turns: int, device, repeats: int, seed: int = 0, warmup_turns: int = 150) -> dict:
    """Lock-step random games, finished games restarting in their slots; completed games per second
    in the steady state. Untimed warm-up turns first fill the slots with games at every stage (a
    random game lasts about 95 turns), so the figure is not diluted by the first games' ramp-up,
    when no slot has finished yet."""
    dice = RandomDice(seed, device)
    generator = torch.Generator(device=device).manual_seed(seed + 1)
    state = new_games(STANDARD, batch, dice, device)

    def run(count: int) -> int:
        nonlocal state
        completed = torch.zeros((), dtype=torch.int64, device=device)
        for _ in range(count):
            afterstates = legal_afterstates(state.board, state.dice)
            state = play(state, afterstates.select(random_choice(afterstates, generator)), STANDARD, dice)
            completed += state.game_over.sum()
            state = restart_finished(state, STANDARD, dice)
        return int(completed)

    run(warmup_turns)
    seconds, completed = timed(lambda: run(turns), device, repeats)
    return {"batch": batch, "turns": turns, "games": completed, "games_per_s": completed / seconds}


def reference_ratio(boards, dice, count: int, device, repeats: int) -> dict:
    """The batched engine against the scalar reference on the same ``count`` positions."""
    board_list = boards[:count].cpu().tolist()
    dice_list = dice[:count].cpu().tolist()
    start = time.perf_counter()
    for board, roll in zip(board_list, dice_list):
        reference_afterstates(board, tuple(roll))
    reference_seconds = time.perf_counter() - start
    seconds, _ = timed(lambda: legal_afterstates(boards[:count], dice[:count]), device, repeats)
    return {
        "positions": count,
        "reference_positions_per_s": count / reference_seconds,
        "batched_positions_per_s": count / seconds,
        "ratio": reference_seconds / seconds,
    }


def signature(device) -> dict:
    """Rules fingerprint: distinct afterstates over 1,000 seeded positions x all 21 rolls, and the
    total result and turn count of 1,000 fixed-seed random games."""
    boards, _ = sample_positions(1000, seed=12345, device=device)
    total = 0
    for roll in ALL_ROLLS:
        dice = torch.tensor(roll, dtype=torch.int8, device=device).expand(boards.shape[0], 2)
        total += legal_afterstates(boards, dice).total
    dice = RandomDice(777, device)
    generator = torch.Generator(device=device).manual_seed(778)
    state = new_games(STANDARD, 1000, dice, device)
    while not bool(state.game_over.all()):
        afterstates = legal_afterstates(state.board, state.dice)
        state = play(state, afterstates.select(random_choice(afterstates, generator)), STANDARD, dice)
    return {
        "perft_1000x21": total,
        "selfplay_1000_points_seat0": int(state.result.sum()),
        "selfplay_1000_turns": int(state.turn.sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batches", default=None, help="comma-separated batch sizes")
    parser.add_argument("--selfplay-turns", type=int, default=200)
    parser.add_argument("--reference-positions", type=int, default=2000)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    device = torch.device(args.device)
    batches = [int(b) for b in args.batches.split(",")] if args.batches else (
        [1, 64, 1024, 8192] + ([32768, 131072] if device.type == "cuda" else [])
    )
    # Sampling plays hundreds of untimed batched turns, so the engine's kernels are hot (compiled on
    # the CPU, engine.kernels) before anything is timed.
    boards, dice = sample_positions(max(batches), seed=2024, device=device)
    report = {"device": str(device), "threads": torch.get_num_threads(), "torch": torch.__version__,
              "compile": kernels.describe()}
    print(f"{device}, {report['threads']} threads, torch {torch.__version__}, engine kernels: {report['compile']}")

    print(f"legal-move generation ({device}, median of {args.repeats}):")
    report["movegen"] = []
    for batch in batches:
        row = movegen_throughput(boards, dice, batch, device, args.repeats)
        report["movegen"].append(row)
        print(f"  batch {batch:>7}: {row['positions_per_s']:>12,.0f} positions/s "
              f"{row['afterstates_per_s']:>14,.0f} afterstates/s")

    print("random self-play, lock-step, finished games restart in their slots (steady state):")
    report["selfplay"] = []
    for batch in [b for b in batches if b >= 64]:
        row = random_selfplay(batch, args.selfplay_turns, device, max(1, args.repeats // 2))
        report["selfplay"].append(row)
        print(f"  batch {batch:>7}: {row['games_per_s']:>10,.0f} games/s ({row['games']} games in {row['turns']} turns)")

    row = reference_ratio(boards, dice, args.reference_positions, device, args.repeats)
    report["reference"] = row
    print(f"reference ({row['positions']} positions): {row['reference_positions_per_s']:,.0f} positions/s; "
          f"batched {row['batched_positions_per_s']:,.0f} positions/s; ratio {row['ratio']:.1f}x")

    report["signature"] = signature(device)
    print("signature:", json.dumps(report["signature"]))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
