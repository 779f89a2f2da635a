"""A dataset's positions labelled again by another labeller: a stronger teacher for the same positions.

Generating a dataset pays twice: self-play to find the positions, and the labels. Once a model has
learnt from a dataset, its own search is usually a better teacher than the one that labelled it (a
student at 1-ply beats the 2-ply of the model that taught it), so the next generation can reuse the
positions and pay for labels only: ``relabel_dataset`` reads the source dataset shard by shard, keeps
the positions of ``kinds`` (all when empty), labels them with ``labeller`` and writes shard k of the
new dataset from shard k of the source, in the same order.

The new manifest (``bgtrain.datasets.shards``, the same format) names the new labeller, keeps the
source's ``source_model``, ``rules`` and ``settings`` (how the positions were found), and adds
``relabelled``: the source directory, its labeller, the kinds kept. A source ``DIR@N`` relabels its first N
shards only (``bgtrain.datasets.shards.dataset_spec``; the manifest's ``relabelled`` then says
``first_shards``), ``DIR@A:B`` its shards A to B - 1 (``shard_range``): deep labels paid for part of a
dataset, a part at a time. Each shard's entry records the
sha256 of the source shard it came from (``source_sha256``); a resumed run relabels again a shard whose
source shard has changed since. With ``plays`` (``bgtrain.datasets.plays``), shard k holds instead the
positions after the selected plays of source shard k's positions, and the manifest says how they were chosen. The shards' ``zero_ply`` are the new
labeller's model at 0-ply (what its labels correct). As for generation, a shard is written atomically
before the manifest lists it, so a killed run, rerun with the same command, keeps its complete shards
and writes the rest: the result is the same as an uninterrupted run's (labels depend only on the
shard's positions). ``relabel_shard`` makes one shard from its source shard's positions; the in-process
``relabel_dataset`` and ``bgtrain.distributed.datasets.relabel_dataset_distributed`` (a shard a work
unit, on Ray) both call it inside ``relabel_job``, so both write the same files.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bgtrain.datasets.generate import (
    CANDIDATE_CHUNK,
    dataset_lock,
    drop_entries,
    kind_codes,
    open_dataset,
    record_shard,
    shard_seed,
)
from bgtrain.datasets.labellers import Labeller
from bgtrain.datasets.plays import PlaySelection, plays_of
from bgtrain.datasets.shards import (
    FORMAT_VERSION,
    GROUP_FIELDS,
    MANIFEST,
    MANIFEST_FORMAT,
    dataset_spec,
    read_manifest,
    read_shard,
    shards_in,
    write_shard,
)
from engine.position_kinds import position_kinds

# What a relabelling takes from a source shard: its positions, their kinds and, a plays dataset's, their groups.
SOURCE_FIELDS = ("positions", "kinds", *GROUP_FIELDS)


@dataclass
class RelabelJob:
    """A relabelling opened under its directory's lock: the manifest to complete and the source shards
    still to label, in order."""

    directory: Path
    source: Path
    manifest: dict[str, Any]
    todo: list[dict[str, Any]]
    total: int | None
    """Positions the new dataset will hold (None with plays: known only once they are drawn)."""

    def progress_bar(self, progress: bool):
        from tqdm import tqdm

        return tqdm(total=self.total, initial=sum(entry["positions"] for entry in self.manifest["shards"]),
                    unit="pos", disable=not progress, dynamic_ncols=True)

    def record(self, source_entry: dict[str, Any], entry: dict[str, Any]) -> None:
        """List a shard just written from ``source_entry``, with the source shard's sha256."""
        entry.update(candidates=int(source_entry["positions"]),
                     source_sha256=_sha256(self.source / source_entry["file"]))
        record_shard(self.directory, self.manifest, entry)

    def finish(self) -> dict[str, Any]:
        return read_manifest(self.directory) if (self.directory / MANIFEST).exists() else self.manifest


@contextmanager
def relabel_job(directory: str | Path, source: str | Path, labeller: dict[str, Any], kinds: tuple[str, ...],
                plays: PlaySelection | None) -> Iterator[RelabelJob]:
    """Open (or resume) the relabelling of ``source`` into ``directory`` by the labeller that ``labeller``
    (a ``describe()``) describes, holding the directory's lock: a shard made from another version of
    its source shard is stale and labelled again."""
    spec = source
    directory, (source, wanted) = Path(directory), dataset_spec(source)
    if directory.resolve() == source.resolve():
        raise ValueError(f"relabel: the new dataset needs its own directory, not the source {source}")
    kind_codes(kinds, "relabel")  # an unknown kind: its error before anything is written
    origin = read_manifest(source)
    shards = sorted(origin["shards"], key=lambda entry: entry["index"])
    if wanted is not None:
        shards = shards_in(f"relabel: {spec}", shards, wanted)
    if not shards:
        raise ValueError(f"relabel: {source} has no complete shard")
    header = {
        "format": MANIFEST_FORMAT,
        "format_version": FORMAT_VERSION,
        "labeller": labeller,
        "source_model": origin["source_model"],
        "rules": origin["rules"],
        "settings": {"kinds": [], **origin.get("settings", {})},
        "seed": origin["seed"],
        "shard_size": origin["shard_size"],
        "shards_planned": len(shards),
        "relabelled": {"from": str(source), "labeller": origin["labeller"], "kinds": list(kinds),
                       "source_shards": [entry["index"] for entry in shards]},
    }
    # Only for a part, so that a whole source's manifests stay as they were.
    if wanted is not None and wanted.start == 0:
        header["relabelled"]["first_shards"] = wanted.stop
    elif wanted is not None:
        header["relabelled"]["shard_range"] = [wanted.start, wanted.stop]
    if plays is not None:
        header["plays"] = plays.describe()
    with dataset_lock(directory):
        manifest = open_dataset(directory, header)
        sources = {entry["index"]: entry for entry in shards}
        drop_entries(directory, manifest, {
            done["index"]: "stale (made from another version of the source shard)" for done in manifest["shards"]
            if done.get("source_sha256") != _sha256(source / sources[done["index"]]["file"])})
        done = {entry["index"] for entry in manifest["shards"]}
        total = None if plays is not None else sum(_kept(entry, kinds) for entry in shards)
        yield RelabelJob(directory, source, manifest, [entry for entry in shards if entry["index"] not in done], total)


def relabel_shard(tensors: dict[str, torch.Tensor], labeller: Labeller, kinds: tuple[str, ...],
                  plays: PlaySelection | None, index: int, bar=None) -> tuple[dict[str, torch.Tensor], float]:
    """Shard ``index`` of the new dataset from the source shard's ``tensors``: its positions (or, with
    ``plays``, the positions after their selected plays) of ``kinds``, labelled; and the seconds the
    labels took. A function of its arguments alone, so a shard is the same wherever it is made."""
    if plays is not None:
        positions, groups = plays_of(tensors["positions"], labeller.evaluator, plays, shard_seed(plays.seed, index))
        tensors = {"positions": positions, "kinds": position_kinds(positions).to(torch.int8), "groups": groups}
    tensors = {name: tensors[name] for name in SOURCE_FIELDS if name in tensors}  # groups kept, whoever labels
    wanted = kind_codes(kinds, "relabel")
    if wanted is not None:
        keep = torch.isin(tensors["kinds"].long(), wanted)
        tensors = {name: values[keep] for name, values in tensors.items()}
    started = time.perf_counter()
    labels = _labels(tensors["positions"], labeller, bar)
    return {**tensors, **labels}, time.perf_counter() - started


def relabel_dataset(
    directory: str | Path,
    source: str | Path,
    labeller: Labeller,
    kinds: tuple[str, ...] = (),
    progress: bool = True,
    stop_after_shards: int | None = None,
    plays: PlaySelection | None = None,
) -> dict[str, Any]:
    """Write (or complete) at ``directory`` the positions of ``source`` (of ``kinds``, all when empty)
    labelled by ``labeller``, in this process; returns the new manifest. ``labeller`` must have an
    ``evaluator`` (its model, for ``zero_ply``). ``stop_after_shards``: stop after that many new shards
    (the tests' kill). ``bgtrain.distributed.datasets.relabel_dataset_distributed`` makes the same
    files on an executor."""
    with relabel_job(directory, source, labeller.describe(), kinds, plays) as job:
        bar = job.progress_bar(progress)
        for entry in job.todo[:stop_after_shards]:
            started = time.perf_counter()
            tensors = read_shard(job.source / entry["file"], entry)
            labelled, label_seconds = relabel_shard(tensors, labeller, kinds, plays, entry["index"], bar)
            new_entry = write_shard(job.directory, entry["index"], labelled)
            new_entry.update(label_seconds=round(label_seconds, 3), seconds=round(time.perf_counter() - started, 3))
            job.record(entry, new_entry)
            bar.set_postfix_str(f"{new_entry['positions'] / max(label_seconds, 1e-9):,.0f} labels/s")
        bar.close()
        return job.finish()


def _sha256(path: Path) -> str | None:
    """The sha256 of the file at ``path``, None when it is missing."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _kept(entry: dict[str, Any], kinds: tuple[str, ...]) -> int:
    """Positions of a source shard that a relabelling of ``kinds`` keeps (from its manifest entry)."""
    if not kinds:
        return int(entry["positions"])
    return sum(count for kind, count in entry["kinds"].items() if kind in kinds)


def _labels(positions: torch.Tensor, labeller: Labeller, bar=None) -> dict[str, torch.Tensor]:
    """``targets``, ``standard_errors`` and ``zero_ply`` of ``positions``, ``CANDIDATE_CHUNK`` at a time."""
    parts: dict[str, list[torch.Tensor]] = {"targets": [], "standard_errors": [], "zero_ply": []}
    for chunk in positions.split(CANDIDATE_CHUNK):
        targets, errors = labeller.label(chunk)
        parts["targets"].append(targets.to(torch.float32).clamp(0.0, 1.0))  # roll averages can round past 1
        parts["standard_errors"].append(errors.to(torch.float32))
        parts["zero_ply"].append(labeller.evaluator.probabilities(chunk, 0).to(torch.float32))
        if bar is not None:
            bar.update(chunk.shape[0])
    if not positions.shape[0]:
        empty = torch.zeros((0, 5), dtype=torch.float32)
        return {name: empty for name in parts}
    return {name: torch.cat(values) for name, values in parts.items()}
