"""Speed of the GNU Backgammon-style contact inputs (``bgtrain.model.gnubg_inputs``) against the other encoders.

    python scripts/bench_gnubg_inputs.py [--batch 4096] [--repeats 5] [--threads 1]

Prints positions per second (median of the repeats) of each encoder's ``encode`` and of a 0-ply
``ValueNetwork.evaluate`` with 128 hidden units, on reachable positions, and a signature (the sum of the
GNU-style features), so that a change to what they compute shows up.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from bgtrain.model.encoding import ENCODERS
from bgtrain.model.gnubg_inputs import contact_features
from bgtrain.model.network import ValueNetwork
from engine.random_play import sample_positions
from engine.rules import STANDARD


def rate(function, boards: torch.Tensor, repeats: int) -> float:
    function(boards)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(boards)
        times.append(time.perf_counter() - start)
    return boards.shape[0] / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    boards, _ = sample_positions(args.batch, seed=1)
    print(f"signature: {float(contact_features(boards).double().sum()):.6f}")
    for name, encoder in ENCODERS.items():
        encode_rate = rate(lambda b, e=encoder: e.encode(b, STANDARD), boards, args.repeats)
        torch.manual_seed(0)
        network = ValueNetwork(name, (128,)).eval()
        evaluate_rate = rate(network.evaluate, boards, args.repeats)
        print(f"{name:14} encode {encode_rate:12,.0f} positions/s   0-ply evaluate {evaluate_rate:12,.0f} positions/s")


if __name__ == "__main__":
    main()
