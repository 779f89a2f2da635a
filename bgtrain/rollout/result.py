"""A rollout's result: every trial's outcome kept, so that shards merge exactly, and its statistics.

Trials are indexed globally (``first_trial`` .. ``first_trial + trials - 1``); each one's values are
a deterministic function of (seed, dice stream, trial index) and the evaluator, so results of
disjoint, adjacent trial ranges concatenate into exactly the result of the whole range
(``RolloutResult.merge``), in any order of arrival.

Statistics: means over trials and their standard errors, ``std / sqrt(trials)`` (sample standard
deviation). Stratified first rolls make the true error somewhat smaller than this, so the reported
error is on the safe side.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import torch

from bgtrain.outcomes import cubeless_equity
from engine.rules import Rules


def mean_and_error(values: torch.Tensor, dim: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean over ``dim`` and its standard error (NaN with one sample)."""
    count = values.shape[dim]
    mean = values.mean(dim)
    if count < 2:
        return mean, torch.full_like(mean, math.nan)
    return mean, values.std(dim) / math.sqrt(count)


@dataclass(frozen=True)
class RolloutResult:
    """Per-trial results of rolling out P positions, trials ``first_trial .. first_trial + T - 1``.

    ``boards: int8[P, 28]`` the positions (side to move before its roll); ``outcomes: float64[P, T, 5]``
    each trial's outcome probabilities for that side, luck subtracted when variance reduction was on
    (so single trials may leave [0, 1]); ``raw_outcomes`` the same without the luck correction;
    ``cubeful: float64[P, T]`` (cubeful rollouts only) money points won, divided by the initial cube,
    luck subtracted, and ``raw_cubeful``; ``plies: int32[P, T]`` the plies each trial played.
    ``settings`` (``RolloutSettings``), ``seed`` and ``streams`` (the dice streams) say how it was made.
    """

    boards: torch.Tensor
    first_trial: int
    outcomes: torch.Tensor
    raw_outcomes: torch.Tensor
    plies: torch.Tensor
    cubeful: torch.Tensor | None
    raw_cubeful: torch.Tensor | None
    settings: object
    seed: int
    streams: torch.Tensor
    rules: Rules

    @property
    def trials(self) -> int:
        return self.outcomes.shape[1]

    @property
    def positions(self) -> int:
        return self.outcomes.shape[0]

    def probabilities(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The five outcome probabilities and their standard errors: ``float64[P, 5]`` each."""
        return mean_and_error(self.outcomes)

    def equity_per_trial(self, raw: bool = False) -> torch.Tensor:
        """Cubeless equity of each trial: ``float64[P, T]``."""
        return cubeless_equity(self.raw_outcomes if raw else self.outcomes, self.rules)

    def equity(self, raw: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Cubeless equity and its standard error: ``float64[P]`` each (``raw``: without the luck
        correction, i.e. a plain rollout of the same games)."""
        return mean_and_error(self.equity_per_trial(raw))

    def cubeful_equity(self, raw: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Cubeful money equity (points per initial cube) and its standard error: ``float64[P]`` each."""
        if self.cubeful is None:
            raise ValueError("this rollout was cubeless: roll out with the cube for a cubeful equity")
        return mean_and_error(self.raw_cubeful if raw else self.cubeful)

    def headline(self, raw: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """The equity a rollout is judged by: cubeful with the cube, else cubeless."""
        return self.cubeful_equity(raw) if self.cubeful is not None else self.equity(raw)

    def select_trials(self, start: int, stop: int) -> RolloutResult:
        """The trials with global index in ``[start, stop)`` (within this result's range)."""
        lo, hi = start - self.first_trial, stop - self.first_trial
        if not 0 <= lo <= hi <= self.trials:
            raise ValueError(f"trials [{start}, {stop}) are not within [{self.first_trial}, "
                             f"{self.first_trial + self.trials})")

        def cut(tensor):
            return None if tensor is None else tensor[:, lo:hi]

        return replace(self, first_trial=start, outcomes=cut(self.outcomes), raw_outcomes=cut(self.raw_outcomes),
                       plies=cut(self.plies), cubeful=cut(self.cubeful), raw_cubeful=cut(self.raw_cubeful))

    @staticmethod
    def merge(parts: list[RolloutResult]) -> RolloutResult:
        """Results of adjacent, disjoint trial ranges of the same rollout (same positions, settings,
        seed and dice streams), in any order -> the result of their union."""
        if not parts:
            raise ValueError("nothing to merge")
        parts = sorted(parts, key=lambda part: part.first_trial)
        first = parts[0]
        for before, after in itertools.pairwise(parts):
            if after.first_trial != before.first_trial + before.trials:
                raise ValueError(f"trial ranges do not join: [{before.first_trial}, "
                                 f"{before.first_trial + before.trials}) then [{after.first_trial}, ...)")
        for part in parts[1:]:
            same = (part.settings == first.settings and part.seed == first.seed and part.rules == first.rules
                    and torch.equal(part.boards, first.boards) and torch.equal(part.streams, first.streams))
            if not same:
                raise ValueError("only shards of the same rollout (positions, settings, seed, dice) merge")

        def join(name):
            tensors = [getattr(part, name) for part in parts]
            return None if tensors[0] is None else torch.cat(tensors, 1)

        return replace(first, outcomes=join("outcomes"), raw_outcomes=join("raw_outcomes"), plies=join("plies"),
                       cubeful=join("cubeful"), raw_cubeful=join("raw_cubeful"))
