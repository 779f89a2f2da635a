"""Keyed dice: the k-th roll of stream s is a fixed function of (seed, s, k), never of the batch.

``RandomDice`` draws every game's rolls from one generator, so a game's dice depend on how many
other games share the batch and in which order. Work split into chunks (``bgtrain.distributed``)
needs the opposite: the dice of game (or seat-swapped pair) i must depend on ``(seed, i)`` alone, so
that any split into chunks, on any machine, plays the same games. ``KeyedDice`` computes each die by
a counter-based hash (Wellons' "lowbias32" integer hash, chained over the seed, the stream, a tag
for opening or ordinary rolls and the draw number) in whole-batch integer tensor ops; the only state
is the count of ``roll`` calls made so far.

A die is ``1 + (6 h) >> 32`` for a 32-bit hash ``h``: each face has probability 1/6 to within
6 / 2^32. The hash is exact 32-bit arithmetic done in int64 tensors (products split into 16-bit
halves so that no intermediate overflows), so the CPU and a GPU give the same dice.
"""

from __future__ import annotations

import torch

from engine.dice import Mirrored

_MASK32 = 0xFFFFFFFF
_OPENING_TAG, _ROLL_TAG = 0x0B5E55ED, 0x00D1CE00


def _multiply32(x: torch.Tensor, constant: int) -> torch.Tensor:
    """``(x * constant) mod 2^32`` for ``x < 2^32`` without int64 overflow: low and high 16-bit halves."""
    low = (x & 0xFFFF) * constant
    high = ((x >> 16) * constant) & 0xFFFF
    return (low + (high << 16)) & _MASK32


def hash32(x: torch.Tensor) -> torch.Tensor:
    """Wellons' lowbias32 on ``int64`` tensors holding values in ``[0, 2^32)``."""
    x = x ^ (x >> 16)
    x = _multiply32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _multiply32(x, 0x846CA68B)
    return x ^ (x >> 16)


def _seed_key(seed: int) -> int:
    """A 64-bit seed folded to the 32-bit key every stream of the seed starts from."""
    seed &= (1 << 64) - 1
    key = int(hash32(torch.tensor([seed & _MASK32], dtype=torch.int64))[0])
    return int(hash32(torch.tensor([key ^ (seed >> 32)], dtype=torch.int64))[0])


def _larger_first(dice: torch.Tensor) -> torch.Tensor:
    return torch.stack([dice.max(1).values, dice.min(1).values], 1)


class KeyedDice:
    """A dice source (``engine.dice.DiceSource``) for one batch of streams: row r of every roll is
    the next roll of stream ``streams[r]``. ``streams: int64[B]``, values in ``[0, 2^32)``."""

    def __init__(self, seed: int, streams: torch.Tensor, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self.streams = streams.to(device=self.device, dtype=torch.int64)
        if self.streams.numel() and (int(self.streams.min()) < 0 or int(self.streams.max()) > _MASK32):
            raise ValueError("keyed dice streams must lie in [0, 2^32)")
        self.stream_keys = hash32(self.streams ^ _seed_key(seed))
        self.draws = 0  # rolls handed out so far (the opening is not counted)

    def _check(self, batch: int) -> None:
        if batch != self.streams.numel():
            raise ValueError(f"keyed dice serve {self.streams.numel()} streams, not {batch}")

    def _dice(self, keys: torch.Tensor, tag: int, counter: int) -> torch.Tensor:
        """Two dice per row from ``hash(hash(key ^ tag) ^ counter ^ die)``: ``int8[B, 2]``."""
        tagged = hash32(keys ^ tag)
        faces = []
        for die in (0, 1):
            hashed = hash32(tagged ^ ((2 * counter + die) & _MASK32))
            faces.append(1 + ((hashed * 6) >> 32))
        return torch.stack(faces, 1).to(torch.int8)

    def roll(self, batch: int) -> torch.Tensor:
        self._check(batch)
        dice = self._dice(self.stream_keys, _ROLL_TAG, self.draws)
        self.draws += 1
        return _larger_first(dice)

    def opening(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        # The opening roll: each side rolls one die (seat 0's die first), ties are rolled again, and
        # the side with the higher die plays both numbers. Attempt a of a stream is keyed by a alone.
        self._check(batch)
        seats = self._dice(self.stream_keys, _OPENING_TAG, 0)
        tied = seats[:, 0] == seats[:, 1]
        attempt = 0
        while bool(tied.any()):
            attempt += 1
            rows = tied.nonzero().squeeze(1)
            seats[rows] = self._dice(self.stream_keys[rows], _OPENING_TAG, attempt)
            tied = seats[:, 0] == seats[:, 1]
        first_seat = (seats[:, 1] > seats[:, 0]).to(torch.int8)
        return _larger_first(seats), first_seat


class KeyedMirroredDice(Mirrored):
    """Dice for the ``2 * pairs`` games of the seat-swapped pairs ``first_pair .. first_pair + pairs - 1``:
    game i and game i + pairs get the rolls of stream ``first_pair + i``, turn for turn (the keyed
    counterpart of ``bgtrain.arena.duel.MirroredDice``)."""

    def __init__(self, seed: int, first_pair: int, pairs: int, device: torch.device | str = "cpu") -> None:
        streams = torch.arange(first_pair, first_pair + pairs, dtype=torch.int64)
        super().__init__(KeyedDice(seed, streams, device), pairs)
