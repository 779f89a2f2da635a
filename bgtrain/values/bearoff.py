"""One-sided bear-off database: exact race endings when both sides are bearing off.

What it holds
-------------
For every position of up to ``max_checkers`` (15) checkers on one side's six home points, with nothing
else of that side on the board (C(15 + 6, 6) = 54,264 positions, the empty one included):

``rolls_off[i, n]``        P(all checkers are borne off after exactly n of this side's rolls);
``rolls_first_off[i, n]``  P(the first checker is borne off after exactly n rolls) ("gammon distribution").

How it is computed
------------------
By dynamic programming over the project's own move generator (``engine.movegen.legal_afterstates``),
batched: for each of the 21 rolls, the legal afterstates of all 54,264 positions at once (no opposing
checkers on the board), each afterstate indexed by its combinatorial rank (``rank``). Every legal move
of a home-board position lowers its pip count, so positions are solved in order of pip count, one
batched step per pip level and roll.

The strategy: for ``rolls_off``, each roll plays the afterstate with the lowest expected number of
rolls still needed to bear everything off; for ``rolls_first_off``, the lowest expected number of rolls
to bear off one checker (a side saving the gammon). Exact ties go to the afterstate of lowest rank, so
the tables are deterministic. This is the choice GNU Backgammon's one-sided database makes
(``makebearoff.c``: minimise the mean number of rolls; a separate table for the first checker off).

Two-sided use, and what is exact
--------------------------------
With both sides bearing off (every checker of each side on its own home points, none on the bar), the
sides no longer interact, so their roll counts are independent. The side to move (M) rolls first, so
it wins when it finishes on its n-th roll while the opponent (O) still needs at least n rolls:

    P(mover wins)          = sum_n P(M = n) P(O >= n)
    P(mover wins a gammon) = sum_n P(M = n) P(O_first >= n)        (only while O has borne off none)
    P(mover loses a gammon)= sum_n P(O = n) P(M_first >= n + 1)    (only while M has borne off none)

and no backgammon is possible (no checker can be in the winner's home board). ``P(win)`` is exact for
both sides playing to minimise their expected number of rolls; the best play for the win can differ
from that in rare positions (a two-sided database would be needed to be exact for the win), and the
gammon chances assume each side plays the table's strategy for its goal, as GNU Backgammon's one-sided
evaluation does.

The database is cached in a file (``default_path()``: ``$XDG_CACHE_HOME/bgtrain/bearoff-v1.pt``, else
``~/.cache/bgtrain/bearoff-v1.pt``, about 10 MB). ``load_bearoff_database`` builds it on first use
(roughly ten seconds to a minute on a CPU) and says so on standard error; ``scripts/build_bearoff.py``
builds it explicitly.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import time
from pathlib import Path

import torch

from bgtrain.files import load_tagged, save_tagged
from bgtrain.outcomes import LOSE_GAMMON, NUM_OUTCOMES, WIN, WIN_GAMMON
from engine.board import BOARD_WIDTH
from engine.dice import ALL_ROLLS, roll_weights
from engine.movegen import legal_afterstates
from engine.position_facts import all_home
from engine.rules import Rules

FORMAT = "bgtrain-bearoff"
FORMAT_VERSION = 1
HOME_SIZE = 6
MAX_CHECKERS = 15
_MAX_ROLLS = 64  # working width of the distributions; trimmed after the build
_MOVEGEN_CHUNK = 4096  # positions per legal_afterstates call while building (bounds its memory)


def default_path() -> Path:
    """Where the database is cached: ``$XDG_CACHE_HOME/bgtrain/bearoff-v1.pt`` (``~/.cache`` by default)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "bgtrain" / f"bearoff-v{FORMAT_VERSION}.pt"


def position_count(max_checkers: int = MAX_CHECKERS) -> int:
    """Positions of 0..max_checkers checkers on 6 points: C(max_checkers + 6, 6)."""
    return math.comb(max_checkers + HOME_SIZE, HOME_SIZE)


# Ranking. A position (c1..c6) with c1 + ... + c6 <= m is a row of m + 6 slots: c1 ones, a zero, c2 ones,
# a zero, ..., c6 ones, a zero, then the m - sum unused ones. The six zeros sit at
# z_k = c1 + ... + ck + (k - 1), strictly increasing in 0..m + 5, and every 6-subset of slots is one
# position, so the combinatorial number system rank(z) = sum_k C(z_k, k) maps the positions one to one
# onto 0 .. C(m + 6, 6) - 1.

_binomial_cache: dict[tuple[int, torch.device], torch.Tensor] = {}


def _binomials(size: int, device: torch.device) -> torch.Tensor:
    """``int64[size, 7]``: C(n, k) for n < size, k <= 6."""
    table = _binomial_cache.get((size, device))
    if table is None:
        table = torch.tensor(
            [[math.comb(n, k) for k in range(HOME_SIZE + 1)] for n in range(size)], dtype=torch.int64
        ).to(device)
        _binomial_cache[(size, device)] = table
    return table


def rank(home: torch.Tensor) -> torch.Tensor:
    """The index of each home-board position: ``int[..., 6]`` (checkers on points 1..6) -> ``int64[...]``.

    Independent of the database size: a position with at most m checkers has a rank below C(m + 6, 6).
    """
    counts = home.to(torch.int64)
    zeros_at = counts.cumsum(-1) + torch.arange(HOME_SIZE, device=home.device)
    table = _binomials(MAX_CHECKERS + HOME_SIZE, home.device)
    k = torch.arange(1, HOME_SIZE + 1, device=home.device).expand_as(zeros_at)
    return table[zeros_at, k].sum(-1)


def all_positions(max_checkers: int = MAX_CHECKERS, device: torch.device | str = "cpu") -> torch.Tensor:
    """Every home-board position with at most ``max_checkers`` checkers, row i of rank i: ``int64[P, 6]``."""
    # itertools rather than torch.combinations, which builds the full 21^6 product first.
    zeros_at = torch.tensor(list(itertools.combinations(range(max_checkers + HOME_SIZE), HOME_SIZE)))
    previous = torch.cat([torch.full((zeros_at.shape[0], 1), -1), zeros_at[:, :-1]], 1)
    home = zeros_at - previous - 1
    ordered = torch.empty_like(home)
    ordered[rank(home)] = home
    return ordered.to(device)


def build_bearoff_database(max_checkers: int = MAX_CHECKERS, device: torch.device | str = "cpu",
                           verbose: bool = False) -> BearoffDatabase:
    """Solve the database by dynamic programming (see the module docstring). Seconds for 15 checkers."""
    if not 1 <= max_checkers <= MAX_CHECKERS:
        raise ValueError(f"max_checkers must be 1..{MAX_CHECKERS}, not {max_checkers}")
    device = torch.device(device)
    start = time.perf_counter()
    home = all_positions(max_checkers, device)
    total = home.shape[0]
    pips = (home * torch.arange(1, HOME_SIZE + 1, device=device)).sum(1)
    count = home.sum(1)
    # Solve in order of pip count: every legal move lowers it, so an afterstate is always solved first.
    order = torch.argsort(pips, stable=True)
    level_pips = pips[order]
    levels = int(level_pips.max()) + 1
    level_bounds = torch.searchsorted(level_pips, torch.arange(levels + 1, device=device)).tolist()

    boards = torch.zeros(total, BOARD_WIDTH, dtype=torch.int8, device=device)
    boards[:, 1 : HOME_SIZE + 1] = home[order].to(torch.int8)
    rolls = []  # per roll: (afterstate rank, parent's index in `order`, afterstate slice bounds per level)
    for high, low in ALL_ROLLS:
        children, parents = [], []
        # In chunks: fifteen checkers and a small double expand to many partial plays at once.
        for first in range(0, total, _MOVEGEN_CHUNK):
            chunk = boards[first : first + _MOVEGEN_CHUNK]
            after = legal_afterstates(chunk, torch.tensor([high, low], device=device).expand(chunk.shape[0], 2))
            children.append(rank(after.boards[:, 1 : HOME_SIZE + 1]))
            parents.append(after.position + first)
        child, position = torch.cat(children), torch.cat(parents)
        bounds = torch.searchsorted(position, torch.tensor(level_bounds, device=device)).tolist()
        rolls.append((child, position, bounds))
    if verbose:
        afterstates = sum(child.numel() for child, _, _ in rolls)
        print(f"  {afterstates:,} afterstates of {total:,} positions x 21 rolls "
              f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)

    weights = roll_weights(torch.float64, device)
    expected = torch.zeros(total, dtype=torch.float64, device=device)
    expected_first = torch.zeros(total, dtype=torch.float64, device=device)
    rolls_off = torch.zeros(total, _MAX_ROLLS, dtype=torch.float64, device=device)
    rolls_first_off = torch.zeros(total, _MAX_ROLLS, dtype=torch.float64, device=device)
    done = torch.zeros(_MAX_ROLLS, dtype=torch.float64, device=device)
    done[0] = 1.0
    # The empty position: nothing left to bear off (its "first off" is never asked for).
    empty = int(rank(torch.zeros(HOME_SIZE, dtype=torch.int64, device=device)))
    rolls_off[empty] = done
    rolls_first_off[empty] = done

    for level in range(1, levels):
        begin, end = level_bounds[level], level_bounds[level + 1]
        if begin == end:
            continue
        parents = rank(home[order[begin:end]])
        size = end - begin
        mean = torch.zeros(size, dtype=torch.float64, device=device)
        mean_first = torch.zeros(size, dtype=torch.float64, device=device)
        dist = torch.zeros(size, _MAX_ROLLS, dtype=torch.float64, device=device)
        dist_first = torch.zeros(size, _MAX_ROLLS, dtype=torch.float64, device=device)
        for weight, (child, position, bounds) in zip(weights, rolls):
            lo, hi = bounds[level], bounds[level + 1]
            kids, local = child[lo:hi], position[lo:hi] - begin
            chosen = _argmin_per_parent(expected[kids], kids, local, size)
            mean += weight * expected[chosen]
            dist += weight * rolls_off[chosen]
            # First checker off: an afterstate with fewer checkers is reached at once (0 more rolls).
            finished = count[kids] < count[parents[local]]
            value = torch.where(finished, 0.0, expected_first[kids])
            chosen_first = _argmin_per_parent(value, kids, local, size)
            reached = count[chosen_first] < count[parents]
            mean_first += weight * torch.where(reached, 0.0, expected_first[chosen_first])
            dist_first += weight * torch.where(reached.unsqueeze(1), done, rolls_first_off[chosen_first])
        expected[parents] = 1.0 + mean
        expected_first[parents] = 1.0 + mean_first
        # One more roll shifts the distribution by one.
        rolls_off[parents, 1:] = dist[:, :-1]
        rolls_first_off[parents, 1:] = dist_first[:, :-1]
    if float(rolls_off[:, -1].abs().max()) > 0 or float(rolls_first_off[:, -1].abs().max()) > 0:
        raise RuntimeError("bear-off distributions longer than the working width")
    database = BearoffDatabase(max_checkers, _trim(rolls_off), _trim(rolls_first_off))
    if verbose:
        print(f"  solved in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return database


def _argmin_per_parent(values: torch.Tensor, kids: torch.Tensor, local: torch.Tensor, size: int) -> torch.Tensor:
    """Per parent (``local`` 0..size-1), the rank of the child of lowest value; ties to the lowest rank."""
    best = torch.full((size,), float("inf"), dtype=values.dtype, device=values.device)
    best = best.scatter_reduce(0, local, values, "amin")
    candidate = torch.where(values == best[local], kids, torch.iinfo(torch.int64).max)
    chosen = torch.full((size,), torch.iinfo(torch.int64).max, dtype=torch.int64, device=values.device)
    return chosen.scatter_reduce(0, local, candidate, "amin")


def _trim(distribution: torch.Tensor) -> torch.Tensor:
    used = int((distribution.abs().sum(0) > 0).nonzero().max()) + 1
    return distribution[:, :used].contiguous()


def home_boards(board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mover's, opponent's) checkers on their own points 1..6: ``int8[B, 28]`` -> ``int8[B, 6]`` each."""
    mover = board[:, 1 : HOME_SIZE + 1].clamp(min=0)
    # The opponent's point k is the mover's point 25 - k.
    opponent = (-board[:, 25 - HOME_SIZE : 25]).clamp(min=0).flip(-1)
    return mover, opponent


def both_bearing_off(board: torch.Tensor, max_checkers: int) -> torch.Tensor:
    """Both sides are bearing off with 1..``max_checkers`` checkers each: ``int8[B, 28]`` -> ``bool[B]``.

    Every checker of each side on its own home points (none on the bar or in hand), at most
    ``max_checkers`` of each on the board, and at least one (a side with none has already won).
    """
    mover_home, opponent_home = all_home(board)
    covered = mover_home & opponent_home
    index = covered.nonzero(as_tuple=True)[0]  # usually few: count checkers on those only
    if index.numel():
        mover, opponent = home_boards(board[index])
        mover_count = mover.sum(1, dtype=torch.int32)
        opponent_count = opponent.sum(1, dtype=torch.int32)
        covered[index] = (
            (mover_count >= 1) & (mover_count <= max_checkers)
            & (opponent_count >= 1) & (opponent_count <= max_checkers)
        )
    return covered


class BearoffDatabase:
    """Roll-count distributions of every home-board position (module docstring) and their two-sided use.

    ``rolls_off: float64[P, R]`` and ``rolls_first_off: float64[P, G]`` with ``P = C(max_checkers + 6, 6)``,
    row i for the position of rank i (``rank``).
    """

    def __init__(self, max_checkers: int, rolls_off: torch.Tensor, rolls_first_off: torch.Tensor) -> None:
        self.max_checkers = max_checkers
        self.rolls_off = rolls_off
        self.rolls_first_off = rolls_first_off
        # P(needs >= n rolls) for n = 0..R (one column more, all zero): the opponent's side of the sums.
        self._tail_off = _tails(rolls_off)
        self._tail_first_off = _tails(rolls_first_off)

    @property
    def device(self) -> torch.device:
        return self.rolls_off.device

    def to(self, device: torch.device | str) -> BearoffDatabase:
        return BearoffDatabase(self.max_checkers, self.rolls_off.to(device), self.rolls_first_off.to(device))

    def expected_rolls(self, home: torch.Tensor) -> torch.Tensor:
        """Mean number of rolls to bear off every checker: ``int[..., 6]`` -> ``float64[...]``."""
        steps = torch.arange(self.rolls_off.shape[1], dtype=torch.float64, device=self.device)
        return (self.rolls_off[rank(home)] * steps).sum(-1)

    def covers(self, board: torch.Tensor) -> torch.Tensor:
        """Both sides are bearing off, within this database: ``int8[B, 28]`` -> ``bool[B]``
        (``both_bearing_off`` with this database's ``max_checkers``)."""
        return both_bearing_off(board, self.max_checkers)

    def outcomes(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        """The five outcome probabilities for the side to move of covered positions (``covers``):
        ``int8[B, 28]`` -> ``float32[B, 5]``. See the module docstring for the formulas."""
        mover, opponent = (home.to(torch.int64) for home in home_boards(board))
        mover_rank, opponent_rank = rank(mover), rank(opponent)
        mover_off = rules.checkers_per_side - mover.sum(1)
        opponent_off = rules.checkers_per_side - opponent.sum(1)
        steps = self.rolls_off.shape[1]
        mover_finishes = self.rolls_off[mover_rank]  # P(M = n), n = 0..R-1
        win = (mover_finishes * self._tail_off[opponent_rank, :steps]).sum(1)
        probs = torch.zeros(board.shape[0], NUM_OUTCOMES, dtype=torch.float64, device=board.device)
        probs[:, WIN] = win
        if rules.gammons:
            # Opponent still needs >= n rolls for its first checker: tail_first_off[n] (0 past its end).
            opponent_first_tail = _pad(self._tail_first_off[opponent_rank], steps)
            win_gammon = (mover_finishes * opponent_first_tail[:, :steps]).sum(1)
            # Mover needs >= n + 1 rolls for its first checker while the opponent finishes on roll n.
            mover_first_tail = _pad(self._tail_first_off[mover_rank], steps + 1)
            opponent_finishes = self.rolls_off[opponent_rank]
            lose_gammon = (opponent_finishes * mover_first_tail[:, 1 : steps + 1]).sum(1)
            probs[:, WIN_GAMMON] = torch.where(opponent_off == 0, win_gammon, 0.0)
            probs[:, LOSE_GAMMON] = torch.where(mover_off == 0, lose_gammon, 0.0)
        return probs.to(torch.float32)

    def save(self, path: str | Path) -> Path:
        """Write atomically (``bgtrain.files.save_tagged``)."""
        return save_tagged(path, FORMAT, FORMAT_VERSION, {
            "max_checkers": self.max_checkers,
            # float32 on disk halves the file; sums of it stay within 1e-6 of the float64 solve
            "rolls_off": self.rolls_off.to(torch.float32).cpu(),
            "rolls_first_off": self.rolls_first_off.to(torch.float32).cpu(),
        })

    @classmethod
    def load(cls, path: str | Path, device: torch.device | str = "cpu") -> BearoffDatabase:
        path = Path(path)
        payload = load_tagged(path, FORMAT, FORMAT_VERSION, "bear-off database", weights_only=True)
        try:
            max_checkers = int(payload["max_checkers"])
            rolls_off = payload["rolls_off"].to(torch.float64)
            rolls_first_off = payload["rolls_first_off"].to(torch.float64)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ValueError(f"{path} is damaged: an entry of the bear-off database is missing or malformed") from None
        if rolls_off.dim() != 2 or rolls_off.shape[0] != position_count(max_checkers):
            raise ValueError(f"{path} is damaged: {rolls_off.shape[0]} rows for {max_checkers} checkers")
        return cls(max_checkers, rolls_off, rolls_first_off).to(device)


def _tails(distribution: torch.Tensor) -> torch.Tensor:
    """``P(X >= n)`` for n = 0..R from ``P(X = n)``, n = 0..R-1: ``[P, R]`` -> ``[P, R + 1]``."""
    tail = distribution.flip(1).cumsum(1).flip(1)
    return torch.cat([tail, torch.zeros_like(tail[:, :1])], 1)


def _pad(table: torch.Tensor, width: int) -> torch.Tensor:
    if table.shape[1] >= width:
        return table
    return torch.cat([table, table.new_zeros(table.shape[0], width - table.shape[1])], 1)


def load_bearoff_database(path: str | Path | None = None, device: torch.device | str = "cpu",
                          build: bool = True) -> BearoffDatabase:
    """The cached database at ``path`` (``default_path()`` when None); built and cached first when the
    file is missing and ``build`` is true (a one-time cost, announced on standard error)."""
    path = Path(path) if path is not None else default_path()
    if not path.exists() and build:
        print(f"bgtrain: building the bear-off database once (ten seconds or so on an idle core) into {path}",
              file=sys.stderr)
        build_bearoff_database().save(path)
    return BearoffDatabase.load(path, device)
