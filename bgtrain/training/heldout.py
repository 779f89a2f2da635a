"""The held-out split of a supervised training's rows (``[supervised] heldout_fraction``, ``heldout_by``).

Two draws, both fixed by ``run.seed`` alone, so a resumed or repeated run holds out the same rows:

- ``heldout_by = "row"`` (the default, the split every training before ``heldout_by`` used): each row, or each
  move choice's group of a plays dataset (whole groups), is drawn on its own. A position that two rows hold
  (a dataset listed twice, or beside its relabelling) may be drawn out in one and train in the other, so the
  held-out figures then measure positions the network trained on, and a warning on standard error counts them
  where they are many (``SHARED_WARNING``).
- ``heldout_by = "position"``: the draw is keyed by the position itself. Equal positions share one draw
  (a group is keyed by its positions together, so two copies of a move choice share one), and a row trains
  only if its position is held out nowhere: a row whose position some held-out row holds is dropped from
  training, so every held-out position is one the network never trained on.

Positions are keyed by a linear form of their 28 signed checker counts with random coefficients under 2**31
(no overflow: a key is below 2**40). Distinct positions share a key only by a chance of about 2**-31 a
pair; two that do are drawn together, which costs a draw its independence and never puts a held-out
position in training.
"""

from __future__ import annotations

import sys

import torch

from bgtrain.datasets import Dataset
from bgtrain.training.config import Config
from engine.position_kinds import PositionKind

# A row draw warns when more than this share of the held-out rows hold a position that also trains. Self-play
# datasets repeat common positions and plays datasets share plays across rolls (4% to 8% of a dataset's held-out
# rows in generation 9's); a dataset listed twice, or beside its relabelling, shares nearly all.
SHARED_WARNING = 0.1


def split_dataset(dataset: Dataset, config: Config) -> tuple[Dataset, Dataset]:
    """(training, held-out) rows of the kinds asked for, drawn as ``[supervised] heldout_by`` says."""
    supervised = config.supervised
    wanted = torch.tensor([int(PositionKind[kind.upper()]) for kind in supervised.kinds])
    dataset = dataset.where(torch.isin(dataset.kinds.long(), wanted))
    if not len(dataset):
        raise ValueError(f"the datasets hold no position of the kinds {list(supervised.kinds)}")
    if supervised.heldout_by == "position":
        is_heldout, trains = position_draw(dataset, supervised.heldout_fraction, config.run.seed)
    else:
        is_heldout = row_draw(dataset, supervised.heldout_fraction, config.run.seed)
        trains = ~is_heldout
        warn_of_shared_positions(dataset, is_heldout, config.run.seed)
    if not trains.any():
        raise ValueError(f"[supervised] heldout_fraction = {supervised.heldout_fraction} holds out all "
                         f"{len(dataset):,} positions of the kinds {list(supervised.kinds)}: none is left to train on")
    return dataset.where(trains), dataset.where(is_heldout)


def warn_of_shared_positions(dataset: Dataset, is_heldout: torch.Tensor, seed: int) -> None:
    """One line on standard error when over ``SHARED_WARNING`` of the held-out rows' positions also train."""
    keys = position_keys(dataset.positions, torch.Generator().manual_seed(seed))
    shared, held = int(torch.isin(keys[is_heldout], keys[~is_heldout]).sum()), int(is_heldout.sum())
    if shared > SHARED_WARNING * held:
        print(f"warning: {shared:,} of the {held:,} held-out rows ({shared / held:.0%}) hold a position that also "
              "trains (a dataset listed twice, or beside its relabelling?): the held-out figures grade positions the "
              "network learns; [supervised] heldout_by = \"position\" holds out none that trains", file=sys.stderr)


def row_draw(dataset: Dataset, fraction: float, seed: int) -> torch.Tensor:
    """bool[N]: the held-out rows, a share ``fraction`` of the rows (a permutation under ``seed``) with each
    group of a plays dataset drawn whole instead (under ``seed + 2``)."""
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(seed))
    is_heldout = torch.zeros(len(dataset), dtype=torch.bool)
    is_heldout[order[:round(len(dataset) * fraction)]] = True
    grouped = dataset.groups >= 0
    if grouped.any():
        groups, group_of_row = torch.unique(dataset.groups[grouped], return_inverse=True)
        draw = torch.rand(groups.shape[0], generator=torch.Generator().manual_seed(seed + 2))
        is_heldout[grouped] = (draw < fraction)[group_of_row]
    return is_heldout


def position_draw(dataset: Dataset, fraction: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(held out, trains), bool[N] each: each distinct position outside the groups, and each distinct group
    (by its positions), held out with probability ``fraction``; a row trains when its position is in no
    held-out row. The two can both be false (a training group's play that a held-out row also holds)."""
    generator = torch.Generator().manual_seed(seed)
    keys = position_keys(dataset.positions, generator)
    grouped = dataset.groups >= 0
    is_heldout = torch.zeros(len(dataset), dtype=torch.bool)
    distinct, key_of_row = torch.unique(keys[~grouped], return_inverse=True)
    is_heldout[~grouped] = (torch.rand(distinct.shape[0], generator=generator) < fraction)[key_of_row]
    if grouped.any():
        groups, group_of_row = torch.unique(dataset.groups[grouped], return_inverse=True)
        group_keys = torch.zeros(groups.shape[0], dtype=torch.int64).index_add_(0, group_of_row, keys[grouped])
        distinct_groups, key_of_group = torch.unique(group_keys, return_inverse=True)
        group_out = torch.rand(distinct_groups.shape[0], generator=generator) < fraction
        is_heldout[grouped] = group_out[key_of_group][group_of_row]
    trains = ~torch.isin(keys, keys[is_heldout])
    return is_heldout, trains


def position_keys(positions: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """int64[N]: a key of each position's content (int8[N, 28]); equal positions get equal keys."""
    coefficients = torch.randint(0, 2**31, (positions.shape[1],), generator=generator, dtype=torch.int64)
    return (positions.long() * coefficients).sum(1)
