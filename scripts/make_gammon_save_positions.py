"""Race positions where a gammon is at stake, as a dataset for ``bgtrain dataset relabel`` to label.

    python scripts/make_gammon_save_positions.py --out DIR --positions N [--seed K] [--model M]
    bgtrain dataset relabel DIR --out LABELLED --model M --labeller ply:2

Why: two thirds of the default model's race error on the benchmark is in saving the gammon (``bgtrain
benchmark ... --class race --by-stage``), and self-play between strong players rarely reaches those
positions, so its datasets hold few. These are drawn directly, seeded:

* the finishing side has 1 to 14 checkers left, all on its home board (lower points likelier: weights
  2.0 on its 1-point down to 1.0 on its 6-point), the rest borne off;
* the saving side has all 15 on the board, 1 to 6 of them outside its home board, on its points 7 to 18
  (7 plus a geometric number of pips, p = 0.25, at most 11), the others on its home board (its 6-point
  likeliest: weights 1.0 on the 1-point up to 2.0 on the 6-point). Its checkers are all below the
  finishing side's home board, so there is no contact: every position is a race;
* every second position is seen from the finishing side (the positions after the saving side's plays).

The labels written are ``--model``'s 0-ply values (``targets`` and ``zero_ply``), for ``relabel`` to
replace; the manifest says so and records the settings. Shards are written atomically; a rerun writes the
same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from bgtrain.datasets.shards import MANIFEST, MANIFEST_FORMAT, write_manifest, write_shard
from bgtrain.model.loading import load_model
from engine.board import flip_board
from engine.position_kinds import PositionKind, phase_kinds, position_kinds

SHARD_SIZE = 5000
MAX_OUTSIDE = 6  # the saving side's checkers outside its home board: 1 .. MAX_OUTSIDE
FARTHEST_POINT = 18  # the farthest point they stand on: below the finishing side's home board (19 .. 24)
HOME_WEIGHTS = (1.0, 1.2, 1.4, 1.6, 1.8, 2.0)  # the saving side's home points 1 .. 6
FINISHING_WEIGHTS = (2.0, 1.8, 1.6, 1.4, 1.2, 1.0)  # the finishing side's home points 1 .. 6


def place(board: torch.Tensor, counts: torch.Tensor, columns: torch.Tensor, sign: int) -> None:
    """Add ``sign`` to ``board[row, columns[row, slot]]`` for the first ``counts[row]`` slots of each row."""
    for slot in range(columns.shape[1]):
        live = counts > slot
        board[live, columns[live, slot]] += sign


def gammon_save_positions(count: int, seed: int) -> torch.Tensor:
    """``count`` race positions as the module docstring draws them: ``int8[count, 28]``."""
    generator = torch.Generator().manual_seed(seed)
    board = torch.zeros(count, 28, dtype=torch.int8)
    outside = torch.randint(1, MAX_OUTSIDE + 1, (count,), generator=generator)
    uniform = torch.rand(count, MAX_OUTSIDE, generator=generator)
    pips = torch.floor(torch.log1p(-uniform) / torch.log(torch.tensor(0.75))).long()  # geometric, p = 0.25
    place(board, outside, 7 + pips.clamp(max=FARTHEST_POINT - 7), 1)
    home = torch.multinomial(torch.tensor(HOME_WEIGHTS).expand(count, 6), 15, replacement=True, generator=generator)
    place(board, 15 - outside, 1 + home, 1)
    left = torch.randint(1, 15, (count,), generator=generator)
    finishing = torch.multinomial(torch.tensor(FINISHING_WEIGHTS).expand(count, 6), 14, replacement=True,
                                  generator=generator)
    place(board, left, 24 - finishing, -1)  # the finishing side's point p is the board's column 25 - p
    seen_from_finishing = torch.arange(count) % 2 == 1
    board[seen_from_finishing] = flip_board(board[seen_from_finishing])
    return board


def write_dataset(out: Path, board: torch.Tensor, model_path: str, seed: int) -> None:
    network = load_model(model_path).model
    with torch.no_grad():
        values = network.evaluate(board).float()
    shards = []
    for index, start in enumerate(range(0, board.shape[0], SHARD_SIZE)):
        rows = slice(start, start + SHARD_SIZE)
        part = board[rows]
        tensors = {"positions": part, "targets": values[rows], "standard_errors": torch.zeros_like(values[rows]),
                   "zero_ply": values[rows], "kinds": torch.full((part.shape[0],), int(PositionKind.RACE), dtype=torch.int8)}
        entry = write_shard(out, index, tensors)
        shards.append({**entry, "candidates": entry["positions"], "label_seconds": 0.0, "seconds": 0.0})
    write_manifest(out, {
        "format": MANIFEST_FORMAT, "format_version": 1, "rules": "backgammon", "seed": seed,
        "labeller": {"kind": "ply", "model": model_path, "ply": 0}, "source_model": model_path,
        "settings": {"drawn_by": "scripts/make_gammon_save_positions.py", "positions": board.shape[0], "seed": seed,
                     "max_outside": MAX_OUTSIDE, "farthest_point": FARTHEST_POINT},
        "shard_size": SHARD_SIZE, "shards_planned": len(shards), "shards": shards,
    })


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the dataset directory to write")
    parser.add_argument("--positions", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="checkpoints/bgtrain-distilled.pt", help="model of the 0-ply labels")
    args = parser.parse_args()
    if args.positions < 1:
        parser.error("--positions must be at least 1")
    out = Path(args.out)
    if (out / MANIFEST).exists():
        print(f"make_gammon_save_positions: error: {out} already holds a dataset", file=sys.stderr)
        return 2
    board = gammon_save_positions(args.positions, args.seed)
    kinds = phase_kinds(position_kinds(board))
    if not bool((kinds == PositionKind.RACE).all()):  # the drawing keeps the sides apart: a bug otherwise
        raise AssertionError("a drawn position is not a race")
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_dataset(out, board, args.model, args.seed)
    except (ValueError, FileNotFoundError) as error:
        print(f"make_gammon_save_positions: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {board.shape[0]:,} race positions to {out} (labels: {args.model} at 0-ply, for relabel)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
