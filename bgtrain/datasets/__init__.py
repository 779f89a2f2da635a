"""Labelled position datasets: positions from noisy self-play, labelled by a deep evaluation, in shards.

``shards`` (the on-disk format: shard files and the manifest, written atomically, read back as
tensors), ``labellers`` (what gives a position its target: an n-ply ``Evaluator`` or a rollout,
through the ``Labeller`` protocol), ``generate`` (self-play with exploration, selection of the
positions where a cheap and a deep evaluation disagree, resumable and deterministic shard by shard).
The format is documented in ``docs/datasets.md``.
"""

from bgtrain.datasets.labellers import Labeller, PlyLabeller, labeller_from_spec
from bgtrain.datasets.shards import Dataset, load_datasets, read_manifest

__all__ = ["Dataset", "Labeller", "PlyLabeller", "labeller_from_spec", "load_datasets", "read_manifest"]
