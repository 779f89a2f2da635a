"""Two-sided bear-off database: exact cubeless and cubeful money values of small bear-offs.

What it holds
-------------
For every pair (mover's position, opponent's position) of up to ``max_checkers`` (6 by default)
checkers on each side's six home points, the mover to roll (``P = C(max_checkers + 6, 6)`` positions a
side, ranked as in ``bgtrain.values.bearoff``: 924 for six checkers, 853,776 pairs):

``win[i, j]``               P(the mover wins), both sides playing to maximise their chance of winning;
``no_double[k, i, j]``      the mover's cubeful money equity, normalised to the cube value, when it
                            does not double this turn, with the cube ``OWNERS[k]`` (centred, owned by
                            the mover, owned by the opponent): both sides then play the cube and the
                            checkers to maximise their cubeful equity.

Rank 0 is the empty position: ``win[i, 0] = 0`` and ``no_double[:, i, 0] = -1`` (the opponent has
borne everything off); an empty mover's row (``win[0, j] = 1``, equities +1) is never used. GNU Backgammon ships the same kind
of table (``gnubg_ts0.bd``: six checkers on six points, cubeless and cubeful equities).

No gammons: the database is used where each side has at most ``max_checkers`` checkers on the board,
fewer than the 15 it started with (``covers``), so each side has borne off at least one and only single
games are won. ``win`` therefore gives all five outcome probabilities, ``[win, 0, 0, 0, 0]``, and the
cubeless equity ``2 win - 1``; backgammons are impossible too.

How it is computed
------------------
Exact dynamic programming. With ``a`` the afterstate the mover plays with roll ``r`` (weights 1/36
and 2/36) from the legal afterstates of its position ``i`` (``engine.movegen.legal_afterstates``),
seen afterwards by the opponent as the pair ``(j, a)``::

    win(i, j)        = sum_r w_r max_a [1 - win(j, a)]
    ND_owner(i, j)   = sum_r w_r max_a [-E_flipped(owner)(j, a)]      (centred <-> centred, mover <-> opponent)
    E_centred        = max(ND_centred, min(2 ND_opponent, 1))        (double: the opponent takes or passes)
    E_mover          = max(ND_mover,   min(2 ND_opponent, 1))        (redouble)
    E_opponent       = ND_opponent                                    (the mover may not double)

The doubled game is the same position with the cube owned by the opponent at twice the value, hence
``2 ND_opponent``; passing gives the mover the current cube (+1). Equities normalised to the cube are
the same at every cube value, since nothing limits the cube here, so the recursion is over positions
and the three cube owners only. Checker play maximises each quantity separately (the best play for
the win and for each cube state), as GNU Backgammon does. An afterstate with nothing left (``a = 0``)
is a win: ``1 - win(j, 0) = 1`` and ``-E(j, 0) = +1``.

Every legal bear-off move lowers the mover's pip count, so ``(j, a)`` has a smaller pip total than
``(i, j)``: the pairs are solved in order of total pip count, and within one total, one batched step
per mover pip count (all its positions x all opponents of the complementary pip count x all 21 rolls
x all afterstates at once, the maximum over afterstates by ``scatter_reduce``). About five seconds
for six checkers on one CPU core (``scripts/build_bearoff.py --two-sided``), 19 s for seven, 80 s for
eight.

What is left out: beavers and the cube limit (the recursion has neither), match play (money only),
and variants other than standard scoring (``applies_to``).

The database is cached in ``default_path()`` (``$XDG_CACHE_HOME/bgtrain/bearoff-two-sided-v1-6.pt``,
else under ``~/.cache``; about 14 MB for six checkers, float32). ``load_two_sided_database`` builds it
on first use and says so on standard error; ``scripts/build_bearoff.py --two-sided`` builds it
explicitly.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from pathlib import Path

import torch

from bgtrain.cube.decision import CubeDecision, decide_from_equities
from bgtrain.cube.state import OWNERS, CubeState, MoneyGame
from bgtrain.files import load_tagged, save_tagged
from bgtrain.outcomes import NUM_OUTCOMES, WIN
from bgtrain.values.bearoff import (
    ALL_ROLLS,
    HOME_SIZE,
    BearoffDatabase,
    all_positions,
    both_bearing_off,
    home_boards,
    rank,
)
from engine.board import BOARD_WIDTH, flip_board
from engine.dice import roll_weights
from engine.movegen import legal_afterstates
from engine.rules import STANDARD, Rules

FORMAT = "bgtrain-bearoff-two-sided"
FORMAT_VERSION = 1
DEFAULT_CHECKERS = 6
MAX_CHECKERS = 8  # 3,003 positions a side, 9 million pairs: 1.2 GB and 80 s to build, a 144 MB file
ROLL_COUNT = len(ALL_ROLLS)
CENTRED, MOVER, OPPONENT = (OWNERS.index(owner) for owner in ("centred", "mover", "opponent"))


def default_path(max_checkers: int = DEFAULT_CHECKERS) -> Path:
    """``$XDG_CACHE_HOME/bgtrain/bearoff-two-sided-v1-6.pt`` (``~/.cache`` by default; 6 = checkers)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "bgtrain" / f"bearoff-two-sided-v{FORMAT_VERSION}-{max_checkers}.pt"


def applies_to(rules: Rules) -> bool:
    """Whether the database's values hold under ``rules``: standard scoring (a win is worth the cube,
    the first side off wins) and no acey-deucey extra rolls."""
    return rules.scoring == "standard" and not rules.first_off_loses and not rules.acey_deucey


def cube_equities(no_double: torch.Tensor) -> torch.Tensor:
    """The mover's cubeful equities after its best cube action (and the opponent's best answer), from
    the no-double equities: ``float[..., 3]`` -> ``float[..., 3]``, both in ``OWNERS`` order."""
    take_or_pass = torch.clamp(2.0 * no_double[..., OPPONENT], max=1.0)
    equities = no_double.clone()
    equities[..., CENTRED] = torch.maximum(no_double[..., CENTRED], take_or_pass)
    equities[..., MOVER] = torch.maximum(no_double[..., MOVER], take_or_pass)
    return equities


def build_two_sided_database(max_checkers: int = DEFAULT_CHECKERS, device: torch.device | str = "cpu",
                             verbose: bool = False) -> TwoSidedBearoffDatabase:
    """Solve the database by dynamic programming (module docstring). Seconds for six checkers."""
    if not 1 <= max_checkers <= MAX_CHECKERS:
        raise ValueError(f"two-sided bear-off: max_checkers must be 1..{MAX_CHECKERS}, not {max_checkers}")
    device = torch.device(device)
    start = time.perf_counter()
    home = all_positions(max_checkers, device)
    count = home.shape[0]

    # Every position x every roll in one call: one large call, rather than 21, never triggers the
    # engine's compilation of its kernels (seconds), and is faster anyway.
    boards = torch.zeros(count, BOARD_WIDTH, dtype=torch.int8, device=device)
    boards[:, 1 : HOME_SIZE + 1] = home.to(torch.int8)
    rolls = torch.tensor(ALL_ROLLS, dtype=torch.int8, device=device)
    after = legal_afterstates(boards.repeat_interleave(ROLL_COUNT, 0), rolls.repeat(count, 1))
    child = rank(after.boards[:, 1 : HOME_SIZE + 1])
    parent, roll = after.position // ROLL_COUNT, after.position % ROLL_COUNT

    pips = (home * torch.arange(1, HOME_SIZE + 1, device=device)).sum(1)
    most_pips = int(pips.max())
    levels = [(pips == level).nonzero(as_tuple=True)[0] for level in range(most_pips + 1)]
    # Per pip level: the afterstates of its positions and, for each, its (position in the level, roll)
    # segment, over which the best play is taken.
    where_in_level = torch.empty(count, dtype=torch.int64, device=device)
    for positions in levels:
        where_in_level[positions] = torch.arange(positions.numel(), device=device)
    level_of_parent = pips[parent]
    level_children = []
    for level in range(most_pips + 1):
        mask = level_of_parent == level
        segment = where_in_level[parent[mask]] * ROLL_COUNT + roll[mask]
        level_children.append((child[mask], segment))
    if verbose:
        print(f"  {child.numel():,} afterstates of {count:,} positions x 21 rolls "
              f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)

    # values[k, x, y] for the side to move at x against y: k = 0 its P(win), then its equities after the
    # cube action with the cube centred, owned by the OTHER side, owned by itself. That order puts
    # what the opponent's value is read from beside each result: the mover's win from the opponent's
    # win, ND_centred from E_centred, ND_mover from the opponent's E_opponent, ND_opponent from its
    # E_mover. Column 0 (the other side has finished): lost. Row 0 (finished itself): won (unused).
    values = torch.zeros(4, count, count, dtype=torch.float64, device=device)
    values[1:, :, 0] = -1.0
    values[0, 0, 1:] = 1.0
    values[1:, 0, 1:] = 1.0
    no_double = torch.zeros(len(OWNERS), count, count, dtype=torch.float64, device=device)
    no_double[:, :, 0] = -1.0
    no_double[:, 0, 1:] = 1.0
    weights = roll_weights(torch.float64, device)
    for total in range(2, 2 * most_pips + 1):
        for mover_pips in range(max(1, total - most_pips), min(most_pips, total - 1) + 1):
            movers, opponents = levels[mover_pips], levels[total - mover_pips]
            if movers.numel() == 0 or opponents.numel() == 0:
                continue
            kids, segment = level_children[mover_pips]
            # The opponent's values after each play: [4, opponents, afterstates], all final already
            # (smaller pip total). The best play minimises them.
            seen = values.index_select(1, opponents).index_select(2, kids)
            best = torch.full((4, opponents.numel(), movers.numel() * ROLL_COUNT), math.inf,
                              dtype=torch.float64, device=device)
            best.scatter_reduce_(2, segment.expand_as(seen), seen, "amin")
            average = (best.view(4, opponents.numel(), movers.numel(), ROLL_COUNT) * weights).sum(-1)
            rows, columns = movers.unsqueeze(1), opponents.unsqueeze(0)
            layer = -average.transpose(1, 2)  # [4, movers, opponents]
            values[0, rows, columns] = 1.0 + layer[0]
            no_double[:, rows, columns] = layer[1:]  # centred, mover, opponent: OWNERS order
            equities = cube_equities(layer[1:].permute(1, 2, 0))
            values[1, rows, columns] = equities[..., CENTRED]
            values[2, rows, columns] = equities[..., OPPONENT]
            values[3, rows, columns] = equities[..., MOVER]
    database = TwoSidedBearoffDatabase(max_checkers, values[0], no_double)
    if verbose:
        print(f"  solved {count * count:,} pairs in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return database


class TwoSidedBearoffDatabase:
    """Exact values of small two-sided bear-offs (module docstring).

    ``win: float32[P, P]`` and ``no_double: float32[3, P, P]`` (``OWNERS`` order), indexed by the
    mover's and the opponent's position ranks (``bgtrain.values.bearoff.rank``).
    """

    def __init__(self, max_checkers: int, win: torch.Tensor, no_double: torch.Tensor) -> None:
        self.max_checkers = max_checkers
        # float32, as stored: a built and a loaded database give the same numbers.
        self.win = win.to(torch.float32)
        self.no_double = no_double.to(torch.float32)

    @property
    def device(self) -> torch.device:
        return self.win.device

    def to(self, device: torch.device | str) -> TwoSidedBearoffDatabase:
        return TwoSidedBearoffDatabase(self.max_checkers, self.win.to(device), self.no_double.to(device))

    def covers(self, board: torch.Tensor, rules: Rules = STANDARD) -> torch.Tensor:
        """The positions this database values exactly: ``int8[B, 28]`` -> ``bool[B]``.

        Both sides bearing off (every checker on its own home points, none on the bar or in hand) with
        1..``max_checkers`` checkers each, fewer than ``rules.checkers_per_side`` where gammons count
        (so that no gammon is possible), under rules it ``applies_to``.
        """
        if not applies_to(rules):
            return torch.zeros(board.shape[0], dtype=torch.bool, device=board.device)
        limit = self.max_checkers
        if rules.gammons:
            limit = min(limit, rules.checkers_per_side - 1)
        return both_bearing_off(board, limit)

    def _ranks(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mover, opponent = home_boards(board)
        return rank(mover), rank(opponent)

    def win_probability(self, board: torch.Tensor) -> torch.Tensor:
        """P(the side to move wins) of covered positions: ``int8[B, 28]`` -> ``float32[B]``."""
        mover, opponent = self._ranks(board)
        return self.win[mover, opponent]

    def outcomes(self, board: torch.Tensor) -> torch.Tensor:
        """The five outcome probabilities (``bgtrain.outcomes``) of covered positions, for the side to
        move: ``int8[B, 28]`` -> ``float32[B, 5]``, ``[win, 0, 0, 0, 0]``."""
        probs = torch.zeros(board.shape[0], NUM_OUTCOMES, dtype=torch.float32, device=board.device)
        probs[:, WIN] = self.win_probability(board)
        return probs

    def no_double_equities(self, board: torch.Tensor) -> torch.Tensor:
        """The mover's cubeful money equities if it does not double now, normalised to the cube, with
        the cube centred, owned by the mover, owned by the opponent: ``int8[B, 28]`` -> ``float32[B, 3]``."""
        mover, opponent = self._ranks(board)
        return self.no_double[:, mover, opponent].T

    def cubeful_equities(self, board: torch.Tensor) -> torch.Tensor:
        """The mover's cubeful money equities after the best cube action (double when it gains; the
        opponent takes or passes, whichever is better for it), normalised to the cube, with the cube
        centred, owned by the mover, owned by the opponent: ``int8[B, 28]`` -> ``float32[B, 3]``.
        "Double, pass" is +1.0."""
        return cube_equities(self.no_double_equities(board))

    def money_cube_decision(self, board: torch.Tensor, cube: CubeState = CubeState(),
                            game: MoneyGame | None = None) -> CubeDecision:
        """The exact money cube decision of covered positions (``bgtrain.cube.CubeDecision``, one row per
        position), for one cube state and money game. No double, double/take and double/pass are the
        database's cubeful equities; ``cubeless_equity`` is ``2 win - 1``; ``efficiency`` is NaN (no
        Janowski interpolation). The doubled side's beaver is labelled as ``bgtrain.cube`` labels it,
        but the recursion itself plays without beavers. ``game``: ``MoneyGame()`` when None."""
        game = MoneyGame() if game is None else game
        if not isinstance(game, MoneyGame):
            raise TypeError("the two-sided bear-off database holds money equities only, not match play")
        if game.cube_limit is not None:
            raise ValueError("the two-sided bear-off database's equities assume no cube limit")
        no_double = self.no_double_equities(board).to(torch.float64)
        decision = decide_from_equities(
            no_double[:, OWNERS.index(cube.owner)], 2.0 * no_double[:, OPPONENT], cube, game,
            gammon_possible=torch.zeros(board.shape[0], dtype=torch.bool, device=board.device),
        )
        cubeless = 2.0 * self.win_probability(board).to(torch.float64) - 1.0
        return dataclasses.replace(decision, cubeless_equity=cubeless)

    def save(self, path: str | Path) -> Path:
        """Write atomically, tagged with this format (``bgtrain.files.save_tagged``)."""
        return save_tagged(path, FORMAT, FORMAT_VERSION, {
            "max_checkers": self.max_checkers, "owners": list(OWNERS), "win": self.win.cpu(),
            "no_double": self.no_double.cpu()})

    @classmethod
    def load(cls, path: str | Path, device: torch.device | str = "cpu") -> TwoSidedBearoffDatabase:
        path = Path(path)
        payload = load_tagged(path, FORMAT, FORMAT_VERSION, "two-sided bear-off database", weights_only=True)
        max_checkers = int(payload["max_checkers"])
        size = math.comb(max_checkers + HOME_SIZE, HOME_SIZE)
        win, no_double = payload.get("win"), payload.get("no_double")
        if (not isinstance(win, torch.Tensor) or not isinstance(no_double, torch.Tensor)
                or win.shape != (size, size) or no_double.shape != (len(OWNERS), size, size)
                or payload.get("owners") != list(OWNERS)):
            raise ValueError(f"{path} is damaged: tables do not match {max_checkers} checkers a side")
        return cls(max_checkers, win, no_double).to(device)


def load_two_sided_database(path: str | Path | None = None, device: torch.device | str = "cpu",
                            build: bool = True, max_checkers: int = DEFAULT_CHECKERS) -> TwoSidedBearoffDatabase:
    """The cached database at ``path`` (``default_path(max_checkers)`` when None); built and cached first
    when the file is missing and ``build`` is true (seconds, announced on standard error). A file
    describes itself: its own ``max_checkers`` is used."""
    path = Path(path) if path is not None else default_path(max_checkers)
    if not path.exists() and build:
        print(f"bgtrain: building the two-sided bear-off database once (seconds) into {path}", file=sys.stderr)
        build_two_sided_database(max_checkers).save(path)
    return TwoSidedBearoffDatabase.load(path, device)


def bearoff_outcomes(board: torch.Tensor, rules: Rules, one_sided: BearoffDatabase | None,
                     two_sided: TwoSidedBearoffDatabase | None, flipped: bool = False
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact bear-off values from both databases (either may be None): the rows of ``board`` one of them
    covers (``int64[C]``) and their outcome probabilities (``float32[C, 5]``, for the side to move of
    ``board``, or with ``flipped`` for that of ``flip_board(board)``, the side to move after an
    afterstate): the two-sided database's where it covers, else the one-sided one's."""
    one = two = None
    if one_sided is not None:
        one = one_sided.covers(board)
    if two_sided is not None:
        if one is not None and one_sided.max_checkers >= two_sided.max_checkers:
            # A subset of the one-sided database's positions: count checkers on those rows only.
            index = one.nonzero(as_tuple=True)[0]
            two = torch.zeros_like(one)
            two[index] = two_sided.covers(board[index], rules)
        else:
            two = two_sided.covers(board, rules)
    covered = one if two is None else two if one is None else one | two
    if covered is None:
        return (torch.zeros(0, dtype=torch.int64, device=board.device),
                torch.zeros(0, NUM_OUTCOMES, dtype=torch.float32, device=board.device))
    index = covered.nonzero(as_tuple=True)[0]
    rows = flip_board(board[index]) if flipped else board[index]
    values = torch.empty(index.numel(), NUM_OUTCOMES, dtype=torch.float32, device=board.device)
    exact = two[index] if two is not None else torch.zeros_like(index, dtype=torch.bool)
    if not bool(exact.all()):  # rows outside the two-sided database are in the one-sided one
        values[~exact] = one_sided.outcomes(rows[~exact], rules)
    if bool(exact.any()):
        values[exact] = two_sided.outcomes(rows[exact])
    return index, values


def exact_money_decision(database: TwoSidedBearoffDatabase | None, board: torch.Tensor, cube: CubeState,
                         game, rules: Rules = STANDARD) -> CubeDecision | None:
    """``database.money_cube_decision`` of ``board`` (``int8[B, 28]``) where it is exact for every row: a
    database, money play without a cube limit, every position covered; else None (the caller falls
    back on an estimate such as ``bgtrain.cube.cube_decision``)."""
    if database is None or not isinstance(game, MoneyGame) or game.cube_limit is not None or not rules.cube:
        return None
    board = board.to(database.device)
    if not bool(database.covers(board, rules).all()):
        return None
    return database.money_cube_decision(board, cube, game)
