"""How many of the 36 rolls let a checker escape past blocked points: GNU Backgammon's escape tables
(``eval.c``, ``anEscapes`` and ``anEscapes1``), read by the encoders' escape inputs.

Indexed by a 12-bit blocking pattern in front of a checker: bit k set when the point k + 1 pips ahead
is made by the other side.
"""

from __future__ import annotations

import functools

import torch

from engine.dice import ALL_ROLLS

PATTERN_BITS = 12


@functools.cache
def escape_tables(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(escapes, escapes_past_first)``, ``int64[4096]`` each.

    ``escapes``: rolls of 36 whose total lands on a free point with at least one of the two single-die
    points free (doubles counted by their first two steps only, as GNU Backgammon does).
    ``escapes_past_first``: those whose total also passes the nearest blocked point (0 for no block).
    """
    plain, past = [], []
    for pattern in range(1 << PATTERN_BITS):
        nearest = next((k for k in range(PATTERN_BITS) if pattern >> k & 1), None)
        count = count_past = 0
        for high, low in ALL_ROLLS:
            weight = 1 if high == low else 2
            lands_free = not pattern >> (high + low - 1) & 1
            path_free = not (pattern >> (high - 1) & 1 and pattern >> (low - 1) & 1)
            if lands_free and path_free:
                count += weight
                if nearest is not None and high + low - 1 > nearest:
                    count_past += weight
        plain.append(count)
        past.append(count_past)
    return (torch.tensor(plain, dtype=torch.int64, device=device),
            torch.tensor(past, dtype=torch.int64, device=device))
