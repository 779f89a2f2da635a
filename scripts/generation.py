"""One generation of supervised training: generate -> label -> train -> benchmark.

    python scripts/generation.py --config configs/supervised_gen1.toml --model checkpoints/bgtrain-plus.pt \
        --positions 40000 [--labeller ply:1] [--seed 1] [--games 2000] [--opponents pubeval gnubg:0ply]

Each step is one of the ordinary commands, run in turn (each resumes where it stopped, so the script can
be rerun after a kill): ``bgtrain dataset generate`` into every directory of the config's
``[supervised] datasets`` not yet complete (the first with ``--seed``, the next with ``--seed + 1``...,
``--positions`` each), ``bgtrain train --config`` (supervised), then ``bgtrain bench`` of the final model
against each opponent, seat-swapped, with the 95% interval. The commands are printed before they run.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path


def run(command: list[str]) -> None:
    print("$ " + " ".join(shlex.quote(part) for part in command), flush=True)
    subprocess.run(command, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True)
    parser.add_argument("--model", default="checkpoints/bgtrain-plus.pt", help="self-play and labelling model")
    parser.add_argument("--positions", type=int, default=40_000, help="positions per dataset")
    parser.add_argument("--labeller", default="ply:1")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--games", type=int, default=2000, help="benchmark games per opponent")
    parser.add_argument("--opponents", nargs="*", default=["pubeval", "gnubg:0ply"])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    config = tomllib.loads(Path(args.config).read_text())
    cli = [sys.executable, "-m", "bgtrain.cli"]
    threads = ["--threads", str(args.threads)]
    for offset, dataset in enumerate(config["supervised"]["datasets"]):
        manifest = Path(dataset) / "manifest.json"
        if manifest.exists() and json.loads(manifest.read_text())["positions"] >= args.positions:
            print(f"{dataset}: complete")
            continue
        run([*cli, "dataset", "generate", "--model", args.model, "--out", dataset, "--positions",
             str(args.positions), "--seed", str(args.seed + offset), "--labeller", args.labeller, *threads])
    run([*cli, "train", "--config", args.config, *threads])
    final = Path(config.get("run", {}).get("out_dir", "runs")) / config["run"]["name"] / "final.pt"
    for opponent in args.opponents:
        run([*cli, "bench", str(final), opponent, "--games", str(args.games), "--seed", "1", *threads])
    return 0


if __name__ == "__main__":
    sys.exit(main())
