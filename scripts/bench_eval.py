"""Evaluator benchmark: 0-ply evaluation throughput, 1- and 2-ply move-choice throughput, and the
strength that search adds (a model at 1 and 2 plies against itself at 0-ply).

    python scripts/bench_eval.py [--model PATH] [--threads 1] [--repeats 5] [--games 1000] [--json FILE]
                                 [--device cpu|cuda]

Bars (issue 4): 0-ply >= 1,000,000 positions/s batched with a 198-80 network on a 2-core CPU;
2-ply best-move choice >= 30 positions/s. Without ``--model`` (and without the shipped
``checkpoints/bgtrain-default.pt``) the speeds are measured on an untrained 198-80 network, whose
near-equal equities let the move filter keep the most candidates (the slowest case for 2-ply), and
the strength matches are skipped. Throughput figures are medians over ``--repeats`` runs, on
``--threads`` torch threads (default 1: two threads collapse on a machine other jobs share).

The signature line (equity sums over fixed seeded positions at 0 and 1 ply, and a checksum of the
2-ply choices) changes only when the model, the rules, the search or the bear-off values change.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from bgtrain.arena.duel import play_duel
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.evaluator import Evaluator, MoveFilter
from engine.movegen import legal_afterstates
from engine.random_play import sample_positions
from engine.rules import STANDARD

DEFAULT_MODEL = Path("checkpoints") / "bgtrain-default.pt"
DEVICE = torch.device("cpu")  # set by --device; every position set is made on it


def timed(function, repeats: int) -> tuple[float, object]:
    """Median seconds of ``repeats`` calls after one warm-up call, and the last result."""
    result = function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def zero_ply(evaluator: Evaluator, network: ValueNetwork, batch: int, repeats: int) -> dict:
    boards, _ = sample_positions(batch, seed=2024, device=DEVICE)
    seconds, _ = timed(lambda: evaluator.probabilities(boards, 0), repeats)
    network_seconds, _ = timed(lambda: network.evaluate(boards, STANDARD), repeats)
    return {"batch": batch, "positions_per_s": batch / seconds, "network_only_positions_per_s": batch / network_seconds}


def game_positions(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` positions with rolls from a pool of random-play games spanning whole games (a pool
    smaller than the 512 lock-step games would hold opening positions only)."""
    boards, dice = sample_positions(max(count, 20_000), seed=seed, device=DEVICE)
    return boards[:count], dice[:count]


def move_choice(evaluator: Evaluator, ply: int, count: int, repeats: int) -> dict:
    boards, dice = game_positions(count, seed=4048)
    afterstates = legal_afterstates(boards, dice, STANDARD)
    equity = cubeless_equity(evaluator.afterstate_probabilities(afterstates.boards, 0))
    searched = evaluator.filter_candidates(equity, afterstates)
    per_position = torch.zeros_like(afterstates.counts).index_add_(0, afterstates.position, searched.long())
    seconds, choice = timed(lambda: evaluator.best_moves(boards, dice, ply), repeats)
    return {
        "ply": ply,
        "positions": count,
        "positions_per_s": count / seconds,
        "mean_legal_moves": float(afterstates.counts.double().mean()),
        "mean_searched_candidates": float(per_position.double().mean()),
        "share_with_one_candidate": float((per_position <= 1).double().mean()),
        "choices": choice,
    }


def signature(evaluator: Evaluator) -> dict:
    boards, dice = game_positions(200, seed=99)
    return {
        "equity_sum_0ply_200": round(float(evaluator.equity(boards, 0).double().sum()), 4),
        "equity_sum_1ply_50": round(float(evaluator.equity(boards[:50], 1).double().sum()), 4),
        "choices_2ply_20": int((evaluator.best_moves(boards[:20], dice[:20], 2).cpu() * torch.arange(1, 21)).sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help=f"checkpoint (default {DEFAULT_MODEL} if present, else an untrained 198-80)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per throughput figure (median)")
    parser.add_argument("--batch", type=int, default=100_000, help="positions per 0-ply call")
    parser.add_argument("--positions", type=int, default=200, help="positions per 2-ply move-choice call")
    parser.add_argument("--games", type=int, default=1000, help="games per strength match (0: skip)")
    parser.add_argument("--max-ply", type=int, default=2, help="deepest ply in the strength matches")
    parser.add_argument("--keep", type=int, default=MoveFilter.keep, help="move filter: candidates kept")
    parser.add_argument("--threshold", type=float, default=MoveFilter.threshold, help="move filter: equity window")
    parser.add_argument("--deep-replies", action="store_true", help="inner replies by (n-1)-ply search, not 0-ply")
    parser.add_argument("--no-bearoff", action="store_true", help="without the bear-off database")
    parser.add_argument("--seed", type=int, default=0, help="dice seed of the strength matches")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--device", default="cpu", help="torch device: cpu or cuda (default cpu)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    global DEVICE
    DEVICE = torch.device(args.device)

    model = Path(args.model) if args.model else (DEFAULT_MODEL if DEFAULT_MODEL.is_file() else None)
    if model is not None:
        network = load_model(model).model
        model_name = str(model)
    else:
        torch.manual_seed(0)
        network = ValueNetwork("tesauro198", (80,)).eval()
        model_name = "untrained tesauro198-80 (seed 0)"
    network = network.to(DEVICE)
    move_filter = MoveFilter(args.keep, args.threshold)
    evaluator = Evaluator.from_network(network, STANDARD, bearoff=not args.no_bearoff, move_filter=move_filter,
                                       deep_replies=args.deep_replies)
    hidden = "-".join(str(size) for size in network.hidden_sizes)
    report = {
        "model": model_name,
        "network": f"{network.encoder.name} {network.encoder.size}-{hidden}",
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "move_filter": {"keep": move_filter.keep, "threshold": move_filter.threshold},
        "deep_replies": args.deep_replies,
        "bearoff": evaluator.bearoff is not None,
    }
    print(f"model: {model_name} ({report['network']}), {report['threads']} thread(s), torch {torch.__version__}")
    print(f"move filter: keep the best {move_filter.keep} within {move_filter.threshold} equity at 0-ply; "
          f"inner replies chosen at {'(n-1)' if args.deep_replies else '0'}-ply; "
          f"bear-off database {'on' if report['bearoff'] else 'off'}")

    row = zero_ply(evaluator, network, args.batch, args.repeats)
    report["zero_ply"] = row
    print(f"0-ply evaluation, batch {row['batch']:,}: {row['positions_per_s']:,.0f} positions/s "
          f"(network alone {row['network_only_positions_per_s']:,.0f}/s; bar 1,000,000/s)")

    report["move_choice"] = []
    for ply, count, repeats in ((1, args.positions * 5, args.repeats), (2, args.positions, max(1, args.repeats // 2))):
        row = move_choice(evaluator, ply, count, repeats)
        row.pop("choices")
        report["move_choice"].append(row)
        bar = " (bar 30/s)" if ply == 2 else ""
        print(f"{ply}-ply best move over {row['positions']} positions: {row['positions_per_s']:,.1f} positions/s{bar}; "
              f"{row['mean_legal_moves']:.1f} legal plays and {row['mean_searched_candidates']:.2f} searched "
              f"candidates per position, {row['share_with_one_candidate']:.0%} with a single candidate")

    report["signature"] = signature(evaluator)
    print("signature:", json.dumps(report["signature"]))

    report["strength"] = []
    if model is None:
        print("strength: skipped (an untrained network; pass --model PATH)")
    elif args.games > 0:
        zero = evaluator.agent(0, "0-ply")
        for ply in range(1, args.max_ply + 1):
            start = time.perf_counter()
            result = play_duel(evaluator.agent(ply, f"{ply}-ply"), zero, args.games, seed=args.seed, device=DEVICE)
            seconds = time.perf_counter() - start
            report["strength"].append({**result.as_dict(), "seconds": seconds})
            print(f"strength: {result.summary()} [{seconds:.0f} s]")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
