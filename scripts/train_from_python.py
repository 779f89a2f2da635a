"""Train, benchmark and export a bot from Python, through bgtrain's public names only.

    python scripts/train_from_python.py [--games 20000] [--out runs] [--bench-games 2000]

Loads ``configs/quick.toml``, replaces fields in code (``dataclasses.replace`` on the frozen config),
trains (``bgtrain.commands.train.train``), plays the final network against pubeval at 0-ply
(``bgtrain.arena.duel.play_duel``), and exports it to ONNX (``bgtrain.export.export_checkpoint``).
Prints the checkpoint, the benchmark result and the exported file.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from bgtrain.arena.agents import GreedyValueAgent, PubevalAgent
from bgtrain.arena.duel import play_duel
from bgtrain.commands.train import train
from bgtrain.export import export_checkpoint
from bgtrain.model.loading import load_model
from bgtrain.training.config import load_config
from engine.rules import STANDARD

QUICK = Path(__file__).resolve().parent.parent / "configs" / "quick.toml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20_000, help="training games (default 20,000)")
    parser.add_argument("--out", default="runs", help="parent of the run directory (default runs/)")
    parser.add_argument("--bench-games", type=int, default=2000, help="games against pubeval (default 2000)")
    parser.add_argument("--no-export", action="store_true", help="skip the ONNX export (needs bgtrain[onnx])")
    args = parser.parse_args(argv)

    # A config in code: the quick recipe, with a few fields replaced.
    config = load_config(QUICK)
    config = replace(
        config,
        run=replace(config.run, name="from_python", out_dir=args.out),
        model=replace(config.model, hidden=(40,)),
        train=replace(config.train, total_games=args.games),
        evaluation=replace(config.evaluation, every_games=0, games=200),  # one check, at the end
        checkpoint=replace(config.checkpoint, every_games=0, every_seconds=0.0),
    )
    final = train(config, progress=False, argv=["scripts/train_from_python.py"])
    print(f"trained {config.train.total_games:,} games: {final}")

    network = load_model(final).model
    agent = GreedyValueAgent.from_network(network, "from_python", STANDARD)
    result = play_duel(agent, PubevalAgent(STANDARD), args.bench_games, seed=11)
    print(result.summary())

    if not args.no_export:
        exported = final.with_suffix(".onnx")
        export_checkpoint(final, exported, "onnx")
        print(f"exported {exported}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
