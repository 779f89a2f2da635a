"""Positions from noisy self-play of a model, selected where a cheap and a deep evaluation disagree,
labelled, and written shard by shard (``bgtrain.datasets.shards``).

Shard k is a function of ``(settings, k)`` alone: its self-play games, dice, exploration and selection
draw from generators seeded by ``shard_seed(seed, k)``, and start afresh from opening positions. So a
killed generation, rerun with the same settings, skips the shards its manifest lists and writes the
others exactly as an uninterrupted run would have.

Per turn of ``games_in_parallel`` games in lock step:

* burn-in: the games first play ``burn_in_turns`` turns unsampled, so that sampling meets every
  stage of a game;
* candidates: each live position (the side to move, before its roll) is taken with probability
  ``sample_rate`` (neighbouring positions of a game are strongly correlated); bear-offs the database
  covers are left out (the evaluator never asks a network about them), and so are positions not of
  ``kinds`` when it names some;
* play: each game plays its best play by the model's 0-ply equity, or, with ``temperature`` > 0, a play
  drawn with probability proportional to exp(equity / temperature); with probability ``epsilon`` a
  uniformly random legal play instead, for diversity.

With an ``opponent`` (an agent spec of ``bgtrain.arena.specs``, e.g. ``gnubg:0ply``) the model plays
seat 0 of every game and the opponent seat 1 (the opening roll decides who starts, so each starts half
the games), and only the model's own turns are candidates: the decisions it meets against that opponent,
after the opponent's plays, rather than after its own as in self-play.

Selection (``select_ply`` > 0): a candidate is kept when its cubeless equity at ``select_ply`` differs
from its 0-ply equity by more than ``select_threshold`` (the positions the network gets wrong), and
otherwise with probability ``keep_agreeing``. The labeller then labels the kept positions; a ply
labeller at the selection ply on the same evaluator reuses the selection's evaluation.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bgtrain.arena.duel import choose_moves
from bgtrain.arena.specs import make_agent
from bgtrain.datasets.labellers import Labeller, PlyLabeller
from bgtrain.datasets.shards import (
    DATASET_LOCK,
    FORMAT_VERSION,
    KIND_NAMES,
    MANIFEST,
    MANIFEST_FORMAT,
    read_manifest,
    shard_problem,
    write_manifest,
    write_shard,
)
from bgtrain.directory_lock import directory_lock
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.evaluator import Evaluator
from engine.dice import RandomDice
from engine.game import new_games, play
from engine.movegen import argmax_per_position, legal_afterstates
from engine.position_kinds import PHASE_NAMES, position_kinds
from engine.random_play import random_choice

CANDIDATE_KINDS = PHASE_NAMES  # the kinds ``kinds`` may name
MODEL_SEAT = 0  # the model's seat in games against an opponent (the opponent's is 1)
CANDIDATE_CHUNK = 2048  # candidates selected and labelled at once (fewer for a smaller shard)


@dataclass(frozen=True)
class GenerationSettings:
    positions: int
    """Positions in the whole dataset (the last shard may be smaller)."""
    shard_size: int = 10_000
    seed: int = 0
    games_in_parallel: int = 512
    epsilon: float = 0.05
    temperature: float = 0.0
    sample_rate: float = 0.25
    select_ply: int = 1
    select_threshold: float = 0.04
    keep_agreeing: float = 0.25
    turn_limit: int = 400
    burn_in_turns: int = 60
    """Turns every shard's games play before sampling starts, so that the slots (which restart as their
    games end) sample every stage of a game, not only openings."""
    kinds: tuple[str, ...] = ()
    """Position kinds taken as candidates (``CANDIDATE_KINDS``: contact, crashed, race); empty: every
    kind. A race-only dataset for a race network, say, without labelling the contact positions too."""
    opponent: str = ""
    """An agent spec (``bgtrain.arena.specs``) the model plays against instead of itself; empty: self-play.
    Only the model's own turns are candidates."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", tuple(self.kinds))  # a list from JSON or TOML
        kind_codes(self.kinds, "dataset")
        if self.burn_in_turns < 0:
            raise ValueError(f"dataset burn_in_turns must be >= 0, not {self.burn_in_turns}")
        for name in ("positions", "shard_size", "games_in_parallel", "turn_limit"):
            if getattr(self, name) <= 0:
                raise ValueError(f"dataset {name} must be > 0, not {getattr(self, name)}")
        for name in ("epsilon", "sample_rate", "keep_agreeing"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"dataset {name} must be in [0, 1], not {getattr(self, name)}")
        if self.sample_rate == 0.0:
            raise ValueError("dataset sample_rate must be > 0")
        if self.temperature < 0 or self.select_threshold < 0 or self.select_ply < 0:
            raise ValueError("dataset temperature, select_threshold and select_ply must be >= 0")

    @property
    def shards(self) -> int:
        return -(-self.positions // self.shard_size)

    def shard_positions(self, index: int) -> int:
        return min(self.shard_size, self.positions - index * self.shard_size)


def kind_codes(kinds, what: str) -> torch.Tensor | None:
    """The ``PositionKind`` codes of the kind names ``kinds`` (``int64[K]``), None when there are none;
    a ValueError names an unknown kind (``what`` says whose). Only kinds a network is asked about: a
    finished game is never a candidate, and the bear-offs the database covers are left out, so asking
    for those would sample forever."""
    unknown = sorted(set(kinds) - set(CANDIDATE_KINDS))
    if unknown:
        raise ValueError(f"{what} kinds: unknown kind {', '.join(map(repr, unknown))}; known: "
                         + ", ".join(CANDIDATE_KINDS))
    if not kinds:
        return None
    return torch.tensor([code for code, name in KIND_NAMES.items() if name in kinds], dtype=torch.int64)


def shard_seed(seed: int, index: int) -> int:
    """The seed of shard ``index``'s generators: distinct for every (seed, index) below 2 ** 20 shards."""
    return (seed << 20) + index


def generate_dataset(
    directory: str | Path,
    evaluator: Evaluator,
    labeller: Labeller,
    settings: GenerationSettings,
    source_model: str = "",
    progress: bool = True,
    stop_after_shards: int | None = None,
) -> dict[str, Any]:
    """Write (or complete) the dataset at ``directory``; returns its manifest. ``stop_after_shards``
    stops after writing that many new shards (the tests' stand-in for a kill)."""
    from tqdm import tqdm

    directory = Path(directory)
    with dataset_lock(directory):
        manifest = open_dataset(directory, dataset_header(labeller.describe(), source_model, evaluator.rules.name,
                                                          settings))
        done = {shard["index"] for shard in manifest["shards"]}
        bar = tqdm(total=settings.positions, initial=sum(s["positions"] for s in manifest["shards"]),
                   unit="pos", disable=not progress, dynamic_ncols=True)
        written = 0
        for index in range(settings.shards):
            if index in done:
                continue
            if stop_after_shards is not None and written >= stop_after_shards:
                break
            started = time.perf_counter()
            tensors, label_seconds, candidates = generate_shard(evaluator, labeller, settings, index)
            entry = write_shard(directory, index, tensors)
            entry.update(candidates=candidates, label_seconds=round(label_seconds, 3),
                         seconds=round(time.perf_counter() - started, 3))
            record_shard(directory, manifest, entry)
            written += 1
            bar.update(entry["positions"])
            bar.set_postfix_str(f"{entry['positions'] / max(label_seconds, 1e-9):,.0f} labels/s")
        bar.close()
        return read_manifest(directory) if (directory / MANIFEST).exists() else manifest


def dataset_header(labeller: dict[str, Any], source_model: str, rules: str, settings: GenerationSettings
                   ) -> dict[str, Any]:
    """The manifest's description of a dataset (``labeller``: the labeller's ``describe()``)."""
    return {
        "format": MANIFEST_FORMAT,
        "format_version": FORMAT_VERSION,
        "labeller": labeller,
        "source_model": source_model,
        "rules": rules,
        "settings": settings_description(settings),
        "seed": settings.seed,
        "shard_size": settings.shard_size,
        "shards_planned": settings.shards,
    }


def settings_description(settings: GenerationSettings) -> dict[str, Any]:
    """``settings`` as the manifest stores them (plain JSON data: ``kinds`` a list; no ``opponent`` for
    self-play, so that the manifests of datasets made before opponents existed still describe them)."""
    described = {**dataclasses.asdict(settings), "kinds": list(settings.kinds)}
    if not settings.opponent:
        del described["opponent"]
    return described


def open_dataset(directory: Path, header: dict[str, Any]) -> dict[str, Any]:
    """The manifest to complete at ``directory``: a new one, or the existing one when it describes the
    same dataset (its complete shards are kept); another dataset there is refused."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {**header, "shards": []}
    if (directory / MANIFEST).exists():
        existing = read_manifest(directory)
        # A manifest written before ``kinds`` existed describes a dataset of every kind.
        existing["settings"] = {"kinds": [], **existing.get("settings", {})}
        for key in ("labeller", "source_model", "rules", "settings", "relabelled", "plays"):
            if existing.get(key) != header.get(key):
                raise ValueError(f"{directory} holds a dataset made with another {key} "
                                 f"({existing.get(key)!r}); choose a new directory")
        manifest["shards"] = existing["shards"]
        # A listed shard is kept only if its file is what the manifest recorded (a truncated or deleted
        # shard is written again, as a shard that was never listed is).
        problems = {shard["index"]: problem for shard in manifest["shards"]
                    if (problem := shard_problem(directory, shard)) is not None}
        drop_entries(directory, manifest, {index: f"damaged ({problem})" for index, problem in problems.items()})
    return manifest


def dataset_lock(directory: Path):
    """Hold the dataset directory for this process (``bgtrain.directory_lock``): a second generation or
    relabelling into it is refused, since its shards would overwrite or mix with this one's."""
    return directory_lock(directory, DATASET_LOCK, "bgtrain dataset")


def drop_entries(directory: Path, manifest: dict[str, Any], problems: dict[int, str]) -> None:
    """Take the shards ``problems`` names (index -> why) out of ``manifest``, saying so on standard error:
    the run writes them again."""
    import sys

    for index, problem in sorted(problems.items()):
        print(f"dataset {directory}: listed shard {index} is {problem}; it is written again", file=sys.stderr)
    manifest["shards"] = [shard for shard in manifest["shards"] if shard["index"] not in problems]


def record_shard(directory: Path, manifest: dict[str, Any], entry: dict[str, Any]) -> None:
    """List a shard just written in ``manifest`` and rewrite the manifest (atomically)."""
    manifest["shards"] = sorted([*manifest["shards"], entry], key=lambda shard: shard["index"])
    write_manifest(directory, manifest)


def generate_shard(evaluator: Evaluator, labeller: Labeller, settings: GenerationSettings, index: int
                   ) -> tuple[dict[str, torch.Tensor], float, int]:
    """Shard ``index``'s tensors, the seconds spent selecting and labelling, and the candidates seen."""
    rules = evaluator.rules
    wanted = settings.shard_positions(index)
    seed = shard_seed(settings.seed, index)
    dice = RandomDice(seed)
    draws = torch.Generator().manual_seed(seed + 1)
    state = new_games(rules, settings.games_in_parallel, dice)
    kept: dict[str, list[torch.Tensor]] = {"positions": [], "targets": [], "standard_errors": [], "zero_ply": []}
    pending: list[torch.Tensor] = []
    have = candidates = 0
    label_seconds = 0.0
    wanted_kinds = kind_codes(settings.kinds, "dataset")
    # A fresh agent a shard, seeded by it: a random opponent's draws then depend on (settings, k) alone too.
    opponent = make_agent(settings.opponent, rules, seed=seed) if settings.opponent else None
    for _ in range(settings.burn_in_turns):
        state = _play_turn(state, evaluator, settings, draws, dice, opponent)
    while have < wanted:
        live = ~state.game_over
        if opponent is not None:
            live &= state.seat == MODEL_SEAT
        sampled = live & (torch.rand(state.batch_size, generator=draws) < settings.sample_rate)
        if evaluator.bearoff is not None:
            sampled &= ~evaluator.bearoff.covers(state.board)
        if wanted_kinds is not None:
            sampled &= torch.isin(position_kinds(state.board).to(torch.int64), wanted_kinds)
        pending.append(state.board[sampled])
        if sum(p.shape[0] for p in pending) >= min(CANDIDATE_CHUNK, wanted):
            chunk = torch.cat(pending)
            pending = []
            candidates += chunk.shape[0]
            started = time.perf_counter()
            have += _select_and_label(chunk, evaluator, labeller, settings, draws, kept)
            label_seconds += time.perf_counter() - started
        state = _play_turn(state, evaluator, settings, draws, dice, opponent)
    positions = torch.cat(kept["positions"])[:wanted]
    tensors = {name: torch.cat(values)[:wanted] for name, values in kept.items()}
    tensors["kinds"] = position_kinds(positions).to(torch.int8)
    return tensors, label_seconds, candidates


def _select_and_label(chunk: torch.Tensor, evaluator: Evaluator, labeller: Labeller, settings: GenerationSettings,
                      draws: torch.Generator, kept: dict[str, list[torch.Tensor]]) -> int:
    zero = evaluator.probabilities(chunk, 0)
    keep = torch.ones(chunk.shape[0], dtype=torch.bool)
    deep = None
    if settings.select_ply:
        deep = evaluator.probabilities(chunk, settings.select_ply)
        gap = (cubeless_equity(deep, evaluator.rules) - cubeless_equity(zero, evaluator.rules)).abs()
        keep = (gap > settings.select_threshold) | (torch.rand(chunk.shape[0], generator=draws) < settings.keep_agreeing)
    boards = chunk[keep]
    reuse = (deep is not None and isinstance(labeller, PlyLabeller) and labeller.evaluator is evaluator
             and labeller.ply == settings.select_ply)
    if reuse:
        targets, errors = deep[keep], torch.zeros_like(deep[keep])
    else:
        targets, errors = labeller.label(boards)
    kept["positions"].append(boards)
    kept["targets"].append(targets.to(torch.float32).clamp(0.0, 1.0))  # roll averages can round past 1
    kept["standard_errors"].append(errors.to(torch.float32))
    kept["zero_ply"].append(zero[keep])
    return int(boards.shape[0])


class _ExploringModel:
    """The model's own plays as an agent (``bgtrain.arena.agents``): its best by 0-ply equity, softmax
    plays with ``temperature`` > 0, a random legal play with probability ``epsilon``."""

    name = "model"

    def __init__(self, evaluator: Evaluator, settings: GenerationSettings, draws: torch.Generator) -> None:
        self.evaluator, self.settings, self.draws = evaluator, settings, draws

    def choose(self, state, afterstates) -> torch.Tensor:
        settings, draws = self.settings, self.draws
        equity = cubeless_equity(self.evaluator.afterstate_probabilities(afterstates.boards, 0), self.evaluator.rules)
        if settings.temperature > 0:
            # Gumbel-max: the argmax of equity / T plus Gumbel noise is a draw from the softmax.
            uniform = torch.rand(equity.shape, generator=draws).clamp(1e-12, 1.0 - 1e-7)
            equity = equity / settings.temperature - torch.log(-torch.log(uniform))
        choice = argmax_per_position(equity, afterstates)
        if settings.epsilon > 0:
            explores = torch.rand(choice.shape[0], generator=draws) < settings.epsilon
            choice = torch.where(explores, random_choice(afterstates, draws), choice)
        return choice


def _play_turn(state, evaluator: Evaluator, settings: GenerationSettings, draws: torch.Generator, dice,
               opponent=None):
    """Every game plays one turn: the model's play, or the opponent's in the games where its seat is to
    move (then the batch is reordered, the model's movers first; the games are independent and the dice
    drawn for the batch after the reordering, so a seed still gives one dataset)."""
    rules = evaluator.rules
    model = _ExploringModel(evaluator, settings, draws)
    if opponent is None:
        afterstates = legal_afterstates(state.board, state.dice, rules)
        choice = model.choose(state, afterstates)
    else:
        games = torch.arange(state.batch_size)
        model_seat = torch.full((state.batch_size,), MODEL_SEAT, dtype=torch.int8)
        state, _, afterstates, choice = choose_moves(model, opponent, state, games, model_seat, rules)
    state = play(state, afterstates.select(choice), rules, dice)
    finished = state.game_over | (state.turn >= settings.turn_limit)
    return state.where(finished, new_games(rules, state.batch_size, dice))
