"""A rollout reference for benchmark decisions: the top candidates of each decision rolled out.

The shipped benchmark's losses come from GNU Backgammon at 2-ply. That reference shares GNU 0-ply's
network, so it tends to forgive GNU 0-ply's own misjudgements. Rollouts are the independent ground
truth the field uses (GNU Backgammon's published benchmarks were rolled out). This module relabels a
decision set by rollouts:

* each decision keeps its ``top`` best-listed candidates (the existing reference only chooses which
  plays are rolled out; their order and losses come from the rollouts);
* every candidate's afterstate is rolled out from the opponent's side, all candidates of one decision
  on the same dice stream (common random dice: trial t of each candidate sees the same rolls, so the
  differences between candidates have a much smaller error than the equities), distinct decisions on
  distinct streams;
* a candidate's loss is the rollout equity of the decision's best candidate minus its own, and its
  standard error is that of the trial-by-trial difference; plays not kept are charged the worst kept
  loss when scored (``bgtrain.benchmark.scorer``), as for any decision set.

Decisions are rolled out ``batch`` at a time in one lock-step rollout; with ``work_dir`` each batch
is written as a shard (atomically) and a rerun with the same arguments skips the shards it finds, so a
killed relabelling resumes.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import torch

from bgtrain.benchmark.decisions import CLASSES, DecisionSet, concatenate, content_hash
from bgtrain.files import atomic_write
from bgtrain.outcomes import cubeless_equity, flip_outcomes
from bgtrain.rollout import RolloutSettings, rollout
from bgtrain.values.evaluator import Evaluator
from engine.board import flip_board


def keep_top(decisions: DecisionSet, top: int) -> DecisionSet:
    """Each decision with only its first ``top`` candidates (the best listed)."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be a positive number of candidates, not {top!r}")
    rank = torch.arange(decisions.candidate.shape[0]) - decisions.offsets[decisions.owner]
    kept = rank < top
    counts = decisions.counts.clamp(max=top)
    return DecisionSet(decisions.board, decisions.dice, decisions.kind, decisions.source, counts,
                       decisions.candidate[kept], decisions.loss[kept], decisions.equity[kept])


def _best_first(owner: torch.Tensor, equity: torch.Tensor) -> torch.Tensor:
    """The candidate order that groups decisions in order and puts each decision's candidates by
    decreasing equity, ties in their listed order (two stable sorts)."""
    order = torch.argsort(-equity, stable=True)
    return order[torch.argsort(owner[order], stable=True)]


def _relabel(decisions: DecisionSet, per_trial: torch.Tensor) -> tuple[DecisionSet, torch.Tensor, torch.Tensor]:
    """``decisions`` with losses and equities from ``per_trial: float64[C, T]`` (each candidate's equity
    for the mover, trial by trial), candidates re-sorted best first; each loss's standard error; and
    each candidate's mean equity over the even and over the odd trials (``float32[C, 2]``, for
    cross-fitted scoring: ``cross_fitted_losses``)."""
    equity = per_trial.mean(1)
    order = _best_first(decisions.owner, equity)
    per_trial = per_trial[order]
    best = per_trial[decisions.offsets[decisions.owner]]  # each decision's best candidate, trial by trial
    difference = best - per_trial
    trials = per_trial.shape[1]
    error = difference.std(1, correction=1) / trials ** 0.5 if trials > 1 else torch.zeros(per_trial.shape[0])
    relabelled = DecisionSet(decisions.board, decisions.dice, decisions.kind, decisions.source, decisions.counts,
                             decisions.candidate[order], difference.mean(1).clamp(min=0.0).float(),
                             equity[order].float())
    halves = torch.stack([per_trial[:, 0::2].mean(1), per_trial[:, 1::2].mean(1)], 1)
    return relabelled, error.float(), halves.float()


def rollout_decisions(evaluator: Evaluator, decisions: DecisionSet, settings: RolloutSettings, *, trials: int,
                      seed: int, first_stream: int = 0, device: torch.device | str = "cpu"
                      ) -> tuple[DecisionSet, torch.Tensor, torch.Tensor]:
    """Roll out every candidate of ``decisions`` (one lock-step batch; decision d on dice stream
    ``first_stream + d``): the relabelled set, each candidate's loss standard error and its equity over
    the even and the odd trials (``_relabel``)."""
    if trials < 2:
        raise ValueError(f"a rollout reference needs at least 2 trials, not {trials}")
    boards = flip_board(decisions.candidate.to(device))  # the opponent to move after each play
    streams = (decisions.owner + first_stream).to(boards.device)
    result = rollout(evaluator, boards, settings, seed=seed, trials=trials, streams=streams)
    per_trial = cubeless_equity(flip_outcomes(result.outcomes), evaluator.rules).cpu()
    return _relabel(decisions, per_trial)


def _shard_path(work_dir: Path, index: int) -> Path:
    return work_dir / f"shard-{index:05d}.npz"


def _save_shard(path: Path, decisions: DecisionSet, error: torch.Tensor, halves: torch.Tensor) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, counts=decisions.counts.numpy(), candidate=decisions.candidate.numpy(),
                        loss=decisions.loss.numpy(), equity=decisions.equity.numpy(), error=error.numpy(),
                        halves=halves.numpy())
    atomic_write(path, buffer.getvalue())


def _load_shard(path: Path, decisions: DecisionSet) -> tuple[DecisionSet, torch.Tensor, torch.Tensor]:
    with np.load(path) as data:
        counts = torch.from_numpy(data["counts"])
        if not torch.equal(counts, decisions.counts):
            raise ValueError(f"{path} belongs to another relabelling (its candidate counts differ); "
                             "use a new work directory")
        return (DecisionSet(decisions.board, decisions.dice, decisions.kind, decisions.source, counts,
                            torch.from_numpy(data["candidate"]), torch.from_numpy(data["loss"]),
                            torch.from_numpy(data["equity"])),
                torch.from_numpy(data["error"]), torch.from_numpy(data["halves"]))


def rollout_reference(evaluator: Evaluator, decisions: DecisionSet, settings: RolloutSettings, *, trials: int,
                      top: int, seed: int, batch: int = 16, work_dir: str | Path | None = None,
                      device: torch.device | str = "cpu", progress: bool = True, from_the_end: bool = False
                      ) -> tuple[DecisionSet, torch.Tensor, torch.Tensor]:
    """Relabel ``decisions`` by rollouts of their ``top`` candidates (see the module docstring): the
    new decision set, each candidate's loss standard error (``float32[C]``) and its equity over the
    even and the odd trials (``float32[C, 2]``).

    ``from_the_end`` rolls the batches out last first. A batch's dice depend only on its decisions'
    places in the set, not on the order of work, so a second process on the same ``work_dir`` going
    from the end meets the first in the middle, both skipping the shards the other wrote (at most the
    batch each is on when they meet is rolled out twice, to the same numbers)."""
    from tqdm import tqdm

    kept = keep_top(decisions, top)
    work_dir = Path(work_dir) if work_dir is not None else None
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
        signature = {"trials": trials, "top": top, "seed": seed, "batch": batch, "settings": settings.describe(),
                     "decisions": len(decisions), "decisions_sha256": content_hash(kept)}
        stamp = work_dir / "relabelling.json"
        if stamp.exists() and json.loads(stamp.read_text()) != signature:
            raise ValueError(f"{work_dir} holds a relabelling of other decisions or with other settings; "
                             "use a new work directory")
        atomic_write(stamp, (json.dumps(signature, indent=2) + "\n").encode())
    parts, errors, halves = [], [], []
    starts = range(0, len(kept), batch)
    bar = tqdm(total=len(kept), unit="decision", disable=not progress, dynamic_ncols=True)
    order = list(enumerate(starts))
    for shard, start in reversed(order) if from_the_end else order:
        part = kept.select(torch.arange(start, min(start + batch, len(kept))))
        path = _shard_path(work_dir, shard) if work_dir is not None else None
        if path is not None and path.exists():
            relabelled, error, half = _load_shard(path, part)
        else:
            relabelled, error, half = rollout_decisions(evaluator, part, settings, trials=trials, seed=seed,
                                                        first_stream=start, device=device)
            if path is not None:
                _save_shard(path, relabelled, error, half)
        parts.append(relabelled)
        errors.append(error)
        halves.append(half)
        bar.update(len(part))
        listed = torch.cat(errors)
        bar.set_postfix_str(f"mean loss se {float(listed[listed > 0].mean()) if (listed > 0).any() else 0:.4f}")
    bar.close()
    if from_the_end:
        parts, errors, halves = parts[::-1], errors[::-1], halves[::-1]
    return concatenate(parts), torch.cat(errors), torch.cat(halves)


def cross_fitted_losses(decisions: DecisionSet, halves: torch.Tensor) -> torch.Tensor:
    """Each candidate's loss measured on one half of the trials against the best chosen on the other
    half, averaged over the two ways round: ``float64[C]``, which may be negative.

    Why: the best of several noisy means is biased upwards, so losses against it charge even a perfect
    player about the noise (for two equal plays, the error over the root of pi). Choosing the best on
    independent trials removes that bias: what remains measures the loss against a play that is at
    worst slightly below the true best, so it errs low, never high."""
    owner = decisions.owner
    losses = []
    for choose, measure in ((0, 1), (1, 0)):
        order = _best_first(owner, halves[:, choose].double())
        best = torch.empty(len(decisions), dtype=torch.int64)
        best[:] = order[decisions.offsets]
        losses.append(halves[best[owner], measure].double() - halves[:, measure].double())
    return (losses[0] + losses[1]) / 2


def replace_classes(base: DecisionSet, relabelled: dict[str, DecisionSet]) -> DecisionSet:
    """``base`` with whole classes replaced by their relabelling: ``relabelled[name]`` must hold the
    same decisions (boards and rolls, in order) as ``base.of_class(name)``, else a ValueError names the
    class. The result holds the classes in the order of :data:`CLASSES`, each class's decisions in
    their order in ``base``; the classes not named keep their candidates and losses."""
    for name, part in relabelled.items():
        original = base.of_class(name)  # a ValueError for an unknown class name
        if len(part) != len(original):
            raise ValueError(f"the relabelled {name} decisions are {len(part)}, the base set has {len(original)}: "
                             "relabel the whole class")
        if not (torch.equal(part.board, original.board) and torch.equal(part.dice, original.dice)):
            raise ValueError(f"the relabelled {name} decisions are not the base set's {name} decisions")
    return concatenate([relabelled[name] if name in relabelled else base.of_class(name) for name in CLASSES])
