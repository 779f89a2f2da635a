"""Dataset generation, labelling and relabelling as jobs of whole dataset shards, on any executor.

``DATASET_SHARD``: shard k of a dataset (``bgtrain.datasets.generate.generate_shard``, a function of
the settings and k alone). Context: the model (``model_recipe``: a checkpoint's architecture and
weights as numpy arrays, or an ONNX export's bytes; its variant; the bear-off databases' bytes), the
labeller's description (its ``describe()``; the worker rebuilds it on the evaluator it prepared, so a
``ply:N`` labeller at the selection ply reuses the selection's evaluation exactly as in process) and
the generation settings. Task: ``index``. Result: the shard file's bytes (``uint8[n]``; the worker
serialises the shard itself, with the function an in-process generation writes it with, so the bytes
are the same) and its manifest entry.

The driver alone writes: each shard atomically as its result arrives, then the manifest that lists it
(``bgtrain.datasets.shards``: a shard not in the manifest is ignored and rewritten). A killed driver,
rerun with the same command, skips the shards its manifest lists; a shard whose worker died runs again
elsewhere, and its result is taken once, so no shard is written twice.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bgtrain.datasets.generate import (
    GenerationSettings,
    dataset_header,
    dataset_lock,
    generate_shard,
    open_dataset,
    record_shard,
)
from bgtrain.datasets.labellers import labeller_from_description
from bgtrain.datasets.plays import PlaySelection
from bgtrain.datasets.relabel import SOURCE_FIELDS, relabel_job, relabel_shard
from bgtrain.datasets.shards import MANIFEST, read_manifest, read_shard, shard_bytes, shard_entry, shard_name
from bgtrain.distributed.executor import Executor, InProcessExecutor, WorkUnit, run_tasks
from bgtrain.distributed.rollouts import evaluator_from_recipe, model_recipe
from bgtrain.files import atomic_write
from engine.variants import get_rules


def dataset_context(recipe: dict, labeller: dict[str, Any], settings: GenerationSettings) -> dict:
    return {"recipe": recipe, "labeller": labeller, "settings": asdict(settings)}


def _prepare_dataset(context: dict, device: str) -> dict:
    evaluator = evaluator_from_recipe(context["recipe"], device)
    return {"evaluator": evaluator, "labeller": labeller_from_description(context["labeller"], evaluator),
            "settings": GenerationSettings(**context["settings"])}


def make_dataset_shard(prepared: dict, task: dict) -> dict:
    started = time.perf_counter()
    index = task["index"]
    tensors, label_seconds, candidates = generate_shard(prepared["evaluator"], prepared["labeller"],
                                                        prepared["settings"], index)
    serialised = shard_bytes(index, tensors)
    data = np.frombuffer(serialised, dtype=np.uint8)
    entry = shard_entry(index, tensors, serialised)
    entry.update(candidates=candidates, label_seconds=round(label_seconds, 3),
                 seconds=round(time.perf_counter() - started, 3))
    return {"shard": data, "entry": entry}


DATASET_SHARD = WorkUnit("dataset_shard", _prepare_dataset, make_dataset_shard)


def generate_dataset_distributed(
    directory: str | Path,
    model: str | Path,
    labeller: dict[str, Any],
    settings: GenerationSettings,
    source_model: str = "",
    executor: Executor | None = None,
    progress: bool = True,
    stop_after_shards: int | None = None,
    recipe: dict | None = None,
) -> dict[str, Any]:
    """``generate_dataset`` with the shards made by ``executor`` (default: in process) on the model file
    ``model``, labelled by the labeller that ``labeller`` (a ``describe()``) describes, which must label
    with that same model. The same files as ``generate_dataset`` for the same settings; returns the
    manifest. ``stop_after_shards``: write at most that many new shards (the tests' stand-in for a kill)."""
    from tqdm import tqdm

    if "model" in labeller and labeller["model"] != source_model:  # a labeller of ours labels with the self-play model
        raise ValueError(f"on an executor the labeller labels with the self-play model {source_model!r}, "
                         f"not {labeller.get('model')!r}")
    executor = executor or InProcessExecutor()
    recipe = recipe or model_recipe(model)
    directory = Path(directory)
    header = dataset_header(labeller, source_model, get_rules(recipe["variant"]).name, settings)
    with dataset_lock(directory):
        manifest = open_dataset(directory, header)
        done = {shard["index"] for shard in manifest["shards"]}
        todo = [index for index in range(settings.shards) if index not in done][:stop_after_shards]
        shared = executor.share(dataset_context(recipe, labeller, settings))
        bar = tqdm(total=settings.positions, initial=sum(s["positions"] for s in manifest["shards"]),
                   unit="pos", disable=not progress, dynamic_ncols=True)
        for index, result in run_tasks(executor, DATASET_SHARD, shared, [(index, {"index": index}) for index in todo]):
            entry = dict(result["entry"])
            atomic_write(directory / shard_name(index), result["shard"].tobytes())
            record_shard(directory, manifest, entry)
            bar.update(entry["positions"])
            bar.set_postfix_str(f"{entry['positions'] / max(entry['label_seconds'], 1e-9):,.0f} labels/s")
        bar.close()
        return read_manifest(directory) if (directory / MANIFEST).exists() else manifest


# --- relabelling -------------------------------------------------------------------------------------
#
# ``RELABEL_SHARD``: shard k of a relabelled dataset (``bgtrain.datasets.relabel.relabel_shard``, a
# function of the source shard's positions and k). Context: the labelling model's recipe, the labeller's
# description, the kinds kept and the play selection (or None). Task: ``index`` and the source shard's
# ``SOURCE_FIELDS`` (positions, kinds and a plays dataset's groups; the driver reads the source, so
# workers need not see its files). Result: the new shard's bytes and manifest entry, as for generation;
# the driver writes and records them.


def relabel_context(recipe: dict, labeller: dict[str, Any], kinds: tuple[str, ...],
                    plays: PlaySelection | None) -> dict:
    return {"recipe": recipe, "labeller": labeller, "kinds": list(kinds),
            "plays": None if plays is None else asdict(plays)}


def _prepare_relabel(context: dict, device: str) -> dict:
    evaluator = evaluator_from_recipe(context["recipe"], device)
    return {"labeller": labeller_from_description(context["labeller"], evaluator), "kinds": tuple(context["kinds"]),
            "plays": None if context["plays"] is None else PlaySelection(**context["plays"])}


def make_relabelled_shard(prepared: dict, task: dict) -> dict:
    started = time.perf_counter()
    index = task["index"]
    source = {name: torch.from_numpy(task[name]) for name in SOURCE_FIELDS if name in task}
    tensors, label_seconds = relabel_shard(source, prepared["labeller"], prepared["kinds"], prepared["plays"], index)
    serialised = shard_bytes(index, tensors)
    entry = shard_entry(index, tensors, serialised)
    entry.update(label_seconds=round(label_seconds, 3), seconds=round(time.perf_counter() - started, 3))
    return {"shard": np.frombuffer(serialised, dtype=np.uint8), "entry": entry}


RELABEL_SHARD = WorkUnit("relabel_shard", _prepare_relabel, make_relabelled_shard)


def relabel_dataset_distributed(
    directory: str | Path,
    source: str | Path,
    model: str | Path,
    labeller: dict[str, Any],
    kinds: tuple[str, ...] = (),
    plays: PlaySelection | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    stop_after_shards: int | None = None,
    recipe: dict | None = None,
) -> dict[str, Any]:
    """``relabel_dataset`` with the shards labelled by ``executor`` (default: in process) on the model
    file ``model``, by the labeller that ``labeller`` (a ``describe()`` of one on that model) describes:
    the same files; returns the manifest. Labelling is the whole cost (a 2-ply label is about a
    hundred 0-ply evaluations), so shards spread over workers scale it with the cores or GPUs. ``recipe``:
    ``model_recipe(model)`` when the caller has read it already."""
    if "model" in labeller and labeller["model"] != str(model):  # GNU Backgammon labels with no model of ours
        raise ValueError(f"the labeller labels with {labeller.get('model')!r}, not the model given, {str(model)!r}")
    executor = executor or InProcessExecutor()
    with relabel_job(directory, source, labeller, kinds, plays) as job:
        shared = executor.share(relabel_context(recipe or model_recipe(model), labeller, kinds, plays))
        sources = {entry["index"]: entry for entry in job.todo}

        def tasks():  # each source shard read when its task is submitted: a window of them in memory
            for entry in job.todo[:stop_after_shards]:
                tensors = read_shard(job.source / entry["file"], entry)
                yield entry["index"], {"index": entry["index"],
                                       **{name: tensors[name].numpy() for name in SOURCE_FIELDS if name in tensors}}

        bar = job.progress_bar(progress)
        for index, result in run_tasks(executor, RELABEL_SHARD, shared, tasks()):
            entry = dict(result["entry"])
            atomic_write(job.directory / shard_name(index), result["shard"].tobytes())
            job.record(sources[index], entry)
            bar.update(entry["positions"])
            bar.set_postfix_str(f"{entry['positions'] / max(entry['label_seconds'], 1e-9):,.0f} labels/s")
        bar.close()
        return job.finish()
