"""What gives a position its training target: the ``Labeller`` protocol, the n-ply and rollout labellers.

A labeller maps positions ``int8[N, 28]`` (side to move, before its roll) to targets ``float32[N, 5]``
(``bgtrain.outcomes``: cumulative outcome probabilities for the side to move) and their standard errors
``float32[N, 5]`` (0 for a deterministic evaluation; the rollout labeller of ``bgtrain.rollout`` gives
the standard error of its mean), and describes itself as plain data for the dataset's manifest.
"""

from __future__ import annotations

import zlib
from typing import Any, Protocol

import torch

from bgtrain.values.evaluator import Evaluator

# The rollout labeller's grammar, in every message that asks for one.
ROLLOUT_SPEC = "rollout:TRIALS[:truncate=K][:ply=N][:luck=pruned][:batch=B]"
LABELLER_SPECS = f"ply:N, {ROLLOUT_SPEC} or gnubg:N"


class Labeller(Protocol):
    def label(self, boards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``int8[N, 28]`` -> ``(targets float32[N, 5], standard_errors float32[N, 5])``."""
        ...

    def describe(self) -> dict[str, Any]:
        """Plain data for the manifest: ``{"kind": ..., ...}``."""
        ...


class PlyLabeller:
    """``Evaluator.probabilities`` at a fixed ply (bear-offs exact from the database at every ply)."""

    def __init__(self, evaluator: Evaluator, ply: int, model: str = "") -> None:
        self.evaluator = evaluator
        self.ply = evaluator.check_ply(ply)
        self.model = model

    def label(self, boards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        targets = self.evaluator.probabilities(boards, self.ply)
        return targets, torch.zeros_like(targets)

    def describe(self) -> dict[str, Any]:
        return {"kind": "ply", "ply": self.ply, "model": self.model}


class RolloutLabeller:
    """Rollout means (``bgtrain.rollout.rollout``, cubeless, variance-reduced) and their standard errors.

    ``trials`` per position, checker play at ``ply``, each trial ``truncate`` plies at most (None: to
    the end). The dice seed of a batch is ``seed`` mixed with a checksum of its boards, so the label
    of a batch is a function of the batch alone (a dataset shard stays a function of its seed and
    index) while different batches get different dice. With ``batch``, a larger call is rolled out
    ``batch`` positions at a time, each part as a call of its own (its own dice): the trials of a whole
    shard of thousands in lock step cost more a position (36 trials truncated at 7, the same 4,000
    contact positions: 0.34 s a position in one batch, 0.21 s in batches of 250). A luck-corrected
    mean may leave [0, 1] by a little: the targets are clamped into it; the errors are of the
    unclamped means.
    """

    def __init__(self, evaluator: Evaluator, trials: int, truncate: int | None = None, ply: int = 0,
                 model: str = "", seed: int = 0, pruned_luck: bool = False, batch: int | None = None) -> None:
        from bgtrain.rollout import RolloutSettings

        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 2:
            raise ValueError(f"a rollout labeller needs at least 2 trials for a standard error, not {trials!r}")
        if pruned_luck and evaluator.pruning_networks is None:
            raise ValueError(f"labeller 'rollout:{trials}:luck=pruned': {model or 'the model'} has no pruning networks "
                             "(bgtrain prune fits them)")
        self.evaluator = evaluator
        self.trials = trials
        self.settings = RolloutSettings(ply=evaluator.check_ply(ply), truncate=truncate, pruned_luck=pruned_luck)
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            raise ValueError(f"a rollout labeller's batch must be a positive number of positions, not {batch!r}")
        self.model = model
        self.seed = seed
        self.batch = batch

    @classmethod
    def from_spec(cls, argument: str, model: str, device: str = "cpu") -> RolloutLabeller:
        """``TRIALS[:truncate=K][:ply=N][:luck=pruned][:batch=B]``, e.g. ``1296:truncate=10``; ``luck=pruned``
        measures the variance reduction's luck on pruned plays (``RolloutSettings.pruned_luck``); ``batch=B``
        rolls out B positions at a time."""
        trials, *options = argument.split(":")
        if not trials.isdigit():
            raise ValueError(f"labeller 'rollout:{argument}': write {ROLLOUT_SPEC}, e.g. rollout:1296")
        values: dict[str, int | str] = {}
        for option in options:
            key, _, value = option.partition("=")
            known = value in ("full", "pruned") if key == "luck" else value.isdigit()
            if key not in ("truncate", "ply", "luck", "batch") or not known or key in values:
                raise ValueError(f"labeller 'rollout:{argument}': unknown or repeated option {option!r} "
                                 "(known: truncate=K, ply=N, luck=full or luck=pruned, batch=B)")
            values[key] = value if key == "luck" else int(value)
        return cls(Evaluator.from_path(model, device), int(trials), values.get("truncate"), values.get("ply", 0),
                   model, pruned_luck=values.get("luck") == "pruned", batch=values.get("batch"))

    def label(self, boards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.batch is not None and boards.shape[0] > self.batch:
            parts = [self._label(part) for part in boards.split(self.batch)]
            return torch.cat([mean for mean, _ in parts]), torch.cat([error for _, error in parts])
        return self._label(boards)

    def _label(self, boards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from bgtrain.rollout import rollout

        checksum = zlib.crc32(boards.to(torch.int8).cpu().numpy().tobytes())
        result = rollout(self.evaluator, boards, self.settings, seed=self.seed * (1 << 32) + checksum,
                         trials=self.trials)
        mean, error = result.probabilities()
        return mean.clamp(0.0, 1.0).to(torch.float32), error.to(torch.float32)

    def describe(self) -> dict[str, Any]:
        description = {"kind": "rollout", "trials": self.trials, "truncate": self.settings.truncate,
                       "ply": self.settings.ply, "seed": self.seed, "model": self.model}
        if self.settings.pruned_luck:  # only then: the descriptions of datasets labelled before stay as they were
            description["luck"] = "pruned"
        if self.batch is not None:  # the same
            description["batch"] = self.batch
        return description


class GnubgEvaluation:
    """GNU Backgammon's evaluation at any of its plies (``bgtrain.arena.gnubg``), with the one method of
    ``Evaluator`` that labelling uses: ``probabilities(boards, ply)``."""

    def __init__(self) -> None:
        from bgtrain.arena.gnubg import load_bindings

        self.bindings = load_bindings()

    def probabilities(self, boards: torch.Tensor, ply: int) -> torch.Tensor:
        from bgtrain.arena.gnubg import gnubg_probabilities

        return gnubg_probabilities(self.bindings, boards, ply)


class GnubgLabeller:
    """GNU Backgammon's cubeless probabilities at ``ply`` (its numbering: 0 is its net alone, with its
    bear-off databases): a teacher outside our models, the way bgsage learnt from GNU Backgammon's data.
    Standard rules (and nackgammon's board) only. Its ``evaluator`` gives the dataset's ``zero_ply``:
    GNU Backgammon's 0-ply, what its labels correct. Measured on one core (contact and race positions
    of self-play): 0-ply about 39,000 labels a second, 1-ply 570, 2-ply 41."""

    def __init__(self, ply: int) -> None:
        from bgtrain.arena.gnubg import PLIES

        if isinstance(ply, bool) or ply not in PLIES:
            raise ValueError(f"labeller 'gnubg:{ply}': GNU Backgammon labels at plies {', '.join(map(str, PLIES))}")
        self.ply = ply
        self.evaluator = GnubgEvaluation()

    def label(self, boards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        targets = self.evaluator.probabilities(boards, self.ply)
        return targets, torch.zeros_like(targets)

    def describe(self) -> dict[str, Any]:
        return {"kind": "gnubg", "ply": self.ply, "package": self.evaluator.bindings.package}


def labeller_from_spec(spec: str, model: str, device: str = "cpu") -> Labeller:
    """``"ply:N"`` -> a ``PlyLabeller`` on ``model`` at N plies; ``"rollout:TRIALS[:truncate=K][:ply=N][:luck=pruned][:batch=B]"``
    -> a ``RolloutLabeller``; ``"gnubg:N"`` -> a ``GnubgLabeller`` (``model`` unused). A ValueError
    names an unknown spec."""
    kind, _, argument = spec.partition(":")
    if kind == "ply":
        if not argument.isdigit():
            raise ValueError(f"labeller {spec!r}: write ply:N with N a non-negative integer, e.g. ply:1")
        return PlyLabeller(Evaluator.from_path(model, device), int(argument), model)
    if kind == "rollout":
        return RolloutLabeller.from_spec(argument, model, device)
    if kind == "gnubg":
        if not argument.isdigit():
            raise ValueError(f"labeller {spec!r}: write gnubg:N with N GNU Backgammon's ply, e.g. gnubg:2")
        return GnubgLabeller(int(argument))
    raise ValueError(f"unknown labeller {spec!r}; known: {LABELLER_SPECS}")


def labeller_from_description(description: dict[str, Any], evaluator: Evaluator) -> Labeller:
    """The labeller that ``describe()`` gave ``description``, on ``evaluator`` (its model's network, as
    rebuilt by a worker). A ply labeller on the self-play evaluator reuses the selection's evaluation."""
    kind = description.get("kind")
    if kind == "ply":
        return PlyLabeller(evaluator, description["ply"], description["model"])
    if kind == "rollout":
        return RolloutLabeller(evaluator, description["trials"], description["truncate"], description["ply"],
                               description["model"], description["seed"],
                               pruned_luck=description.get("luck") == "pruned", batch=description.get("batch"))
    if kind == "gnubg":
        return GnubgLabeller(description["ply"])
    raise ValueError(f"unknown labeller description {description!r}")
