"""Dice: every roll comes from an explicit source, so games are reproducible and tests can script them.

A dice source gives ``roll(batch) -> int8[B, 2]`` (larger die first) and
``opening(batch) -> (dice int8[B, 2], first_seat int8[B])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch

# The 21 distinct rolls, larger die first (doubles 1/36 each, the others 2/36: both orders).
ALL_ROLLS = tuple((high, low) for high in range(1, 7) for low in range(1, high + 1))


def roll_tensor(device: torch.device | str = "cpu") -> torch.Tensor:
    """``ALL_ROLLS`` as ``int8[21, 2]``."""
    return torch.tensor(ALL_ROLLS, dtype=torch.int8, device=device)


def roll_index(dice: torch.Tensor) -> torch.Tensor:
    """Index into ``ALL_ROLLS`` of each roll (larger die first): ``int8[B, 2]`` -> ``int64[B]``."""
    high, low = dice[:, 0].to(torch.int64), dice[:, 1].to(torch.int64)
    return high * (high - 1) // 2 + low - 1


def roll_weights(dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> torch.Tensor:
    """The probability of each of ``ALL_ROLLS``: ``float[21]``, summing to 1."""
    return torch.tensor([1.0 if high == low else 2.0 for high, low in ALL_ROLLS], dtype=dtype, device=device) / 36.0


class DiceSource(Protocol):
    def roll(self, batch: int) -> torch.Tensor: ...

    def opening(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]: ...


def _larger_first(dice: torch.Tensor) -> torch.Tensor:
    return torch.stack([dice.max(1).values, dice.min(1).values], 1)


class RandomDice:
    """Fair dice from a seeded ``torch.Generator`` on ``device`` (the generator lives there too,
    so no dice cross between host and GPU)."""

    def __init__(self, seed: int, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)

    def _dice(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randint(1, 7, shape, generator=self.generator, device=self.device, dtype=torch.int8)

    def roll(self, batch: int) -> torch.Tensor:
        return _larger_first(self._dice((batch, 2)))

    def opening(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        # The opening roll: each side rolls one die, ties are rolled again, and the side with the
        # higher die plays both numbers as its first move.
        seats = self._dice((batch, 2))
        tied = seats[:, 0] == seats[:, 1]
        while bool(tied.any()):
            seats[tied] = self._dice((int(tied.sum()), 2))
            tied = seats[:, 0] == seats[:, 1]
        first_seat = (seats[:, 1] > seats[:, 0]).to(torch.int8)
        return _larger_first(seats), first_seat

    def get_state(self) -> torch.Tensor:
        return self.generator.get_state()

    def set_state(self, state: torch.Tensor) -> None:
        self.generator.set_state(state)


class ScriptedDice:
    """Dice given in advance, for tests: each entry is a pair (the same roll for every game) or an
    ``int[B, 2]`` tensor. ``opening`` consumes one entry read as (seat 0's die, seat 1's die)."""

    def __init__(self, rolls: Sequence, device: torch.device | str = "cpu") -> None:
        self.rolls = list(rolls)
        self.device = torch.device(device)
        self.used = 0

    def _next(self, batch: int) -> torch.Tensor:
        if self.used >= len(self.rolls):
            raise IndexError(f"scripted dice ran out after {self.used} rolls")
        entry = torch.as_tensor(self.rolls[self.used], dtype=torch.int8, device=self.device)
        self.used += 1
        if entry.dim() == 1:
            entry = entry.expand(batch, 2)
        if entry.shape != (batch, 2) or bool(((entry < 1) | (entry > 6)).any()):
            raise ValueError(f"scripted roll {self.used} is not {batch} pairs of dice 1..6: {entry.tolist()}")
        return entry.clone()

    def roll(self, batch: int) -> torch.Tensor:
        return _larger_first(self._next(batch))

    def opening(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        seats = self._next(batch)
        if bool((seats[:, 0] == seats[:, 1]).any()):
            raise ValueError("a scripted opening roll cannot be a tie: ties are rolled again")
        return _larger_first(seats), (seats[:, 1] > seats[:, 0]).to(torch.int8)


class Mirrored:
    """Dice for ``2 * pairs`` games from a source of ``pairs`` streams: game i and game i + pairs get
    the same rolls, turn for turn (seat-swapped pairs in a duel)."""

    def __init__(self, source: DiceSource, pairs: int) -> None:
        self.source = source
        self.pairs = pairs

    def _check(self, batch: int) -> None:
        if batch != 2 * self.pairs:
            raise ValueError(f"mirrored dice serve {2 * self.pairs} games, not {batch}")

    def roll(self, batch: int) -> torch.Tensor:
        self._check(batch)
        dice = self.source.roll(self.pairs)
        return torch.cat([dice, dice])

    def opening(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        self._check(batch)
        dice, first_seat = self.source.opening(self.pairs)
        return torch.cat([dice, dice]), torch.cat([first_seat, first_seat])
