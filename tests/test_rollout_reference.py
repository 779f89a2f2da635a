"""The rollout reference for benchmark decisions: keeping the top candidates, relabelling from
per-trial equities (worked by hand), cross-fitted losses, and a real rollout that resumes from its
shards with the same numbers."""

from __future__ import annotations

import pytest
import torch

from bgtrain.benchmark.decisions import DecisionSet, concatenate, load_decisions
from bgtrain.benchmark.rollout_reference import (
    _relabel,
    cross_fitted_losses,
    keep_top,
    replace_classes,
    rollout_decisions,
    rollout_reference,
)
from bgtrain.benchmark.scorer import losses_of_plays
from bgtrain.rollout import RolloutSettings
from bgtrain.values.evaluator import Evaluator
from engine.position_kinds import PositionKind


def toy_decisions(counts: list[int]) -> DecisionSet:
    """Decisions whose candidates are told apart by board[1] = their listed rank (the boards are not
    real positions: only the bookkeeping is under test)."""
    total = sum(counts)
    candidate = torch.zeros(total, 28, dtype=torch.int8)
    candidate[:, 1] = torch.cat([torch.arange(count) for count in counts]).to(torch.int8)
    loss = torch.cat([torch.arange(count) * 0.01 for count in counts]).float()
    decisions = len(counts)
    return DecisionSet(torch.zeros(decisions, 28, dtype=torch.int8), torch.tensor([[3, 1]] * decisions, dtype=torch.int8),
                       torch.zeros(decisions, dtype=torch.int8), torch.zeros(decisions, dtype=torch.int8),
                       torch.tensor(counts), candidate, loss, torch.full((total,), float("nan")))


def test_keep_top_keeps_the_best_listed_of_each_decision():
    kept = keep_top(toy_decisions([4, 1, 3]), 2)
    assert kept.counts.tolist() == [2, 1, 2]
    assert kept.candidate[:, 1].tolist() == [0, 1, 0, 0, 1]
    with pytest.raises(ValueError, match="positive number"):
        keep_top(toy_decisions([2]), 0)


def test_relabel_by_hand():
    """Decision 0: three candidates whose trials (equity for the mover) are
        listed 0: [0.0, 0.2, 0.4, 0.2]  mean 0.2
        listed 1: [0.3, 0.3, 0.5, 0.5]  mean 0.4  <- the best
        listed 2: [0.3, 0.2, 0.4, 0.3]  mean 0.3
    so the order becomes 1, 2, 0 with losses 0, 0.1, 0.2; the loss of listed 0 is the mean of the
    trial-by-trial differences [0.3, 0.1, 0.1, 0.3], whose standard error is std / 2 = 0.11547 / 2.
    Decision 1: one candidate, loss 0 and error 0."""
    decisions = toy_decisions([3, 1])
    per_trial = torch.tensor([[0.0, 0.2, 0.4, 0.2], [0.3, 0.3, 0.5, 0.5], [0.3, 0.2, 0.4, 0.3],
                              [0.1, -0.1, 0.0, 0.0]], dtype=torch.float64)
    relabelled, error, halves = _relabel(decisions, per_trial)
    assert relabelled.candidate[:, 1].tolist() == [1, 2, 0, 0]
    assert relabelled.loss.tolist() == pytest.approx([0.0, 0.1, 0.2, 0.0])
    assert relabelled.equity.tolist() == pytest.approx([0.4, 0.3, 0.2, 0.0])
    assert error[0] == 0 and error[3] == 0
    assert float(error[2]) == pytest.approx(float(torch.tensor([0.3, 0.1, 0.1, 0.3]).std()) / 2, rel=1e-5)
    # even trials (0, 2) and odd trials (1, 3), in the new order
    assert halves[0].tolist() == pytest.approx([0.4, 0.4])
    assert halves[2].tolist() == pytest.approx([0.2, 0.2])


def test_cross_fitted_losses_by_hand():
    """One decision, two candidates with equal true value; the even trials favour A (0.10 vs 0.06),
    the odd ones B (0.04 vs 0.08). Chosen on the even half, best = A, measured on the odd half: A 0,
    B -0.04. Chosen on the odd half, best = B, measured on the even: A -0.04, B 0. Averaged: -0.02
    each: no charge for the noise, where the naive best-of-means charges one of them."""
    decisions = toy_decisions([2])
    halves = torch.tensor([[0.10, 0.04], [0.06, 0.08]])
    assert cross_fitted_losses(decisions, halves).tolist() == pytest.approx([-0.02, -0.02])
    # A clear best (ahead in both halves) is charged nothing and its rival its full margin.
    halves = torch.tensor([[0.10, 0.12], [0.02, 0.00]])
    assert cross_fitted_losses(decisions, halves).tolist() == pytest.approx([0.0, 0.1])


def test_replace_classes_swaps_whole_classes_and_keeps_the_rest():
    """A base set of three race then two contact decisions (kinds out of class order); the contact
    class relabelled (one candidate each, losses 0) replaces the base's contact decisions, the result
    holds contact first, and the race decisions keep their candidates and losses."""
    race, contact = toy_decisions([2, 3, 1]), toy_decisions([3, 2])
    race = DecisionSet(race.board, race.dice, torch.full((3,), PositionKind.RACE, dtype=torch.int8), race.source, race.counts,
                       race.candidate, race.loss, race.equity)
    contact = DecisionSet(contact.board, contact.dice, torch.full((2,), PositionKind.CONTACT, dtype=torch.int8),
                          contact.source, contact.counts, contact.candidate, contact.loss, contact.equity)
    relabelled = keep_top(contact, 1)
    merged = replace_classes(concatenate([race, contact]), {"contact": relabelled})
    assert merged.kind.tolist() == [PositionKind.CONTACT] * 2 + [PositionKind.RACE] * 3
    assert merged.counts.tolist() == [1, 1, 2, 3, 1]
    assert torch.equal(merged.loss[2:], race.loss)
    # Another class's decisions, a part of a class, or a foreign class name: refused, naming it.
    with pytest.raises(ValueError, match="relabelled contact decisions are 1, the base set has 2"):
        replace_classes(concatenate([race, contact]), {"contact": relabelled.select(torch.tensor([0]))})
    moved = DecisionSet(relabelled.board, relabelled.dice.flip(1), relabelled.kind, relabelled.source,
                        relabelled.counts, relabelled.candidate, relabelled.loss, relabelled.equity)
    with pytest.raises(ValueError, match="not the base set's contact decisions"):
        replace_classes(concatenate([race, contact]), {"contact": moved})
    with pytest.raises(ValueError, match="unknown class 'backgame'"):
        replace_classes(race, {"backgame": relabelled})


def test_scoring_with_other_losses_charges_the_worst_of_those():
    decisions = toy_decisions([3])
    other = torch.tensor([0.0, -0.01, 0.05])
    chosen = decisions.candidate[1:2]
    assert losses_of_plays(decisions, chosen, other)[0].tolist() == pytest.approx([-0.01])
    unlisted = decisions.candidate[:1].clone()
    unlisted[0, 1] = 9
    loss, listed = losses_of_plays(decisions, unlisted, other)
    assert loss.tolist() == pytest.approx([0.05]) and not bool(listed[0])


def test_real_rollout_is_seeded_and_resumes_from_its_shards(tmp_path):
    decisions = keep_top(load_decisions().of_class("contact").select(torch.arange(3)), 2)
    evaluator = Evaluator.from_path("checkpoints/bgtrain-default.pt")
    settings = RolloutSettings(truncate=2)
    whole, error, halves = rollout_reference(evaluator, decisions, settings, trials=8, top=2, seed=3, batch=2,
                                             work_dir=tmp_path, progress=False)
    assert whole.counts.tolist() == decisions.counts.tolist()
    assert bool((whole.loss >= 0).all()) and bool((whole.loss[whole.offsets] == 0).all())
    assert bool((error >= 0).all()) and halves.shape == (whole.candidate.shape[0], 2)
    # the same candidates, re-ordered within each decision
    for row in range(len(whole)):
        start, count = int(whole.offsets[row]), int(whole.counts[row])
        assert sorted(map(tuple, whole.candidate[start:start + count].tolist())) == sorted(
            map(tuple, decisions.candidate[start:start + count].tolist()))
    assert len(list(tmp_path.glob("shard-*.npz"))) == 2
    again, _, _ = rollout_reference(evaluator, decisions, settings, trials=8, top=2, seed=3, batch=2,
                                    work_dir=tmp_path, progress=False)  # read back from the shards
    assert torch.equal(again.loss, whole.loss) and torch.equal(again.candidate, whole.candidate)
    # From the end, without shards or on a work directory with only the last one: the same set.
    backward, _, _ = rollout_reference(evaluator, decisions, settings, trials=8, top=2, seed=3, batch=2,
                                       progress=False, from_the_end=True)
    assert torch.equal(backward.loss, whole.loss) and torch.equal(backward.candidate, whole.candidate)
    (tmp_path / "met").mkdir()
    (tmp_path / "met" / "relabelling.json").write_bytes((tmp_path / "relabelling.json").read_bytes())
    (tmp_path / "met" / "shard-00001.npz").write_bytes((tmp_path / "shard-00001.npz").read_bytes())
    met, _, _ = rollout_reference(evaluator, decisions, settings, trials=8, top=2, seed=3, batch=2,
                                  work_dir=tmp_path / "met", progress=False)
    assert torch.equal(met.loss, whole.loss) and len(list((tmp_path / "met").glob("shard-*.npz"))) == 2
    # the first shard alone, recomputed in memory: the same numbers
    first, _, _ = rollout_decisions(evaluator, decisions.select(torch.arange(2)), settings, trials=8, seed=3)
    assert torch.equal(first.loss, whole.loss[: int(first.counts.sum())])
    with pytest.raises(ValueError, match="other settings"):
        rollout_reference(evaluator, decisions, settings, trials=16, top=2, seed=3, batch=2, work_dir=tmp_path,
                          progress=False)
    others = keep_top(load_decisions().of_class("crashed").select(torch.arange(3)), 2)
    with pytest.raises(ValueError, match="other decisions"):
        rollout_reference(evaluator, others, settings, trials=8, top=2, seed=3, batch=2, work_dir=tmp_path,
                          progress=False)
