"""The dataset format on disk: shard files and a JSON manifest, written atomically (``docs/datasets.md``).

A dataset is a directory::

    manifest.json        what the dataset is and which shards are complete
    shard_00000.pt       torch.save of a dict of tensors (below), one per shard index
    shard_00001.pt       ...

A shard holds ``positions: int8[N, 28]`` (``engine.board`` layout, side to move, before its roll),
``targets: float32[N, 5]`` (``bgtrain.outcomes`` order), ``standard_errors: float32[N, 5]``,
``zero_ply: float32[N, 5]`` (the source model's 0-ply probabilities, for analysis), ``kinds: int8[N]``
(``engine.position_kinds.PositionKind``), plus ``format``, ``format_version`` and ``index``. A plays
dataset's shard (``bgtrain.datasets.plays``) also holds ``groups: int32[N]``: the source shard's row
whose move choice the position is a play of (-1: none), so the rows of a group are the plays of one roll.

A shard file is written first (temporary file + rename), then the manifest that lists it; a shard
on disk but not in the manifest is ignored and rewritten, so a generation killed at any moment
loses at most the shard it was writing. Each manifest entry records its file's size (``bytes``) and
``sha256``; a resumed run, ``bgtrain dataset info`` and training's first read check them
(``shard_problem``), and every read checks the tensors' names, dtypes and shapes and that the labels are
probabilities (``read_shard``), so a damaged shard is named in one line, never trusted.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bgtrain.files import atomic_write
from engine.position_kinds import PositionKind

SHARD_FORMAT = "bgtrain-dataset-shard"
MANIFEST_FORMAT = "bgtrain-dataset"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DATASET_LOCK = "dataset.lock"  # held by the process writing the dataset (bgtrain.directory_lock)
SHARD_FIELDS = ("positions", "targets", "standard_errors", "zero_ply", "kinds")
GROUP_FIELDS = ("groups",)  # optional: a plays dataset's shards hold them
KIND_NAMES = {int(kind): kind.name.lower() for kind in PositionKind}
# Each field's dtype and its shape after the row count N.
SHARD_LAYOUT = {"positions": (torch.int8, (28,)), "targets": (torch.float32, (5,)),
                "standard_errors": (torch.float32, (5,)), "zero_ply": (torch.float32, (5,)), "kinds": (torch.int8, ()),
                "groups": (torch.int32, ())}
# How far a label may stray outside [0, 1]: averages over rolls round by about 1e-7; more is corrupt data.
LABEL_TOLERANCE = 1e-4


def shard_name(index: int) -> str:
    return f"shard_{index:05d}.pt"


def shard_bytes(index: int, tensors: dict[str, torch.Tensor]) -> bytes:
    """Shard ``index``'s file contents (a ``torch.save`` of the tagged dict of its tensors). A worker
    that makes the shard serialises it itself, so that the driver writes exactly these bytes."""
    missing = [name for name in SHARD_FIELDS if name not in tensors]
    if missing:
        raise ValueError(f"shard {index} lacks {', '.join(missing)}")
    buffer = io.BytesIO()
    # A clone holds exactly its rows: torch.save writes a view's whole storage, so a shard cut from a
    # larger tensor would carry the rest, and the same rows made elsewhere would differ in bytes.
    fields = [*SHARD_FIELDS, *(name for name in GROUP_FIELDS if name in tensors)]
    torch.save({"format": SHARD_FORMAT, "format_version": FORMAT_VERSION, "index": index,
                **{name: tensors[name].cpu().clone(memory_format=torch.contiguous_format) for name in fields}},
               buffer)
    return buffer.getvalue()


def shard_entry(index: int, tensors: dict[str, torch.Tensor], data: bytes) -> dict[str, Any]:
    """Shard ``index``'s manifest entry: its file, its size and sha256 (of ``data``, the file's bytes),
    positions and counts of each kind."""
    kinds = torch.bincount(tensors["kinds"].long(), minlength=len(KIND_NAMES)).tolist()
    return {"index": index, "file": shard_name(index), "positions": int(tensors["positions"].shape[0]),
            "kinds": {KIND_NAMES[k]: count for k, count in enumerate(kinds) if count},
            "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_shard(directory: Path, index: int, tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Write shard ``index`` atomically; returns its manifest entry."""
    data = shard_bytes(index, tensors)
    atomic_write(directory / shard_name(index), data)
    return shard_entry(index, tensors, data)


def shard_problem(directory: Path, entry: dict[str, Any], data: bytes | None = None) -> str | None:
    """Why the file a manifest entry lists does not hold what the entry records (missing, another size,
    another sha256), or None. ``data``: the file's bytes when already read. Entries written before sizes
    and hashes were recorded are checked for the file alone."""
    path = Path(directory) / entry["file"]
    if data is None:
        if not path.is_file():
            return "missing"
        size = path.stat().st_size
    else:
        size = len(data)
    if "bytes" in entry and size != entry["bytes"]:
        return f"{size:,} bytes where the manifest lists {entry['bytes']:,}"
    if "sha256" in entry:
        digest = hashlib.sha256(path.read_bytes() if data is None else data).hexdigest()
        if digest != entry["sha256"]:
            return "its sha256 is not the one the manifest lists"
    return None


def verify_shards(directory: str | Path, manifest: dict[str, Any]) -> None:
    """A ValueError naming the first listed shard of ``directory`` that is not what its entry records."""
    damaged = [(entry, problem) for entry in manifest["shards"]
               if (problem := shard_problem(Path(directory), entry)) is not None]
    if damaged:
        entry, problem = damaged[0]
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        raise ValueError(f"{Path(directory) / entry['file']} is damaged: {problem}{more}; rerun the command that "
                         "made the dataset to write it again")


def read_shard(path: Path, entry: dict[str, Any] | None = None) -> dict[str, torch.Tensor]:
    """A shard's tensors, checked: the file against its manifest ``entry`` when given (size, sha256), then
    the tensors' names, dtypes and shapes, and labels that are probabilities. Every problem is a
    ValueError naming the file (and the row of a bad label)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: the dataset lists this shard but it is missing") from None
    if entry is not None and (problem := shard_problem(path.parent, entry, data)) is not None:
        raise ValueError(f"{path} is damaged: {problem}; rerun the command that made the dataset to write it again")
    try:
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError(f"{path} is not a bgtrain dataset shard: it holds objects other than tensors") from None
    except Exception as error:  # noqa: BLE001 -- torch raises many types for a truncated or foreign file
        # torch's first sentence says what failed; the rest is advice about checkpoints.
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0].split(". ")[0][:120]
        raise ValueError(f"{path} is not a readable dataset shard (damaged or truncated: {first_line})") from None
    if not isinstance(payload, dict) or payload.get("format") != SHARD_FORMAT:
        raise ValueError(f"{path} is not a bgtrain dataset shard")
    if payload.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path} has shard format version {payload.get('format_version')}, "
                         f"this bgtrain reads {FORMAT_VERSION}")
    tensors = {name: payload.get(name) for name in (*SHARD_FIELDS, *GROUP_FIELDS)
               if name in SHARD_FIELDS or name in payload}
    rows = tensors["positions"].shape[0] if isinstance(tensors["positions"], torch.Tensor) else 0
    for name, value in tensors.items():
        dtype, shape = SHARD_LAYOUT[name]
        if not isinstance(value, torch.Tensor) or value.dtype != dtype or tuple(value.shape) != (rows, *shape):
            described = (f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
                         if isinstance(value, torch.Tensor) else type(value).__name__)
            wanted = f"{str(dtype).removeprefix('torch.')}{[rows, *shape] if rows else ['N', *shape]}"
            raise ValueError(f"{path}: '{name}' is {described}, not {wanted}")
    targets = tensors["targets"]
    bad = ~torch.isfinite(targets).all(1) | ((targets < -LABEL_TOLERANCE) | (targets > 1 + LABEL_TOLERANCE)).any(1)
    if bad.any():
        row = int(torch.nonzero(bad)[0])
        raise ValueError(f"{path}: row {row} of {rows:,} has the labels {targets[row].tolist()} "
                         f"({int(bad.sum()):,} bad rows): labels are probabilities, finite and in [0, 1]")
    return tensors


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    manifest = {**manifest, "positions": sum(shard["positions"] for shard in manifest["shards"])}
    atomic_write(directory / MANIFEST, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())


def read_manifest(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"no dataset at {directory} ({MANIFEST} is missing)")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error})") from None
    if manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"{path} is not a bgtrain dataset manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path} has dataset format version {manifest.get('format_version')}, "
                         f"this bgtrain reads {FORMAT_VERSION}")
    return manifest


@dataclass(frozen=True)
class Dataset:
    """Every complete shard of one or more dataset directories, concatenated (CPU tensors)."""

    positions: torch.Tensor  # int8[N, 28]
    targets: torch.Tensor  # float32[N, 5]
    standard_errors: torch.Tensor  # float32[N, 5]
    zero_ply: torch.Tensor  # float32[N, 5]
    kinds: torch.Tensor  # int8[N]
    groups: torch.Tensor  # int64[N]: rows with one value >= 0 are the plays of one move choice; -1: none
    sources: tuple[dict[str, Any], ...]  # the manifests, in order

    def __len__(self) -> int:
        return int(self.positions.shape[0])

    def where(self, mask: torch.Tensor) -> Dataset:
        """The rows where ``mask: bool[N]`` holds."""
        return Dataset(*(getattr(self, name)[mask] for name in (*SHARD_FIELDS, "groups")), self.sources)


def dataset_spec(spec: str | Path) -> tuple[Path, range | None]:
    """``"DIR"`` -> (DIR, None): every complete shard; ``"DIR@N"`` -> (DIR, range(0, N)): its shards 0 to
    N - 1 only (a network trained while its dataset was still being generated, say, stays reproducible);
    ``"DIR@A:B"`` -> (DIR, range(A, B)): its shards A to B - 1 (the next part of a dataset given deep
    labels a part at a time)."""
    text = str(spec)
    path, at, wanted = text.rpartition("@")
    start, colon, stop = wanted.partition(":")
    if not colon:
        start, stop = "0", wanted
    if not at or not start.isdigit() or not stop.isdigit() or int(start) >= int(stop):
        return Path(text), None
    return Path(path), range(int(start), int(stop))


def shards_in(spec: str | Path, entries: list[dict[str, Any]], wanted: range) -> list[dict[str, Any]]:
    """The manifest entries of the shards ``wanted`` names, all of which must be complete."""
    kept = [entry for entry in entries if entry["index"] in wanted]
    if len(kept) < len(wanted):
        which = f"its first {wanted.stop} shards" if wanted.start == 0 else f"its shards {wanted.start} to {wanted.stop - 1}"
        raise ValueError(f"{spec}: has only {len(kept)} of {which} complete")
    return kept


def load_datasets(directories) -> Dataset:
    """A ``Dataset`` from the shards the manifests of ``directories`` list (one path or several; a path
    ``DIR@N`` takes the first N shards of DIR, ``DIR@A:B`` its shards A to B - 1, see ``dataset_spec``)."""
    if isinstance(directories, (str, Path)):
        directories = [directories]
    parts: dict[str, list[torch.Tensor]] = {name: [] for name in (*SHARD_FIELDS, "groups")}
    groups_before = 0  # a shard's groups are its own rows' numbers: made distinct across shards
    manifests = []
    for spec in directories:
        directory, wanted = dataset_spec(spec)
        manifest = read_manifest(directory)
        shards = sorted(manifest["shards"], key=lambda entry: entry["index"])
        if wanted is not None:
            shards = shards_in(spec, shards, wanted)
            manifest = {**manifest, "shards": shards, "positions": sum(shard["positions"] for shard in shards)}
        manifests.append(manifest)
        for shard in shards:
            tensors = read_shard(directory / shard["file"], shard)
            for name in SHARD_FIELDS:
                parts[name].append(tensors[name])
            groups = tensors.get("groups", torch.full((tensors["kinds"].shape[0],), -1)).long()
            parts["groups"].append(torch.where(groups >= 0, groups + groups_before, -1))
            groups_before += int(groups.max()) + 1 if groups.numel() else 0
    if not parts["positions"]:
        raise ValueError(f"no complete shard in {', '.join(map(str, directories))}")
    return Dataset(*(torch.cat(parts[name]) for name in (*SHARD_FIELDS, "groups")), tuple(manifests))
