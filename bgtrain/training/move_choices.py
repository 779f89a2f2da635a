"""What a move choice compares: the plays of one roll, a group of a plays dataset's rows.

A move choice uses only the differences between the equities of a roll's plays: a student that values
every play of the roll a little too high chooses as well as its teacher, one that swaps two close plays
loses the difference. Cross-entropy on each position alone weighs the level that a roll's plays share as
much as the differences between them, and the level is most of what it fits. The rows of a plays dataset
carry their group (``bgtrain.datasets.plays``), so training can also fit the differences:

- ``MoveChoiceGroups`` indexes the groups of two or more rows and draws some for a step;
- ``sibling_loss`` is the mean squared error of the student's cubeless equities less their group's mean
  against the same for the labels (``[supervised] sibling_weight`` times it is added to a step's loss);
- ``softmax_choice_loss``, its alternative (``[supervised] sibling_loss = "softmax"``), compares the two
  choices a group makes, softmax distributions over its plays at a temperature: the same as the mean
  squared error for differences small against the temperature, it leaves alone how far apart the plays
  far below the teacher's best are, which no move choice reads, and weighs the plays near the top;
- ``within_roll_error`` is what the student's choice in each group loses by the labels (``choice_losses``,
  a group each): the measure the term lowers, on held-out groups (``eval/within_roll_error``) and, for
  any models on any plays datasets, by ``scripts/within_roll_error.py``.

Every row of a group shows the position after a play to the side then on roll (``plays_of`` leaves out
of groups the plays after which the mover rolls again), so the mover's best play is the one of lowest
equity in its row.
"""

from __future__ import annotations

import torch


def _segment_means(values: torch.Tensor, segment: torch.Tensor, count: int) -> torch.Tensor:
    """The mean of ``values`` over each segment ``0 .. count - 1`` (``segment``: each value's)."""
    sums = torch.zeros(count, dtype=values.dtype, device=values.device).index_add_(0, segment, values)
    sizes = torch.bincount(segment, minlength=count).clamp(min=1).to(values.dtype)
    return sums / sizes


def sibling_loss(student: torch.Tensor, teacher: torch.Tensor, segment: torch.Tensor, count: int) -> torch.Tensor:
    """Mean over rows of ((student - its group's mean) - (teacher - its group's mean))^2: zero when the
    student is the teacher plus any constant a group, whatever the constants."""
    difference = student - teacher
    centred = difference - _segment_means(difference, segment, count)[segment]
    return (centred * centred).mean()


def _segment_log_softmax(logits: torch.Tensor, segment: torch.Tensor, count: int) -> torch.Tensor:
    """log softmax of ``logits`` within each segment (the segment's largest subtracted first)."""
    largest = torch.full((count,), float("-inf"), dtype=logits.dtype, device=logits.device)
    largest = largest.scatter_reduce(0, segment, logits.detach(), "amax")
    shifted = logits - largest[segment]
    sums = torch.zeros(count, dtype=logits.dtype, device=logits.device).index_add_(0, segment, shifted.exp())
    return shifted - sums.log()[segment]


def softmax_choice_loss(student: torch.Tensor, teacher: torch.Tensor, segment: torch.Tensor, count: int,
                        temperature: float) -> torch.Tensor:
    """2 temperature^2 times the mean over groups of KL(teacher's choice || student's), each a softmax of
    -equity / temperature over the group's rows (the mover's best play is the lowest equity). Zero when the
    student is the teacher plus any constant a group; for differences small against the temperature it is
    about ``sibling_loss`` (the KL is then half the choice distribution's variance of the logits' difference),
    so one weight serves both; where the teacher's best stands far above a play, that play's error counts
    only as far as it brings the play near the student's top."""
    teacher_log = _segment_log_softmax(-teacher / temperature, segment, count)
    student_log = _segment_log_softmax(-student / temperature, segment, count)
    terms = teacher_log.exp() * (teacher_log - student_log)
    divergence = torch.zeros(count, dtype=terms.dtype, device=terms.device).index_add_(0, segment, terms)
    return 2 * temperature * temperature * divergence.mean()


def choice_losses(student: torch.Tensor, teacher: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """What a move choice by ``student`` loses in each group by the ``teacher``'s equities (``float[G]``, in
    the order of the group numbers): in each group of ``groups`` (``int64[N]``; -1 and groups of one row
    left out) the row of lowest student equity is chosen, and its teacher equity less the group's lowest
    is the loss."""
    keep = groups >= 0
    groups, student, teacher = groups[keep], student[keep], teacher[keep]
    _, segment, sizes = torch.unique(groups, return_inverse=True, return_counts=True)
    keep = sizes[segment] >= 2
    if not keep.any():
        return teacher[:0]
    _, segment = torch.unique(segment[keep], return_inverse=True)
    student, teacher = student[keep], teacher[keep]
    count = int(segment.max()) + 1
    # Rows by group, the student's lowest first within each (stable: the first of equal rows).
    order = torch.argsort(student, stable=True)
    order = order[torch.argsort(segment[order], stable=True)]
    first = torch.ones_like(order, dtype=torch.bool)
    first[1:] = segment[order][1:] != segment[order][:-1]
    chosen = order[first]  # one row a group, in group order
    best = torch.full((count,), float("inf"), dtype=teacher.dtype).scatter_reduce(0, segment, teacher, "amin")
    return teacher[chosen] - best


def within_roll_error(student: torch.Tensor, teacher: torch.Tensor, groups: torch.Tensor) -> float:
    """The mean of ``choice_losses``: the teacher's equity a move choice by ``student`` loses, a group on
    average (NaN without a group)."""
    losses = choice_losses(student, teacher, groups)
    return float(losses.mean()) if losses.numel() else float("nan")


class MoveChoiceGroups:
    """The groups of two or more rows among ``groups`` (``int64[N]``, a dataset's, -1 for a row of
    none), drawn for training steps. ``rows``: their rows, group by group; ``starts``/``sizes``: each group's."""

    def __init__(self, groups: torch.Tensor) -> None:
        rows = torch.nonzero(groups >= 0).squeeze(1)
        rows = rows[torch.argsort(groups[rows], stable=True)]
        _, sizes = torch.unique_consecutive(groups[rows], return_counts=True)
        several = sizes >= 2
        self.rows = rows[torch.repeat_interleave(several, sizes)]
        self.sizes = sizes[several]
        self.starts = torch.cumsum(self.sizes, 0) - self.sizes

    def __len__(self) -> int:
        return int(self.sizes.shape[0])

    def draw(self, count: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` groups drawn uniformly (with replacement): their rows (``int64[M]``) and each row's
        segment, ``0 .. count - 1``, for ``sibling_loss``."""
        chosen = torch.randint(len(self), (count,), generator=generator)
        sizes = self.sizes[chosen]
        segment = torch.repeat_interleave(torch.arange(count), sizes)
        offsets = torch.arange(int(sizes.sum())) - torch.repeat_interleave(torch.cumsum(sizes, 0) - sizes, sizes)
        return self.rows[self.starts[chosen][segment] + offsets], segment
