"""The positions of a labelled dataset where a cheap and a deeper evaluation disagree, split for relabelling.

A deep label (2-ply, a rollout) costs a hundred times a shallow one, so it should go where it carries
information: where the model's 0-ply is wrong. A dataset labelled by a model at 1-ply already holds both
views of each position (``targets``: the labeller's; ``zero_ply``: its model's 0-ply), so the
disagreement is free to read. ``select_disagreements`` keeps the positions whose two cubeless equities
differ by more than ``threshold``, and each other position with probability ``keep`` (so the set still
covers positions the model values well), shuffles them, and writes them as ``parts`` datasets of small
shards (``OUT-0``, ``OUT-1``, ...; ``OUT`` itself for one part): one for each process that relabels them
(``bgtrain dataset relabel`` in process labels one dataset; with ``--executor ray`` one dataset's shards
spread over every worker), and a kill loses one small shard.

The new datasets keep the source's labels, its labeller, how its positions were found and add
``selected`` (the source, the rule, the settings) to its ``settings``. Selection is a function of the
source and the settings (``seed`` draws the others and the order); a rerun with the same arguments finds
the datasets written and leaves them, and another selection into the same directories is refused.

Two teachers give a second view: ``against``, a relabelling of the same positions by another labeller
(``bgtrain dataset relabel``, shard for shard, so row for row), takes the place of the 0-ply, and the
positions kept are those where the two teachers disagree: where neither alone should be trusted, and a
deeper third label settles it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from bgtrain.datasets.shards import (
    FORMAT_VERSION,
    MANIFEST,
    MANIFEST_FORMAT,
    SHARD_FIELDS,
    Dataset,
    load_datasets,
    read_manifest,
    write_manifest,
    write_shard,
)
from bgtrain.outcomes import cubeless_equity
from engine.variants import get_rules

RULE = "kept where |labeller's cubeless equity - its model's 0-ply| > threshold, others at the rate keep"
RULE_AGAINST = "kept where |labeller's cubeless equity - the other labelling's| > threshold, others at the rate keep"


@dataclass(frozen=True)
class SelectionSettings:
    threshold: float = 0.03
    """Cubeless equity by which the label and the 0-ply must differ for a position to be kept."""
    keep: float = 0.15
    """Probability that any other position is kept."""
    parts: int = 2
    """Datasets written (one for each relabelling process)."""
    shard_size: int = 5000
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.threshold >= 0:
            raise ValueError(f"select: threshold must be >= 0, not {self.threshold!r}")
        if not 0 <= self.keep <= 1:
            raise ValueError(f"select: keep must be a probability in [0, 1], not {self.keep!r}")
        for name in ("parts", "shard_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"select: {name} must be an integer >= 1, not {value!r}")


def part_directories(out: str | Path, parts: int) -> list[Path]:
    """The datasets a selection into ``out`` writes: ``OUT-0`` ... ``OUT-{parts - 1}``; one part is ``OUT``
    itself (for a relabelling that spreads its shards over workers, ``relabel --executor ray``)."""
    out = Path(out)
    return [out] if parts == 1 else [out.with_name(f"{out.name}-{part}") for part in range(parts)]


def selected_rows(targets: torch.Tensor, other: torch.Tensor, rules, settings: SelectionSettings) -> torch.Tensor:
    """Indices of the kept rows, in the shuffled order they are written (``int64[K]``); ``other`` is the
    second view of each row (its model's 0-ply, or another teacher's label)."""
    difference = (cubeless_equity(targets, rules) - cubeless_equity(other, rules)).abs()
    generator = torch.Generator().manual_seed(settings.seed)
    drawn = torch.rand(targets.shape[0], generator=generator) < settings.keep
    rows = torch.nonzero((difference > settings.threshold) | drawn).squeeze(1)
    return rows[torch.randperm(rows.numel(), generator=generator)]


def select_disagreements(source: str | Path, out: str | Path, settings: SelectionSettings,
                         against: str | Path | None = None) -> list[dict[str, Any]]:
    """Write the selection of ``source`` (a dataset directory) as ``settings.parts`` datasets beside
    ``out`` (``part_directories``); returns their manifests. ``against``: a relabelling of ``source``'s
    positions whose labels take the place of the 0-ply."""
    origin = read_manifest(source)
    if against is None and origin["labeller"].get("ply") == 0:
        raise ValueError(f"select: {source} is labelled at 0-ply, so its labels and 0-ply never disagree; "
                         "select from a dataset labelled deeper (bgtrain dataset relabel --labeller ply:1)")
    if against is None:
        selected = {"from": str(source), "rule": RULE, **asdict(settings)}
    else:
        other = read_manifest(against)
        selected = {"from": str(source), "against": str(against), "against_labeller": other["labeller"],
                    "rule": RULE_AGAINST, **asdict(settings)}
    header = {"format": MANIFEST_FORMAT, "format_version": FORMAT_VERSION, "labeller": origin["labeller"],
              "source_model": origin["source_model"], "rules": origin["rules"],
              "settings": {**origin.get("settings", {}), "selected": selected}, "seed": origin["seed"],
              "shard_size": settings.shard_size}
    directories = part_directories(out, settings.parts)
    done = [directory for directory in directories if (directory / MANIFEST).exists()]
    for directory in done:
        if read_manifest(directory).get("settings") != header["settings"]:
            raise ValueError(f"select: {directory} holds another dataset; choose a new --out")
    if len(done) == len(directories):
        return [read_manifest(directory) for directory in directories]

    data = load_datasets(source)
    rows = selected_rows(data.targets, data.zero_ply if against is None else _other_labels(data, against),
                         get_rules(origin["rules"]), settings)
    shards = rows.split(settings.shard_size)
    manifests = []
    for part, directory in enumerate(directories):
        if directory in done:
            manifests.append(read_manifest(directory))
            continue
        directory.mkdir(parents=True, exist_ok=True)
        entries = []
        for index, shard_rows in enumerate(shards[part :: settings.parts]):
            entry = write_shard(directory, index, {name: getattr(data, name)[shard_rows] for name in SHARD_FIELDS})
            entry.update(candidates=int(shard_rows.numel()), label_seconds=0.0, seconds=0.0)
            entries.append(entry)
        # The manifest last: a directory without one is incomplete and written again by a rerun.
        manifest = {**header, "shards_planned": len(entries), "shards": entries}
        write_manifest(directory, manifest)
        manifests.append(read_manifest(directory))
    return manifests


def _other_labels(data: Dataset, against: str | Path) -> torch.Tensor:
    """The labels ``against`` gives ``data``'s positions, row for row; refused unless it holds exactly
    the same positions in the same order (a relabelling of the whole source)."""
    other = load_datasets(against)
    if not torch.equal(other.positions, data.positions):
        raise ValueError(f"select: {against} does not hold the source's positions row for row; "
                         "give a relabelling of the whole source (bgtrain dataset relabel SOURCE with no --kinds)")
    return other.targets
