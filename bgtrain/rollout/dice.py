"""Quasi-random rollout dice: every roll a pure function of (seed, stream, trial, turn).

A rollout plays many trials of each position in lock step. Trial ``t`` of a dice stream ``s`` (one per
position, or one shared by the candidate plays of a roll so that they see the same dice) rolls, at
turn ``k`` (plies played so far):

* turns 0 and 1, stratified: with ``u = t mod 1296``, ``i = u mod 36`` and ``j = u div 36``, the first
  roll is ordered pair ``first[i]`` and the second ``second[(i + j) mod 36]``, where ``first`` and
  ``second`` are permutations of the 36 ordered pairs drawn from ``(seed, stream, t div 1296)``. So every
  aligned block of 36 trials has each first roll once and each second roll once, and every aligned
  block of 1296 trials has each ordered pair of first two rolls exactly once (a Latin square: ``(i, i +
  j)`` runs over all 36 x 36 pairs). More trials repeat the strata with fresh permutations.
* turns 2 and later: an ordered pair from a hash of ``(seed, stream, t, k)``.

Since no roll depends on which other trials run beside it, trials ``[a, b)`` and ``[b, c)`` rolled
separately get exactly the dice of ``[a, c)`` rolled together (what sharding a rollout needs).

The hash works in 31-bit lanes modulo the Mersenne prime 2^31 - 1, so that no product overflows int64
on any device: each key is mixed by xor, a multiplication by one of L'Ecuyer's full-period multipliers
for that modulus and an xor-shift, several rounds in all. ``tests/test_rollout.py`` checks that the
rolls are uniform and that consecutive turns and neighbouring trials are independent (chi-square).
"""

from __future__ import annotations

import torch

STRATA = 36  # ordered pairs of dice
BLOCK = STRATA * STRATA  # trials per complete stratification of the first two rolls
STRATIFIED_TURNS = 2

_MODULUS = (1 << 31) - 1
# Full-period multipliers for the modulus 2^31 - 1 (L'Ecuyer, "Efficient and portable combined random
# number generators", 1988, and Fishman & Moore's list).
_MULTIPLIERS = (950706376, 742938285, 1226874159, 62089911, 1343714438)
_KEY_MASK = (1 << 31) - 1


def _round(state: torch.Tensor, key: torch.Tensor, multiplier: int) -> torch.Tensor:
    """One mixing round; ``state`` and ``key`` are below 2^31, so every product is below 2^62."""
    state = ((state ^ key) * multiplier) % _MODULUS
    return state ^ (state >> 13)


def hash_keys(*keys: torch.Tensor | int) -> torch.Tensor:
    """A well-mixed integer in [0, 2^31 - 1) from integer keys (tensors broadcast together): ``int64[...]``."""
    devices = [key.device for key in keys if isinstance(key, torch.Tensor)]
    device = devices[0] if devices else torch.device("cpu")
    tensors = [torch.as_tensor(key, dtype=torch.int64, device=device) for key in keys]
    state = torch.full(torch.broadcast_shapes(*(key.shape for key in tensors)), 0x2545F491,
                       dtype=torch.int64, device=device)
    for index, key in enumerate(tensors):
        # Each key enters as its low and its high 31 bits (a seed may exceed 2^31).
        state = _round(state, key & _KEY_MASK, _MULTIPLIERS[(2 * index) % len(_MULTIPLIERS)])
        state = _round(state, (key >> 31) & _KEY_MASK, _MULTIPLIERS[(2 * index + 1) % len(_MULTIPLIERS)])
    for multiplier in _MULTIPLIERS[:3]:  # finalise: every key bit reaches every output bit
        state = _round(state, torch.tensor(0x68E31DA4, device=device), multiplier)
    return state


def ordered_pair_dice(stratum: torch.Tensor) -> torch.Tensor:
    """Ordered pair index 0..35 -> dice ``int8[..., 2]``, larger die first (the engine's convention)."""
    first, second = stratum // 6 + 1, stratum % 6 + 1
    return torch.stack([torch.maximum(first, second), torch.minimum(first, second)], -1).to(torch.int8)


def _permutation_entry(seed: int, stream: torch.Tensor, block: torch.Tensor, which: int,
                       index: torch.Tensor) -> torch.Tensor:
    """Entry ``index`` of the seeded permutation ``which`` (0: first roll, 1: second) of the 36 pairs of
    (stream, block): the rank of ``index``'s hash among the 36 hashes of that permutation."""
    candidates = torch.arange(STRATA, device=stream.device)
    keys = hash_keys(seed, stream.unsqueeze(-1), block.unsqueeze(-1), which, candidates)  # [..., 36]
    # Sorting by (hash, candidate) is a permutation even if two hashes collide.
    order = torch.argsort(keys * STRATA + candidates, dim=-1)
    return order.gather(-1, index.unsqueeze(-1)).squeeze(-1)


def roll_strata(seed: int, stream: torch.Tensor, trial: torch.Tensor, turn: int) -> torch.Tensor:
    """The ordered pair (0..35: first die 1 + k div 6, second 1 + k mod 6) rolled at ``turn`` by each
    game: ``stream, trial: int64[B]`` -> ``int64[B]``."""
    if turn < STRATIFIED_TURNS:
        within, block = trial % BLOCK, trial // BLOCK
        column, row = within % STRATA, within // STRATA
        index = column if turn == 0 else (column + row) % STRATA
        return _permutation_entry(seed, stream, block, turn, index)
    return hash_keys(seed, stream, trial, turn, 0x3C6EF372) % STRATA


def rollout_dice(seed: int, stream: torch.Tensor, trial: torch.Tensor, turn: int) -> torch.Tensor:
    """The roll at ``turn`` of each game: ``stream, trial: int64[B]`` -> ``int8[B, 2]``, larger die first."""
    return ordered_pair_dice(roll_strata(seed, stream, trial, turn))
