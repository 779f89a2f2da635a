"""The search's inner best-play choices, pruned as GNU Backgammon prunes them.

Below the root of an n-ply search, every position needs each roll's best play at 0-ply (the
evaluator's ``deep_replies=False``, GNU Backgammon's ``FindBestMoveInEval``). Valuing every one of a
roll's 20-40 plays with the full model is most of the search's network work, so, as GNU Backgammon
does: where a roll has more than ``more_than`` plays, all of them are scored by the cheap pruning
networks (``bgtrain.model.pruning``), only the ``keep`` best of those are valued by the full model, and
the best of them by the full model's 0-ply is the reply. A roll with ``more_than`` plays or fewer is
valued in full, as without pruning. The defaults are GNU Backgammon's numbers: prune above 16 plays
to the best 5.

The full stage is the evaluator's ``StaticValue`` (databases, clamps, exact ends), so pruning can only
differ from the exact choice where the pruning networks rank the model's best play below ``keep``. The
cheap stage is the bare pruning networks, except that a play bearing off the last checker ranks first:
the databases' lookups and the clamps cost twice the tiny networks themselves (measured: 11.1 ms
against 3.6 ms for 900 plays), and a bear-off's few best by the race pruning network still reach the
databases in the full stage. The root's move filter is not pruned: it ranks every legal play by the
full model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bgtrain.outcomes import NUM_OUTCOMES, cubeless_equity, flip_outcomes
from bgtrain.values.static_value import StaticValue, ValueFunction, once_each
from engine.movegen import Afterstates, argmax_per_position, rank_per_position
from engine.position_facts import mover_finished
from engine.rules import Rules


@dataclass(frozen=True)
class PlayPruning:
    """Where a roll has more than ``more_than`` plays, only the pruning networks' ``keep`` best are
    valued by the full model. Defaults: GNU Backgammon's (more than 16 plays, the best 5)."""

    keep: int = 5
    more_than: int = 16

    def __post_init__(self) -> None:
        for name in ("keep", "more_than"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "keep" else 0):
                raise ValueError(f"play pruning: {name} must be an integer >= {1 if name == 'keep' else 0}, "
                                 f"not {value!r}")


GNU_PRUNING = PlayPruning()  # the evaluator's default (frozen: safe to share)


def pruning_scores(cheap: ValueFunction, afterstates: torch.Tensor, rules: Rules) -> torch.Tensor:
    """The cheap stage's ranking score of ``int8[N, 28]`` afterstates: the pruning networks' cubeless
    equity for the side that played, +inf for a play that bore off the last checker: ``float32[N]``."""
    equity = cubeless_equity(flip_outcomes(cheap.evaluate_flipped(afterstates).to(torch.float32)), rules)
    return equity.masked_fill(mover_finished(afterstates), float("inf"))


def pruned_best_plays(afterstates: Afterstates, full: StaticValue, cheap: ValueFunction, pruning: PlayPruning,
                      rules: Rules) -> tuple[torch.Tensor, torch.Tensor]:
    """Each position's best play at 0-ply among those pruning keeps (``int64[B]``, an index into its
    afterstates) and the full model's outcomes of it (``float32[B, 5]``, for the side that played).

    Repeated afterstates (the same reply after different plays and rolls) are valued once by the full
    model (``once_each``); the cheap networks value every row, as hashing costs them more than it saves."""
    rows = afterstates.total
    device = afterstates.boards.device
    many = afterstates.counts[afterstates.position] > pruning.more_than
    crowded = many.nonzero(as_tuple=True)[0]
    kept = ~many
    if crowded.numel():
        # Rows of rolls with few plays are not scored: every one of them stays.
        cheap_score = torch.zeros(rows, dtype=torch.float32, device=device)
        cheap_score[crowded] = pruning_scores(cheap, afterstates.boards[crowded], rules)
        kept |= rank_per_position(cheap_score, afterstates) < pruning.keep
    kept_rows = kept.nonzero(as_tuple=True)[0]
    outcomes = torch.zeros(rows, NUM_OUTCOMES, dtype=torch.float32, device=device)
    outcomes[kept_rows] = once_each(full.afterstates, afterstates.boards[kept_rows])
    score = torch.where(kept, cubeless_equity(outcomes, rules), float("-inf"))
    choice = argmax_per_position(score, afterstates)
    return choice, outcomes[afterstates.offsets + choice]
