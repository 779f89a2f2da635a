"""The held-out split (``bgtrain.training.heldout``): by row, a dataset listed twice puts held-out positions in
training through its other copy; by position, no held-out position trains, groups stay whole and both copies
of a move choice go together, the share is the fraction asked, and the draw is fixed by the seed."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from helpers import compile_mode, tiny_plays

from bgtrain.datasets import load_datasets
from bgtrain.datasets.shards import Dataset
from bgtrain.training.config import load_config
from bgtrain.training.heldout import position_keys, split_dataset


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):
        yield


@pytest.fixture(scope="module")
def source_and_plays(tmp_path_factory):
    return tiny_plays(tmp_path_factory.mktemp("tiny"))


def config(*overrides):
    return load_config("configs/supervised_gen1.toml", [
        "supervised.kinds=['contact','crashed','race','bearoff']", "supervised.heldout_fraction=0.3", *overrides])


def position_set(dataset: Dataset) -> set[bytes]:
    return {bytes(row) for row in dataset.positions.numpy()}


def synthetic(rows: int, seed: int, group_size: int = 0) -> Dataset:
    """``rows`` random positions (distinct with near certainty), in groups of ``group_size`` (0: none)."""
    generator = torch.Generator().manual_seed(seed)
    positions = torch.randint(-15, 16, (rows, 28), generator=generator, dtype=torch.int8)
    groups = torch.arange(rows) // group_size if group_size else torch.full((rows,), -1)
    return Dataset(positions, torch.rand(rows, 5, generator=generator), torch.zeros(rows, 5), torch.zeros(rows, 5),
                   torch.ones(rows, dtype=torch.int8), groups, ())


FIELDS = ("positions", "targets", "standard_errors", "zero_ply", "kinds", "groups")


def joined(*datasets: Dataset) -> Dataset:
    """The rows of ``datasets`` one after another, their groups as they are."""
    return Dataset(*(torch.cat([getattr(dataset, name) for dataset in datasets]) for name in FIELDS), ())


def twice(dataset: Dataset) -> Dataset:
    """The dataset listed twice, as ``load_datasets`` concatenates it: the second copy's groups renumbered."""
    offset = int(dataset.groups.max()) + 1
    renumbered = dataclasses.replace(dataset, groups=torch.where(dataset.groups >= 0, dataset.groups + offset, -1))
    return joined(dataset, renumbered)


def test_by_row_a_dataset_listed_twice_trains_on_held_out_positions_and_by_position_never(source_and_plays, capsys):
    source, plays = source_and_plays
    both = load_datasets([source, plays, plays, source])
    training, held = split_dataset(both, config())
    shared = position_set(training) & position_set(held)  # the leak the draw by position mends
    leaked = sum(bytes(row) in shared for row in held.positions.numpy())
    assert leaked > 0.1 * len(held)
    assert f"warning: {leaked:,} of the {len(held):,} held-out rows ({leaked / len(held):.0%}) hold a position that " \
        "also trains" in capsys.readouterr().err
    split_dataset(load_datasets([source, plays]), config())
    assert "warning" not in capsys.readouterr().err  # no dataset twice: what repeats is under a tenth
    training, held = split_dataset(both, config("supervised.heldout_by='position'"))
    assert "warning" not in capsys.readouterr().err
    assert len(held) and len(training)
    assert not position_set(training) & position_set(held)
    # every position is in two rows or more (the source and plays are each listed twice): all are held out together
    counts = torch.unique(position_keys(held.positions, torch.Generator().manual_seed(0)), return_counts=True)[1]
    assert bool((counts >= 2).all())


def test_by_position_groups_are_whole_and_their_copies_go_together():
    dataset = twice(synthetic(3000, 1, group_size=6))
    training, held = split_dataset(dataset, config("supervised.heldout_by='position'", "run.seed=7"))
    group_sizes = torch.bincount(dataset.groups)
    held_groups, held_counts = torch.unique(held.groups, return_counts=True)
    assert torch.equal(held_counts, group_sizes[held_groups])  # whole groups
    copy = held_groups % 500  # group g and g + 500 are the two copies of one move choice
    assert torch.equal(torch.bincount(copy, minlength=500)[copy], torch.full_like(copy, 2))
    assert len(training) + len(held) == len(dataset)  # distinct positions: nothing dropped
    assert abs(len(held_groups) / 1000 - 0.3) < 0.05


def test_by_position_the_share_is_the_fraction_and_the_seed_fixes_the_draw():
    dataset = synthetic(20000, 2)
    first = split_dataset(dataset, config("supervised.heldout_by='position'", "run.seed=3"))[1]
    again = split_dataset(dataset, config("supervised.heldout_by='position'", "run.seed=3"))[1]
    other = split_dataset(dataset, config("supervised.heldout_by='position'", "run.seed=4"))[1]
    assert abs(len(first) / 20000 - 0.3) < 0.015
    assert torch.equal(first.positions, again.positions)
    assert not torch.equal(first.positions[:100], other.positions[:100])


def test_a_position_held_out_in_a_group_does_not_train_outside_one():
    plays = synthetic(600, 3, group_size=3)
    flat = synthetic(600, 3)  # the same positions, outside any group
    both = joined(plays, flat)
    training, held = split_dataset(both, config("supervised.heldout_by='position'"))
    assert len(held) and not position_set(training) & position_set(held)
    assert len(training) + len(held) < len(both)  # a flat row drawn out beside a training group's copy drops it


def test_the_draw_is_checked(tmp_path):
    with pytest.raises(ValueError, match="heldout_by = 'group': must be one of 'row', 'position'"):
        config("supervised.heldout_by='group'")
