"""Exact cubeless equities of hypergammon: GNU Backgammon's databases (``makehyper``), read batched.

What the file is
----------------
GNU Backgammon's ``makehyper -c N`` (Debian package ``gnubg``) solves hypergammon with N checkers a side
(``hypergammon1``, ``hypergammon2``, ``hypergammon``: our variants of 1, 2 and 3 checkers on the 24, 23 and
22 points, gammons and backgammons counting) by value iteration and writes ``hyperN.bd``:

* a 40-byte header: ``gnubg-H`` and the checker count as one digit, padded with ``x`` to a newline;
* one 28-byte record per position: bytes 0..14 the five cubeless outcome probabilities of the side on
  roll, before it rolls, in our order (``bgtrain.outcomes``), each a 3-byte little-endian integer over
  2^24 - 1; bytes 15..26 four cubeful equities (unused here); byte 27 unused.

A position's record is ``mover * n + opponent`` with n = C(25 + N, 25), the count of ways to place at
most N checkers on a side's 25 places (its points 1..24 and its bar; borne-off checkers are not
placed). Each side's index is a combinatorial rank of its checker counts (``one_sided_rank``). The
file has a record for finished games too: a side on roll with nothing left has won, a side whose
opponent has nothing left has lost, each with the gammon and backgammon of that board.

The mapping is checked, not trusted: ``tests/test_hypergammon.py`` checks Bellman consistency (for
every position and roll the best afterstate valued by the file, averaged over the 21 rolls, gives the
position's own value) on every position of ``hyper1.bd`` and a sample of the larger files, and the
finished games' records against ``engine.game.winning_points``.

Where the file is
-----------------
An explicit path, else ``$BGTRAIN_HYPERGAMMON_DIR/hyperN.bd``, else ``hyperN.bd`` in the cache
directory of the bear-off databases (``~/.cache/bgtrain``; ``default_path``). The files are GNU's own
output and are not built here: ``makehyper -c 3`` takes hours on one core (300 MB; 6 to 12 minutes an iteration here),
``-c 2`` a minute (3.4 MB), ``-c 1`` a tenth of a second (19 KB).
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path

import numpy as np
import torch

from bgtrain.outcomes import NUM_OUTCOMES, cubeless_equity
from engine.board import BOARD_WIDTH, MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND, flip_board
from engine.dice import roll_tensor, roll_weights
from engine.movegen import argmax_per_position, legal_afterstates
from engine.rules import Rules
from engine.variants import get_rules

HEADER_SIZE = 40
RECORD_SIZE = 28
PLACES = 25  # a side's points 1..24 and its bar
MAX_CHECKERS = 3  # makehyper's largest useful size: 4 checkers would be 20 GB
_FULL_SCALE = float((1 << 24) - 1)
VARIANT_CHECKERS = {"hypergammon1": 1, "hypergammon2": 2, "hypergammon": 3}


def header(checkers: int) -> bytes:
    """The 40 bytes ``makehyper -c checkers`` writes first."""
    return f"gnubg-H{checkers}".encode().ljust(HEADER_SIZE - 1, b"x") + b"\n"


def positions_per_side(checkers: int) -> int:
    """One-sided positions of at most ``checkers`` on 25 places: C(25 + checkers, 25)."""
    return math.comb(PLACES + checkers, PLACES)


def file_size(checkers: int) -> int:
    return HEADER_SIZE + RECORD_SIZE * positions_per_side(checkers) ** 2


def checkers_of(rules: Rules) -> int:
    """The checker count of a hypergammon variant; a ValueError in one line for any other variant."""
    checkers = VARIANT_CHECKERS.get(rules.name)
    if checkers is None:
        raise ValueError(f"the hypergammon database plays only {', '.join(VARIANT_CHECKERS)}, not {rules.name!r}")
    return checkers


def default_path(checkers: int) -> Path:
    """``$BGTRAIN_HYPERGAMMON_DIR/hyperN.bd`` when that is set, else ``hyperN.bd`` beside the bear-off
    databases (``$XDG_CACHE_HOME/bgtrain``, ``~/.cache/bgtrain`` by default)."""
    directory = os.environ.get("BGTRAIN_HYPERGAMMON_DIR")
    if not directory:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        directory = os.path.join(cache, "bgtrain")
    return Path(directory) / f"hyper{checkers}.bd"


# Ranking. A side's counts (c_1..c_25) on its places, place 1 its 1-point and place 25 its bar, with
# c_1 + ... + c_25 <= N, are a row of N + 25 slots read from the bar down: c_25 ones, a zero, c_24
# ones, a zero, ..., c_1 ones, a zero, then the unused ones. The zeros sit at strictly increasing
# z_k = c_25 + ... + c_(26-k) + (k - 1), and rank = sum_k C(z_k, k) (the combinatorial number system)
# maps the positions one to one onto 0 .. C(N + 25, 25) - 1. This is GNU Backgammon's order: one
# checker on place p has rank p (its bar 25), which the finished games' gammons and backgammons in
# the files show, and the Bellman test checks the whole order.

_binomial_cache: dict[torch.device, torch.Tensor] = {}


def _binomials(device: torch.device) -> torch.Tensor:
    """``int64[PLACES + MAX_CHECKERS + 1, PLACES + 1]``: C(n, k)."""
    table = _binomial_cache.get(device)
    if table is None:
        rows = PLACES + MAX_CHECKERS + 1
        table = torch.tensor([[math.comb(n, k) for k in range(PLACES + 1)] for n in range(rows)],
                             dtype=torch.int64, device=device)
        _binomial_cache[device] = table
    return table


def one_sided_rank(counts: torch.Tensor) -> torch.Tensor:
    """GNU's index of one side's checkers: ``int[..., 25]`` (places 1..24 then the bar) -> ``int64[...]``."""
    from_bar = counts.to(torch.int64).flip(-1)
    zeros_at = from_bar.cumsum(-1) + torch.arange(PLACES, device=counts.device)
    k = torch.arange(1, PLACES + 1, device=counts.device).expand_as(zeros_at)
    return _binomials(counts.device)[zeros_at, k].sum(-1)


def side_counts(board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mover's, opponent's) checkers on their own places 1..25 (points 1..24, bar), each ``int64[B, 25]``.

    The mover's are ``board[1..25]``; the opponent's point p is ``board[25 - p]`` and its bar
    ``board[0]``, so its places are the mover's columns of the flipped board."""
    mover = board[:, 1 : MOVER_BAR + 1].to(torch.int64).clamp(min=0)
    opponent = flip_board(board)[:, 1 : MOVER_BAR + 1].to(torch.int64).clamp(min=0)
    return mover, opponent


def all_one_sided(checkers: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Every one-sided position of at most ``checkers`` on the 25 places, row i of rank i: ``int64[n, 25]``."""
    places = torch.tensor(list(itertools.combinations_with_replacement(range(PLACES + 1), checkers)))
    counts = torch.zeros(places.shape[0], PLACES + 1, dtype=torch.int64)
    counts.scatter_add_(1, places, torch.ones_like(places))  # column 25: checkers borne off
    counts = counts[:, :PLACES]
    ordered = torch.empty_like(counts)
    ordered[one_sided_rank(counts)] = counts
    return ordered.to(device)


def board_from_sides(mover: torch.Tensor, opponent: torch.Tensor) -> torch.Tensor:
    """The inverse of ``side_counts``: ``int[B, 25]`` each -> ``int8[B, 28]`` (nothing in hand). The
    caller keeps the two sides off each other's points."""
    board = torch.zeros(mover.shape[0], BOARD_WIDTH, dtype=torch.int8, device=mover.device)
    board[:, 1 : MOVER_BAR + 1] = mover.to(torch.int8)
    board[:, OPPONENT_BAR:MOVER_BAR] -= opponent.flip(-1).to(torch.int8)
    return board


class HypergammonDatabase:
    """One ``hyperN.bd`` file, memory-mapped; lookups are batched (one gather a call)."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no hypergammon database at {path}: {build_hint(path)}")
        with path.open("rb") as handle:
            head = handle.read(HEADER_SIZE)
        checkers = head[7:8].decode("ascii", "replace") if head.startswith(b"gnubg-H") else ""
        if not checkers.isdigit() or head != header(int(checkers)) or not 1 <= int(checkers) <= MAX_CHECKERS:
            raise ValueError(f"{path} is not a GNU Backgammon hypergammon database (header {head[:16]!r}...)")
        self.checkers = int(checkers)
        size = path.stat().st_size
        if size != file_size(self.checkers):
            raise ValueError(f"{path}: {size} bytes, but a {self.checkers}-checker hypergammon database has "
                             f"{file_size(self.checkers)} (truncated or still being written?)")
        self.path = path
        self.per_side = positions_per_side(self.checkers)
        self.records = np.memmap(path, dtype=np.uint8, mode="r", offset=HEADER_SIZE,
                                 shape=(self.per_side**2, RECORD_SIZE))

    @property
    def rules(self) -> Rules:
        return get_rules({checkers: name for name, checkers in VARIANT_CHECKERS.items()}[self.checkers])

    def check_rules(self, rules: Rules) -> None:
        if checkers_of(rules) != self.checkers:
            raise ValueError(f"{self.path} holds {self.checkers}-checker hypergammon, not {rules.name!r}")

    def index(self, board: torch.Tensor) -> torch.Tensor:
        """The record of each position: ``board: int8[B, 28]`` -> ``int64[B]``."""
        if board.dim() != 2:
            raise ValueError(f"board must be int8[B, 28], got shape {tuple(board.shape)}")
        mover, opponent = side_counts(board)
        outside = (board[:, MOVER_IN_HAND] != 0) | (board[:, OPPONENT_IN_HAND] != 0)
        too_many = (mover.sum(1) > self.checkers) | (opponent.sum(1) > self.checkers)
        if bool((outside | too_many).any()):
            raise ValueError(f"position outside {self.checkers}-checker hypergammon (more checkers, or in hand)")
        return one_sided_rank(mover) * self.per_side + one_sided_rank(opponent)

    def probabilities(self, board: torch.Tensor) -> torch.Tensor:
        """The five outcome probabilities of the side to move: ``int8[B, 28]`` -> ``float64[B, 5]`` on
        the board's device. Finished games get the file's records of them (see the module docstring)."""
        index = self.index(board).cpu().numpy()
        raw = self.records[index, : 3 * NUM_OUTCOMES].reshape(-1, NUM_OUTCOMES, 3).astype(np.int64)
        values = raw[..., 0] | (raw[..., 1] << 8) | (raw[..., 2] << 16)
        return torch.from_numpy(values / _FULL_SCALE).to(board.device)

    def equity(self, board: torch.Tensor) -> torch.Tensor:
        """Cubeless money equity of the side to move, gammons and backgammons counted: ``float64[B]``."""
        return cubeless_equity(self.probabilities(board))


def build_hint(path: str | Path) -> str:
    checkers = "".join(ch for ch in Path(path).stem if ch.isdigit()) or "N"
    return (f"build it with GNU Backgammon's `makehyper -c {checkers} -f {path}` "
            "(Debian package gnubg; 3 checkers take hours)")


def load_hypergammon_database(path: str | Path | None = None, rules: Rules | None = None) -> HypergammonDatabase:
    """The database at ``path``, else at ``default_path`` for ``rules``'s checker count; checked against
    ``rules`` when given. Errors are one line: a missing file says how to build it."""
    if path is None:
        if rules is None:
            raise ValueError("load_hypergammon_database: give a path or the rules")
        path = default_path(checkers_of(rules))
    database = HypergammonDatabase(path)
    if rules is not None:
        database.check_rules(rules)
    return database


def afterstate_equities(database: HypergammonDatabase, afterstates: torch.Tensor) -> torch.Tensor:
    """The mover's exact cubeless equity of each afterstate (``int8[N, 28]``, the mover's side): the
    opponent's record of the flipped board, negated. A finished game (the mover has borne off every
    checker) is valued by the file's record of it, which the tests check against the game's score."""
    return -database.equity(flip_board(afterstates))


def bellman_equities(database: HypergammonDatabase, board: torch.Tensor) -> torch.Tensor:
    """The equity of each position one roll ahead: for each of the 21 rolls the afterstate the database
    values best for the mover, weighted by the rolls' chances: ``float64[B]``. At the file's fixed point
    this equals ``database.equity(board)``; the difference (the Bellman residual) says how far makehyper's
    value iteration still is from it."""
    batch = board.shape[0]
    rolls = len(roll_weights())
    afterstates = legal_afterstates(board.repeat_interleave(rolls, 0), roll_tensor().repeat(batch, 1),
                                    database.rules)
    values = afterstate_equities(database, afterstates.boards)
    best = values[afterstates.offsets + argmax_per_position(values, afterstates)]
    return (best.view(batch, rolls) * roll_weights(torch.float64)).sum(1)


def live_positions(checkers: int, mover_rank: torch.Tensor, opponent_rank: torch.Tensor) -> torch.Tensor:
    """Boards of the given rank pairs, less those with both sides on one point (no game reaches them)."""
    sides = all_one_sided(checkers)
    mover, opponent = sides[mover_rank], sides[opponent_rank]
    clash = ((mover[:, :24] > 0) & (opponent[:, :24].flip(-1) > 0)).any(1)
    return board_from_sides(mover[~clash], opponent[~clash])


def sampled_positions(database: HypergammonDatabase, samples: int, seed: int) -> torch.Tensor:
    """About ``samples`` live positions of the database, both sides with checkers left, drawn uniformly
    over its rank pairs (those with the sides on one point dropped): ``int8[<= samples, 28]``."""
    generator = torch.Generator().manual_seed(seed)
    mover = torch.randint(1, database.per_side, (samples,), generator=generator)
    opponent = torch.randint(1, database.per_side, (samples,), generator=generator)
    return live_positions(database.checkers, mover, opponent)


def bellman_residuals(database: HypergammonDatabase, board: torch.Tensor) -> torch.Tensor:
    """``|bellman_equities - database.equity|`` of each position: ``float64[B]``."""
    return (bellman_equities(database, board) - database.equity(board)).abs()
