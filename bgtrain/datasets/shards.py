"""The dataset format on disk: shard files and a JSON manifest, written atomically (``docs/datasets.md``).

A dataset is a directory::

    manifest.json        what the dataset is and which shards are complete
    shard_00000.pt       torch.save of a dict of tensors (below), one per shard index
    shard_00001.pt       ...

A shard holds ``positions: int8[N, 28]`` (``engine.board`` layout, side to move, before its roll),
``targets: float32[N, 5]`` (``bgtrain.outcomes`` order), ``standard_errors: float32[N, 5]``,
``zero_ply: float32[N, 5]`` (the source model's 0-ply probabilities, for analysis), ``kinds: int8[N]``
(``engine.position_kinds.PositionKind``), plus ``format``, ``format_version`` and ``index``.

A shard file is written first (temporary file + rename), then the manifest that lists it; a shard
on disk but not in the manifest is ignored and rewritten, so a generation killed at any moment
loses at most the shard it was writing.
"""

from __future__ import annotations

import io
import json
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
SHARD_FIELDS = ("positions", "targets", "standard_errors", "zero_ply", "kinds")
KIND_NAMES = {int(kind): kind.name.lower() for kind in PositionKind}


def shard_name(index: int) -> str:
    return f"shard_{index:05d}.pt"


def shard_bytes(index: int, tensors: dict[str, torch.Tensor]) -> bytes:
    """Shard ``index``'s file contents (a ``torch.save`` of the tagged dict of its tensors). A worker
    that makes the shard serialises it itself, so that the driver writes exactly these bytes."""
    missing = [name for name in SHARD_FIELDS if name not in tensors]
    if missing:
        raise ValueError(f"shard {index} lacks {', '.join(missing)}")
    buffer = io.BytesIO()
    torch.save({"format": SHARD_FORMAT, "format_version": FORMAT_VERSION, "index": index,
                **{name: tensors[name].cpu().contiguous() for name in SHARD_FIELDS}}, buffer)
    return buffer.getvalue()


def shard_entry(index: int, tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Shard ``index``'s manifest entry: its file, positions and counts of each kind."""
    kinds = torch.bincount(tensors["kinds"].long(), minlength=len(KIND_NAMES)).tolist()
    return {"index": index, "file": shard_name(index), "positions": int(tensors["positions"].shape[0]),
            "kinds": {KIND_NAMES[k]: count for k, count in enumerate(kinds) if count}}


def write_shard(directory: Path, index: int, tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Write shard ``index`` atomically; returns its manifest entry."""
    atomic_write(directory / shard_name(index), shard_bytes(index, tensors))
    return shard_entry(index, tensors)


def read_shard(path: Path) -> dict[str, torch.Tensor]:
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != SHARD_FORMAT:
        raise ValueError(f"{path} is not a bgtrain dataset shard")
    if payload.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path} has shard format version {payload.get('format_version')}, "
                         f"this bgtrain reads {FORMAT_VERSION}")
    return {name: payload[name] for name in SHARD_FIELDS}


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
    sources: tuple[dict[str, Any], ...]  # the manifests, in order

    def __len__(self) -> int:
        return int(self.positions.shape[0])

    def where(self, mask: torch.Tensor) -> Dataset:
        """The rows where ``mask: bool[N]`` holds."""
        return Dataset(*(getattr(self, name)[mask] for name in SHARD_FIELDS), self.sources)


def dataset_spec(spec: str | Path) -> tuple[Path, int | None]:
    """``"DIR"`` -> (DIR, None): every complete shard; ``"DIR@N"`` -> (DIR, N): its shards 0 to N - 1
    only (a network trained while its dataset was still being generated, say, stays reproducible)."""
    text = str(spec)
    path, at, count = text.rpartition("@")
    if not at or not count.isdigit() or int(count) == 0:
        return Path(text), None
    return Path(path), int(count)


def load_datasets(directories) -> Dataset:
    """A ``Dataset`` from the shards the manifests of ``directories`` list (one path or several; a path
    ``DIR@N`` takes the first N shards of DIR, see ``dataset_spec``)."""
    if isinstance(directories, (str, Path)):
        directories = [directories]
    parts: dict[str, list[torch.Tensor]] = {name: [] for name in SHARD_FIELDS}
    manifests = []
    for spec in directories:
        directory, first = dataset_spec(spec)
        manifest = read_manifest(directory)
        shards = sorted(manifest["shards"], key=lambda entry: entry["index"])
        if first is not None:
            shards = [shard for shard in shards if shard["index"] < first]
            if len(shards) < first:
                raise ValueError(f"{spec}: {directory} has only {len(shards)} of its first {first} shards")
            manifest = {**manifest, "shards": shards, "positions": sum(shard["positions"] for shard in shards)}
        manifests.append(manifest)
        for shard in shards:
            tensors = read_shard(directory / shard["file"])
            for name in SHARD_FIELDS:
                parts[name].append(tensors[name])
    if not parts["positions"]:
        raise ValueError(f"no complete shard in {', '.join(map(str, directories))}")
    return Dataset(*(torch.cat(parts[name]) for name in SHARD_FIELDS), tuple(manifests))
