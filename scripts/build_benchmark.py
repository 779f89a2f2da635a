"""Build the move-error benchmark: decisions from noisy self-play, labelled by GNU Backgammon 2-ply.

    python scripts/build_benchmark.py --seed 1 --out bgtrain/data/benchmark/gnubg-2ply --work runs/benchmark-work

Steps (``bgtrain.benchmark.sampling`` and ``labelling`` hold the rules):

1. a pool of decisions from self-play between the shipped checkpoints and GNU Backgammon 0-ply, with
   random moves mixed in; per class a mix of plain and disputed decisions (where the probe agents
   choose different plays) is chosen; written to ``WORK/selected.npz``;
2. the chosen decisions are labelled in shards (``WORK/shard_000.npz``, ...), each written
   atomically: a killed build resumes where it stopped, skipping the shards it has;
3. the shards are joined into ``OUT/benchmark.npz`` and ``OUT/manifest.json`` records the reference,
   the settings, the counts per class, the seed and the content hash.

Needs ``pip install gnubg-nn``. One process; ``--threads 1`` by default.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bgtrain.arena.specs import make_agent
from bgtrain.benchmark.decisions import (
    CLASSES,
    DISPUTED,
    SELF_PLAY,
    SOURCES,
    DecisionSet,
    classes_of,
    concatenate,
    content_hash,
    load_npz,
    save_decisions,
    write_manifest,
)
from bgtrain.benchmark.labelling import GnubgReference, label_decisions
from bgtrain.benchmark.sampling import choose_decisions, disputed, repeated, self_play_pool
from bgtrain.files import atomic_write
from engine.position_kinds import PHASES, phase_positions


@dataclass(frozen=True)
class BuildSettings:
    contact: int = 4000  # decisions per class
    crashed: int = 1200
    race: int = 2000
    disputed_fraction: float = 0.5  # of each class, chosen where the probes disagree
    pool_factor: float = 2.5  # the self-play pool holds this many times the decisions wanted
    record_rate: tuple[float, float, float] = (0.06, 0.5, 0.15)  # chance a decision is recorded, per class
    noise_rates: tuple[float, ...] = (0.0, 0.03, 0.1, 0.25)  # random-move rates, one drawn per game
    games_in_parallel: int = 512
    players: tuple[str, ...] = ("checkpoints/bgtrain-default.pt", "checkpoints/bgtrain-plus.pt", "gnubg:0ply")
    probes: tuple[str, ...] = (
        "checkpoints/bgtrain-default.pt", "checkpoints/bgtrain-plus.pt", "checkpoints/bgtrain-plus.pt:1ply",
        "gnubg:0ply",
    )
    reference_ply: int = 2
    max_candidates: int = 10
    threshold: float = 0.3  # candidates lie within this much equity of the best at GNU 0-ply
    shard_size: int = 300

    @property
    def wanted(self) -> tuple[int, int, int]:
        return (self.contact, self.crashed, self.race)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def select(settings: BuildSettings, seed: int, path: Path) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The chosen decisions ``(board, dice, source)``: read from ``path`` when a run made them already."""
    if path.is_file():
        with np.load(path) as data:
            return tuple(torch.from_numpy(data[name]) for name in ("board", "dice", "source"))
    players = [make_agent(spec, seed=seed) for spec in settings.players]
    pairs = [(a, b) for i, a in enumerate(players) for b in players[i:]]
    pool_wanted = [round(count * settings.pool_factor) for count in settings.wanted]
    log(f"self-play pool: {dict(zip(CLASSES, pool_wanted))} decisions wanted")
    board, dice = self_play_pool(pairs, pool_wanted, settings.record_rate, settings.noise_rates, seed,
                                 settings.games_in_parallel)
    kind = phase_positions(classes_of(board))
    log(f"pool: {dict(zip(CLASSES, torch.bincount(kind, minlength=3).tolist()))}; probing {settings.probes}")
    probes = [make_agent(spec, seed=seed) for spec in settings.probes]
    hard = disputed(probes, board, dice)
    log(f"disputed in the pool: {dict(zip(CLASSES, torch.bincount(kind[hard], minlength=3).tolist()))}")
    is_repeat = repeated(board, dice)
    log(f"{int(is_repeat.sum())} repeated decisions in the pool left out")
    index, as_disputed = choose_decisions(kind, hard, settings.wanted, settings.disputed_fraction, seed, is_repeat)
    source = torch.where(as_disputed, DISPUTED, SELF_PLAY).to(torch.int8)
    chosen = (board[index], dice[index], source)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, board=chosen[0].numpy(), dice=chosen[1].numpy(), source=chosen[2].numpy())
    atomic_write(path, buffer.getvalue())
    return chosen


def decision_key(board: torch.Tensor, dice: torch.Tensor) -> bytes:
    return board.to(torch.int8).numpy().tobytes() + dice.to(torch.int8).numpy().tobytes()


def known_labels(directory: Path) -> dict[bytes, DecisionSet]:
    """The labelled decisions in the shards of an earlier build's work directory, by position and roll."""
    known = {}
    for path in sorted(directory.glob("shard_*.npz")):
        part = load_npz(path)
        for index in range(len(part)):
            known[decision_key(part.board[index], part.dice[index])] = part.select(torch.tensor([index]))
    log(f"{len(known)} labelled decisions to reuse from {directory}")
    return known


def label_shard(board, dice, source, reference: GnubgReference, settings: BuildSettings,
                known: dict[bytes, DecisionSet]) -> DecisionSet:
    """The shard's decisions labelled; those in ``known`` (the same reference and settings: labels are
    a function of position, roll and settings alone) are taken from there."""
    keys = [decision_key(board[index], dice[index]) for index in range(board.shape[0])]
    missing = torch.tensor([index for index, key in enumerate(keys) if key not in known], dtype=torch.int64)
    fresh = None
    if missing.numel():
        fresh = label_decisions(board[missing], dice[missing], source[missing], reference, settings.reference_ply,
                                settings.max_candidates, settings.threshold)
    pieces, next_fresh = [], 0
    for key in keys:
        if key in known:
            pieces.append(known[key])
        else:
            pieces.append(fresh.select(torch.tensor([next_fresh])))
            next_fresh += 1
    return dataclasses.replace(concatenate(pieces), source=source.to(torch.int8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bgtrain/data/benchmark/gnubg-2ply"))
    parser.add_argument("--work", type=Path, default=None, help="shards and the chosen decisions (default OUT/work)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--shards", metavar="FIRST:LAST", help="label only these shards (a second worker); the "
                        "set is joined by a run that finds every shard done")
    parser.add_argument("--reuse", type=Path, help="an earlier build's work directory whose labels are reused "
                        "(same reference settings) for the decisions chosen again")
    for field in dataclasses.fields(BuildSettings):
        if field.type in ("int", "float"):
            parser.add_argument(f"--{field.name.replace('_', '-')}", type={"int": int, "float": float}[field.type], default=field.default)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    settings = BuildSettings(**{field.name: getattr(args, field.name) for field in dataclasses.fields(BuildSettings)
                                if hasattr(args, field.name)})
    work = args.work or args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    started = time.time()
    board, dice, source = select(settings, args.seed, work / "selected.npz")
    log(f"{board.shape[0]} decisions chosen ({time.time() - started:.0f} s)")

    reference = GnubgReference()
    known = known_labels(args.reuse) if args.reuse else {}
    first, last = (int(bound) for bound in args.shards.split(":")) if args.shards else (0, 1 << 30)
    shards = []
    for number, start in enumerate(range(0, board.shape[0], settings.shard_size)):
        path = work / f"shard_{number:03d}.npz"
        if not first <= number <= last:
            if path.is_file():
                shards.append(load_npz(path))
            continue
        if not path.is_file():
            began = time.time()
            part = slice(start, start + settings.shard_size)
            labelled = label_shard(board[part], dice[part], source[part], reference, settings, known)
            save_decisions(labelled, path)
            log(f"shard {number}: {len(labelled)} decisions, {labelled.candidate.shape[0]} candidates, "
                f"{time.time() - began:.0f} s")
        shards.append(load_npz(path))
    expected = -(-board.shape[0] // settings.shard_size)
    if len(shards) < expected:
        log(f"{len(shards)} of {expected} shards done; run again without --shards to join them")
        return
    decisions = concatenate(shards)
    data_path = save_decisions(decisions, args.out / "benchmark.npz")

    import gnubg_nn

    sources = {name: {SOURCES[s]: int(((decisions.kind == c) & (decisions.source == s)).sum()) for s in (0, 1)}
               for c, name in zip(PHASES, CLASSES)}
    manifest = {
        "format": "bgtrain move-error benchmark, see bgtrain/benchmark/decisions.py",
        "data": data_path.name,
        "content_sha256": content_hash(decisions),
        "seed": args.seed,
        "reference": {
            "program": "GNU Backgammon's neural nets through the gnubg-nn Python package",
            "gnubg_nn_version": gnubg_nn.__version__.version,
            "ply": settings.reference_ply,
            "evaluation": "cubeless money equity of the position after each play, for the side that played",
        },
        "settings": dataclasses.asdict(settings),
        "decisions": len(decisions),
        "candidates": int(decisions.candidate.shape[0]),
        "counts": decisions.class_counts(),
        "sources": sources,
    }
    write_manifest(data_path, manifest)
    log(f"wrote {data_path} ({data_path.stat().st_size} bytes): {manifest['counts']}, hash {manifest['content_sha256']}")


if __name__ == "__main__":
    main()
