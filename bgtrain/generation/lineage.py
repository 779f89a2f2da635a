"""The lineage file of a generation, in the form of ``checkpoints/lineage/*.json``: the model and its
sha256, the plan, every command with its seconds, each dataset's manifest, each network's training, the
benchmark's error rates and the head-to-head results with their 95% intervals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bgtrain.files import atomic_write
from bgtrain.generation.config import GenerationConfig, dataset_reference
from bgtrain.generation.stages import Stage, bench_json, benchmark_json, model_path
from bgtrain.generation.state import file_sha256
from bgtrain.training.run_directory import code_version


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _model(path: str) -> dict[str, Any]:
    return {"path": path, "sha256": file_sha256(path) if Path(path).is_file() else None}


def _dataset(plan: GenerationConfig, name: str, record: dict[str, Any] | None) -> dict[str, Any]:
    manifest = _read_json(plan.dataset_path(name) / "manifest.json") or {}
    shards = manifest.pop("shards", [])
    return {"path": str(plan.dataset_path(name)), "commands": record["commands"] if record else [],
            "stage_seconds": record["seconds"] if record else None, "manifest": manifest, "shards": len(shards),
            "seconds": round(sum(shard.get("seconds", 0) for shard in shards), 1),
            "label_seconds": round(sum(shard.get("label_seconds", 0) for shard in shards), 1)}


def _network(plan: GenerationConfig, phase: str, member: int, key: str,
             records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from bgtrain.model.checkpoint import load_checkpoint

    section = plan.phases[phase][member]
    final = plan.network_file(phase, member)
    payload = load_checkpoint(final)
    train, init = records.get(f"train:{key}", {}), records.get(f"init:{key}")
    reshaped = f", widened to {section.widen} units" if section.widen else ""
    reshaped += f", {section.deepen} hidden layer(s) deeper" if section.deepen else ""
    if section.deepen_width:
        reshaped += f", {section.deepen_width} wide, random"
    init_from = (f"{section.init_from}: member {section.init_member} of its {phase} networks{reshaped}"
                 if section.init_member >= 0 else section.init_from or "scratch")
    if not section.train:
        return {"phase": phase, "trained": False, "init_from": init_from, "start": plan.start(phase, member),
                "init_commands": init["commands"] if init else [], "model": payload.get("model"),
                "sha256": file_sha256(final)}
    counters, strength = payload.get("counters", {}), payload.get("strength", {})
    return {
        "phase": phase,
        "config": str(plan.generation.home / "configs" / f"{key}.toml"),
        "resolved_config": payload.get("config"),  # as the checkpoint stores it: the lineage needs no run directory
        "commands": train.get("commands", []),
        "trained": True,
        "init_from": init_from,
        "start": plan.start(phase, member),
        "init_commands": init["commands"] if init else [],
        "model": payload.get("model"),
        "sha256": file_sha256(final),
        "train_seconds": round(float(counters.get("train_seconds", 0.0)), 1),
        "stage_seconds": train.get("seconds"),
        "epochs": counters.get("epochs"),
        "positions_seen": counters.get("positions"),
        "heldout_loss": strength.get("heldout_loss"),
        "heldout_within_roll_error": strength.get("heldout_within_roll_error"),  # x 1000; with plays datasets
        "datasets": [dataset_reference(plan, reference) for reference in section.datasets],
        "code_version": payload.get("code_version"),
    }


def _pruning(plan: GenerationConfig, records: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """How the pruning networks were made: the command, and the record the model keeps of their training
    (settings, positions, each phase's held-out loss and equity error against the model)."""
    if not plan.pruning.enabled:
        return None
    from bgtrain.model.checkpoint import load_checkpoint
    from bgtrain.model.pruning import PRUNING

    return {"commands": records.get("prune", {}).get("commands", []),
            "trained": load_checkpoint(model_path(plan)).get(PRUNING, {}).get("trained")}


def write_lineage(path: Path, plan: GenerationConfig, config_path: str, command_line: str,
                  records: list[dict[str, Any]], stages: list[Stage], skipped: dict[str, str]) -> Path:
    by_name = {record["name"]: record for record in records}
    generation = plan.generation
    head_to_head = []
    for entry in plan.head_to_head:
        name = f"bench:{entry.label}"
        row: dict[str, Any] = {"opponent": entry.opponent, "games": entry.games, "seed": entry.seed,
                               "ply": entry.ply}
        if name in skipped:
            row["skipped"] = skipped[name]
        else:
            result = _read_json(bench_json(plan, entry)) or {}
            row.update({"commands": by_name.get(name, {}).get("commands", []),
                        "points_per_game": result.get("points_per_game"), "interval95": result.get("interval95"),
                        "result": result})
        head_to_head.append(row)
    lineage = {
        "model": generation.model,
        "sha256": file_sha256(generation.model),
        "kind": "phase model: one network a phase, each trained by supervised learning on this generation's labels",
        "generation": generation.name,
        "built_with": command_line or f"python scripts/generation.py --config {config_path}",
        "config": {"path": config_path,
                   "sha256": file_sha256(config_path) if Path(config_path).is_file() else None,
                   "plan_sha256": plan.digest, "plan": plan.to_dict()},
        "code_version": code_version(),
        "self_play_model": _model(generation.self_play_model),
        "dataset_models": {entry.name: _model(entry.model) for entry in plan.datasets if entry.model},
        "labelling_model": _model(generation.labelling_model),
        "datasets": {entry.name: _dataset(plan, entry.name, by_name.get(f"dataset:{entry.name}"))
                     for entry in plan.datasets},
        "relabelled": {entry.name: {"from": entry.source,
                                    **_dataset(plan, entry.name, by_name.get(f"relabel:{entry.name}"))}
                       for entry in plan.relabel},
        "plays": {entry.name: {"from": entry.source, **_dataset(plan, entry.name, by_name.get(f"plays:{entry.name}"))}
                  for entry in plan.plays},
        "selected": {entry.name: {"from": entry.source, **_dataset(plan, entry.name, by_name.get(f"select:{entry.name}"))}
                     for entry in plan.select},
        "networks": {key: _network(plan, phase, member, key, by_name) for phase, member, key in plan.networks()},
        "combined_with": by_name.get("combine", {}).get("commands", []),
        "pruning": _pruning(plan, by_name),
        "benchmark": ({"commands": by_name.get("benchmark", {}).get("commands", []),
                       "results": _read_json(benchmark_json(plan))} if plan.benchmark.enabled else None),
        "head_to_head": head_to_head,
        "stages": [{key: record[key] for key in ("name", "commands", "outputs", "seconds", "resumed")}
                   for record in records],
        "seconds": round(sum(record["seconds"] for record in records), 1),
        "stage_order": [stage.name for stage in stages],
    }
    return atomic_write(path, json.dumps(lineage, indent=1) + "\n")
