"""Benchmark decisions: positions with a roll, the candidate plays and the equity each one loses.

A *decision* is a position seen from the side to move, with its roll, that has more than one legal
play. Its *candidates* are some of those plays, each an afterstate (the board just after the play,
still from the mover's side, as ``engine.movegen.Afterstates.boards``) with its *loss*: the cubeless
money equity it gives up against the best candidate under the reference evaluation (so the best
candidate loses 0). A play that is not listed is charged the worst listed loss of its decision, as GNU
Backgammon's benchmark scorer does.

On disk (``.npz``, numpy's zip of arrays, compressed):

``board      int8[D, 28]``   the position before the play (layout in ``engine.board``)
``dice       int8[D, 2]``    the roll, larger die first
``kind       int8[D]``       the class: 0 contact, 1 crashed, 2 race (its place in :data:`CLASSES`; in
                             memory the ``engine.position_kinds.PositionKind`` itself)
``source     int8[D]``       how the decision was chosen (:data:`SOURCES`)
``counts     int64[D]``      candidates per decision (>= 1); decision d's are rows
                             ``offsets[d] : offsets[d] + counts[d]`` of the candidate arrays
``candidate  int8[C, 28]``   the candidates' afterstates, best first
``loss       float32[C]``    each candidate's equity loss (>= 0, 0 for the best)
``equity     float32[C]``    each candidate's reference equity for the mover (NaN where unknown)

The shipped set lies in ``bgtrain/data/benchmark/`` with ``manifest.json`` beside it: the reference, the
build settings, the counts per class, the seed and :func:`content_hash` of the arrays.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

from bgtrain.files import atomic_write
from engine.board import borne_off
from engine.position_kinds import (
    PHASE_NAMES,
    PHASES,
    PositionKind,
    kind_named,
    phase_kinds,
    phase_positions,
    position_kinds,
)
from engine.rules import STANDARD

CLASSES = PHASE_NAMES  # the benchmark's classes, in GNU Backgammon's naming
# Where a decision stands in the bear-off, by who has borne off checkers: the stakes a play changes most.
# "saving the gammon": the mover has none off and the opponent some (a gammon the mover may still save);
# "winning a gammon": the opponent has none off and the mover some; then neither, then both.
STAGES = ("saving the gammon", "winning a gammon", "neither off", "both off")
SOURCES = ("self-play", "disputed", "file")  # sampled from self-play; where agents disagreed; read from a file
SELF_PLAY, DISPUTED, FROM_FILE = range(3)

DATA_DIRECTORY = Path(__file__).resolve().parent.parent / "data" / "benchmark"
DEFAULT_DATA = DATA_DIRECTORY / "benchmark.npz"
GNUBG_2PLY_NAME = "gnubg-2ply"  # the set as built, before rollouts; ``--data gnubg-2ply``
GNUBG_2PLY_DATA = DATA_DIRECTORY / GNUBG_2PLY_NAME / "benchmark.npz"
# The shipped set before 2026-12-03: contact and crashed rolled out by ``bgtrain-plus.pt``, which taught the
# supervised models it graded. Kept so that every figure measured on it can be measured again.
PLUS_ROLLOUTS_NAME = "plus-rollouts"
# Earlier references shipped beside the default, each a directory of DATA_DIRECTORY named on the command line.
NAMED_SETS = (GNUBG_2PLY_NAME, PLUS_ROLLOUTS_NAME)
MANIFEST_NAME = "manifest.json"


def class_kind(name: str) -> PositionKind:
    """The kind of a class name (``contact``, ``crashed``, ``race``); a ValueError naming the choices."""
    if name not in CLASSES:
        raise ValueError(f"unknown class {name!r}: a class is one of {', '.join(CLASSES)}")
    return kind_named(name)


def classes_of(board: torch.Tensor) -> torch.Tensor:
    """The benchmark class of each position, by GNU Backgammon's ``ClassifyPosition``
    (``engine.position_kinds``): ``int8[B, 28]`` -> ``int64[B]`` of ``PositionKind``; a two-sided
    bear-off counts as a race, a finished game is ``OVER`` (not a decision)."""
    return phase_kinds(position_kinds(board))


def stages_of(board: torch.Tensor) -> torch.Tensor:
    """The stage of each position (its index in :data:`STAGES`): ``int8[B, 28]`` -> ``int64[B]``."""
    mover_off, opponent_off = borne_off(board, STANDARD.checkers_per_side)  # the benchmark is standard backgammon
    mover_some, opponent_some = mover_off > 0, opponent_off > 0
    return torch.where(
        mover_some == opponent_some,
        torch.where(mover_some, 3, 2),
        torch.where(opponent_some, 0, 1),
    ).to(torch.int64)


@dataclass(frozen=True)
class DecisionSet:
    """D decisions and their C candidates (see the module docstring for the fields)."""

    board: torch.Tensor
    dice: torch.Tensor
    kind: torch.Tensor
    source: torch.Tensor
    counts: torch.Tensor
    candidate: torch.Tensor
    loss: torch.Tensor
    equity: torch.Tensor

    def __post_init__(self) -> None:
        decisions, candidates = self.board.shape[0], self.candidate.shape[0]
        for name in ("dice", "kind", "source", "counts"):
            if getattr(self, name).shape[0] != decisions:
                raise ValueError(f"decision set: {name} has {getattr(self, name).shape[0]} rows, not {decisions}")
        for name in ("loss", "equity"):
            if getattr(self, name).shape[0] != candidates:
                raise ValueError(f"decision set: {name} has {getattr(self, name).shape[0]} rows, not {candidates}")
        if int(self.counts.sum()) != candidates:
            raise ValueError(f"decision set: the counts add up to {int(self.counts.sum())}, not {candidates}")
        if decisions and int(self.counts.min()) < 1:
            raise ValueError("decision set: every decision needs at least one candidate")
        if candidates and float(self.loss.min()) < 0:
            raise ValueError("decision set: a candidate's loss is negative")

    def __len__(self) -> int:
        return self.board.shape[0]

    @property
    def offsets(self) -> torch.Tensor:
        """Where each decision's candidates start: ``int64[D]``."""
        return torch.cumsum(self.counts, 0) - self.counts

    @property
    def owner(self) -> torch.Tensor:
        """The decision of each candidate: ``int64[C]``."""
        return torch.repeat_interleave(torch.arange(len(self)), self.counts)

    @property
    def worst_loss(self) -> torch.Tensor:
        """The largest listed loss of each decision, charged for unlisted plays: ``float32[D]``."""
        worst = torch.zeros(len(self), dtype=self.loss.dtype)
        return worst.scatter_reduce(0, self.owner, self.loss, "amax")

    def select(self, index: torch.Tensor) -> DecisionSet:
        """The decisions at ``index`` (a long index or bool mask over decisions), with their candidates."""
        index = torch.arange(len(self))[index]
        counts = self.counts[index]
        starts = self.offsets[index]
        owner = torch.repeat_interleave(torch.arange(index.numel()), counts)
        rows = starts[owner] + torch.arange(int(counts.sum())) - (torch.cumsum(counts, 0) - counts)[owner]
        return DecisionSet(
            self.board[index], self.dice[index], self.kind[index], self.source[index], counts,
            self.candidate[rows], self.loss[rows], self.equity[rows],
        )

    def of_class(self, name: str) -> DecisionSet:
        return self.select(self.kind == class_kind(name))

    def class_counts(self) -> dict[str, int]:
        return {name: int((self.kind == kind).sum()) for kind, name in zip(PHASES, CLASSES)}


def concatenate(parts: list[DecisionSet]) -> DecisionSet:
    """One decision set holding ``parts`` in order."""
    if not parts:
        raise ValueError("no decision sets to concatenate")
    return DecisionSet(*(torch.cat([getattr(part, field.name) for part in parts]) for field in fields(DecisionSet)))


_DTYPES = {
    "board": torch.int8, "dice": torch.int8, "kind": torch.int8, "source": torch.int8, "counts": torch.int64,
    "candidate": torch.int8, "loss": torch.float32, "equity": torch.float32,
}


def _arrays(decisions: DecisionSet) -> dict[str, np.ndarray]:
    """The file's arrays: the kind column holds each class's place in ``CLASSES``."""
    arrays = {name: getattr(decisions, name).to(dtype).numpy() for name, dtype in _DTYPES.items()}
    arrays["kind"] = phase_positions(decisions.kind).to(torch.int8).numpy()
    return arrays


def content_hash(decisions: DecisionSet) -> str:
    """SHA-256 of the arrays' contents (name, dtype, shape and bytes of each, in a fixed order): the
    same for the same decisions however the file was compressed."""
    digest = hashlib.sha256()
    for name, array in _arrays(decisions).items():
        digest.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def save_decisions(decisions: DecisionSet, path: str | Path) -> Path:
    """Write ``decisions`` as a compressed ``.npz`` file, atomically."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **_arrays(decisions))
    return atomic_write(path, buffer.getvalue())


def load_npz(path: str | Path) -> DecisionSet:
    """A decision set written by :func:`save_decisions`; one-line errors for a missing or foreign file."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"benchmark data {str(path)!r} is a directory; give a benchmark file (.npz or .bm)")
    if not path.is_file():
        raise FileNotFoundError(f"benchmark data {str(path)!r} does not exist")
    try:
        # allow_pickle stays off: a benchmark holds arrays of numbers only, and unpickling runs code.
        with np.load(path, allow_pickle=False) as data:
            missing = [name for name in _DTYPES if name not in data.files]
            if missing:
                raise ValueError(f"benchmark data {str(path)!r} lacks the arrays {', '.join(missing)}")
            tensors = {name: torch.from_numpy(data[name]).to(dtype) for name, dtype in _DTYPES.items()}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as error:
        if isinstance(error, ValueError) and "lacks the arrays" in str(error):
            raise
        if not zipfile.is_zipfile(path):
            detail = "not a .npz (zip) archive"
        elif "pickle" in str(error):
            detail = "it holds pickled objects, not arrays"
        else:
            detail = (str(error).splitlines() or [type(error).__name__])[0][:80]
        raise ValueError(f"benchmark data {str(path)!r} is not a readable .npz benchmark ({detail})") from None
    # The file's kind column is each class's place in CLASSES; in memory it is the PositionKind.
    places = tensors["kind"]
    if places.numel() and not 0 <= int(places.min()) <= int(places.max()) < len(PHASES):
        raise ValueError(f"benchmark data {str(path)!r} has a class outside 0..{len(PHASES) - 1}")
    tensors["kind"] = torch.tensor([int(kind) for kind in PHASES], dtype=torch.int8)[places.long()]
    return DecisionSet(**tensors)


def load_decisions(path: str | Path | None = None) -> DecisionSet:
    """The decisions in ``path``: our ``.npz`` format, or GNU Backgammon's ``.bm`` text format
    (``bgtrain.benchmark.bm_format``); the shipped set when ``path`` is None, and a set of
    ``NAMED_SETS`` by its name: ``"gnubg-2ply"`` (the set as built, GNU Backgammon 2-ply for every
    class), ``"plus-rollouts"`` (the shipped set before, contact and crashed rolled out by
    ``bgtrain-plus.pt``)."""
    if path is None:
        return load_npz(DEFAULT_DATA)
    if path in NAMED_SETS:
        return load_npz(named_set(path))
    path = Path(path)
    if path.suffix.lower() == ".bm":
        from bgtrain.benchmark.bm_format import read_bm

        return read_bm(path)
    return load_npz(path)


def named_set(name: str) -> Path:
    """The file of a set of ``NAMED_SETS``."""
    if name not in NAMED_SETS:
        raise ValueError(f"unknown benchmark set {name!r}: a named set is one of {', '.join(NAMED_SETS)}")
    return DATA_DIRECTORY / name / "benchmark.npz"


def read_manifest(data_path: str | Path = DEFAULT_DATA) -> dict:
    """The manifest beside a decision file (``manifest.json`` in the same directory)."""
    manifest = Path(data_path).with_name(MANIFEST_NAME)
    if not manifest.is_file():
        raise FileNotFoundError(f"benchmark manifest {str(manifest)!r} does not exist")
    return json.loads(manifest.read_text())


def write_manifest(data_path: str | Path, manifest: dict) -> Path:
    return atomic_write(Path(data_path).with_name(MANIFEST_NAME), (json.dumps(manifest, indent=2) + "\n").encode())
