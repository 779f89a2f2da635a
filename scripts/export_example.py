"""The worked example of docs/export.md: export a model to ONNX, feed it the start position (and one
afterstate) with plain onnxruntime, and print the exact numbers in and out.

    python scripts/export_example.py [CKPT] [--seed 1] [--out example.onnx]

Without CKPT the model is an untrained tesauro198 network with 80 hidden units initialised from
``torch.manual_seed(--seed)`` (the one docs/export.md quotes; the numbers depend on torch's random
generator, so they are reproducible with the same torch version). The ONNX file is evaluated
through onnxruntime alone, as a program in another language would, and checked against PyTorch.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime
import torch

from bgtrain.export import export_checkpoint
from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.training.config import Config
from engine.board import flip_board
from engine.rules import STANDARD


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", nargs="?", help="a bgtrain checkpoint (default: a seeded untrained 198-80 net)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="keep the ONNX file here (default: a temporary file)")
    return parser.parse_args()


def seeded_checkpoint(seed: int, directory: Path) -> Path:
    torch.manual_seed(seed)
    network = ValueNetwork("tesauro198", [80], "sigmoid")
    payload = checkpoint_payload(network, Config(), STANDARD.name, code_version=f"untrained, torch.manual_seed({seed})")
    return save_checkpoint(directory / f"untrained-seed{seed}.pt", payload)


def show(title: str, board: np.ndarray, probabilities: np.ndarray, equity: float) -> None:
    print(title)
    print("  input  board int8[1, 28] =", "[" + ", ".join(str(int(v)) for v in board) + "]")
    names = ("WIN", "WIN_GAMMON", "WIN_BACKGAMMON", "LOSE_GAMMON", "LOSE_BACKGAMMON")
    print("  output probabilities =", ", ".join(f"{name} {value:.6f}" for name, value in zip(names, probabilities)))
    print(f"  output equity = {equity:+.6f}")


def main() -> None:
    args = parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as directory:
        checkpoint = Path(args.checkpoint) if args.checkpoint else seeded_checkpoint(args.seed, Path(directory))
        out = Path(args.out) if args.out else Path(directory) / "example.onnx"
        metadata = export_checkpoint(checkpoint, out, "onnx")
        print(f"model: {checkpoint.name}, {metadata['model']} ({metadata['bgtrain.code_version']})")

        session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        start = STANDARD.start_board()
        # The mover opens with 3-1 played 8/5 6/5; the afterstate, still from its side, goes to the
        # opponent, who is now to move: the model wants it flipped.
        after = start.clone()
        after[8] -= 1
        after[6] -= 1
        after[5] += 2
        boards = torch.stack((start, flip_board(after)))
        probabilities, equity = session.run(["probabilities", "equity"], {"board": boards.numpy()})

        show("Start position, side to move about to roll:", boards[0].numpy(), probabilities[0], float(equity[0]))
        show("After 3-1 played 8/5 6/5, flipped: the opponent to move:", boards[1].numpy(), probabilities[1],
             float(equity[1]))
        mover = (1.0 - probabilities[1, 0], *probabilities[1, [3, 4, 1, 2]])
        print("  the same outcomes for the player who moved (flip_outcomes):",
              ", ".join(f"{value:.6f}" for value in mover), f"equity {-float(equity[1]):+.6f}")

        network = load_model(checkpoint).model
        difference = float((network.evaluate(boards) - torch.from_numpy(probabilities)).abs().max())
        print(f"largest difference from ValueNetwork.evaluate: {difference:.1e}")


if __name__ == "__main__":
    main()
