"""The doubling cube: cubeful equities and cube decisions from outcome probabilities.

This module consumes the five cumulative outcome probabilities of ``bgtrain.outcomes`` (for the SIDE TO
MOVE, before its roll) and knows nothing of the engine or the network. Whoever supplies the
probabilities decides the search depth: the network's own output makes these 0-ply decisions, the
evaluator's n-ply average makes "n-ply probabilities + Janowski" decisions (see ``docs/cube.md``).

Everything is seen from the side to move ("mover"); the side that would take a double is the
"opponent". Equities are on GNU Backgammon's scale: normalised to the current cube value (money:
points divided by ``cube.value``; match: EMG, "equivalent money game", from the match winning chances),
so "double, pass" is always worth +1.

The formulas are GNU Backgammon's 0-ply cubeful evaluation (``eval.c``), re-derived and written here
for batched tensors:

* money play (``Cl2CfMoney``, ``MoneyLive``): Rick Janowski's interpolation between the dead-cube
  equity (no one may ever double) and the fully live-cube equity (doubles and takes at the exact
  points), ``E = (1 - x) E_dead + x E_live``, with cube efficiency ``x``. The live equity is linear in
  the winning chance ``p`` between the take point and the cash point computed from the average value
  ``W`` of a win and ``L`` of a loss (Janowski, "Take-Points in Money Games", 1993):
  ``take point = (L - 1/2) / (W + L + 1/2)`` and ``cash point = (L + 1) / (W + L + 1/2)``;
* match play (``Cl2CfMatch*`` and ``matchequity.c`` ``GetPoints``): the same interpolation in match
  winning chances, with live-cube cash points computed recursively from the highest useful cube
  down, using the match equity table (Joern Thyssen's generalisation of Janowski);
* the decision (``FindBestCubeDecision``): no double, double/take, double/pass, too good, optional
  doubles and beavers, exactly as GNU Backgammon classifies them.

Deliberate extensions (GNU Backgammon has none of these): a money cube limit, handled by running the
money cash-point recursion only up to the limit (with no limit it equals Janowski's closed form); and
automatic doubles, which only set the initial cube value (``initial_cube``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np
import torch

from bgtrain.met import MatchEquityTable, default_met
from bgtrain.outcomes import LOSE_BACKGAMMON, LOSE_GAMMON, NUM_OUTCOMES, WIN, WIN_BACKGAMMON, WIN_GAMMON

OWNERS = ("centred", "mover", "opponent")

# eval.c isOptional: two equities closer than this make the double "optional".
OPTIONAL_EPSILON = 1e-5
# eval.c Cl2CfMoney: below this winning chance (or above 1 minus it) the cube is treated as dead.
DEGENERATE_WIN = 1e-7


# ---------------------------------------------------------------------------------------------------
# States and rules


def _is_power_of_two(value: int) -> bool:
    return value >= 1 and value & (value - 1) == 0


@dataclass(frozen=True)
class CubeState:
    """The cube: its value and who owns it, from the side to move.

    ``owner``: ``"centred"`` (either side may double), ``"mover"`` (only the side to move may
    redouble) or ``"opponent"`` (the side to move may not double).
    """

    value: int = 1
    owner: str = "centred"

    def __post_init__(self) -> None:
        if (
            isinstance(self.value, bool)
            or not isinstance(self.value, int)
            or not _is_power_of_two(self.value)
        ):
            raise ValueError(f"cube value must be a power of two >= 1, not {self.value!r}")
        if self.owner not in OWNERS:
            raise ValueError(f"unknown cube owner {self.owner!r}: expected one of {', '.join(OWNERS)}")

    def flipped(self) -> CubeState:
        """The same cube seen by the other side."""
        owner = {"mover": "opponent", "opponent": "mover"}.get(self.owner, self.owner)
        return CubeState(self.value, owner)

    def doubled(self) -> CubeState:
        """The cube after the side to move doubles and the opponent takes."""
        return CubeState(2 * self.value, "opponent")


@dataclass(frozen=True)
class MoneyGame:
    """Money play rules.

    ``jacoby``: gammons and backgammons count only once the cube has been turned (GNU's default on).
    ``beavers``: the taker may immediately redouble and keep the cube (reported, as GNU does).
    ``cube_limit``: the highest cube value allowed (a power of two), ``None`` for no limit.
    ``automatic_doubles``: how many tied opening rolls may each double the centred cube (0: off).
    """

    jacoby: bool = True
    beavers: bool = False
    cube_limit: int | None = None
    automatic_doubles: int = 0

    def __post_init__(self) -> None:
        if self.cube_limit is not None and (
            isinstance(self.cube_limit, bool) or not _is_power_of_two(int(self.cube_limit))
        ):
            raise ValueError(f"cube limit must be a power of two >= 1 or None, not {self.cube_limit!r}")
        if self.automatic_doubles < 0:
            raise ValueError(f"automatic_doubles must be >= 0, not {self.automatic_doubles}")

    def can_double(self, cube: CubeState) -> bool:
        """Whether the cube may go from ``cube.value`` to twice that under the limit."""
        return self.cube_limit is None or 2 * cube.value <= self.cube_limit


def initial_cube(game: MoneyGame, opening_ties: int) -> CubeState:
    """The centred cube at the start of a money game after ``opening_ties`` tied opening rolls.

    With automatic doubles each tie doubles the cube, at most ``game.automatic_doubles`` times and
    never past the cube limit; the cube stays centred (it has not been turned, so the Jacoby rule
    still applies).
    """
    if opening_ties < 0:
        raise ValueError(f"opening_ties must be >= 0, not {opening_ties}")
    value = 2 ** min(opening_ties, game.automatic_doubles)
    if game.cube_limit is not None:
        value = min(value, game.cube_limit)
    return CubeState(value, "centred")


@dataclass(frozen=True)
class MatchGame:
    """A game of a match to ``length`` points, seen from the side to move.

    ``score``: (mover's points, opponent's points), each below ``length``. ``crawford``: this is the
    Crawford game (the first game after a side reached ``length - 1``; no doubling). A game with a
    side at ``length - 1`` that is not the Crawford game is post-Crawford.
    """

    length: int
    score: tuple[int, int] = (0, 0)
    crawford: bool = False
    met: MatchEquityTable = field(default_factory=default_met, repr=False)

    def __post_init__(self) -> None:
        mover, opponent = self.score
        if self.length < 1:
            raise ValueError(f"match length must be >= 1, not {self.length}")
        if self.length > self.met.max_length:
            raise ValueError(
                f"a {self.length}-point match is longer than the match equity table's {self.met.max_length}"
            )
        if mover < 0 or opponent < 0:
            raise ValueError(f"score {mover}-{opponent}: scores must be >= 0")
        if mover >= self.length or opponent >= self.length:
            raise ValueError(
                f"score {mover}-{opponent} is beyond a {self.length}-point match: each score must be below "
                f"{self.length}"
            )
        if self.crawford and (self.mover_away == 1) == (self.opponent_away == 1):
            raise ValueError(
                f"score {mover}-{opponent} in a {self.length}-point match cannot be the Crawford game: "
                "exactly one side must be 1-away"
            )

    @property
    def mover_away(self) -> int:
        return self.length - self.score[0]

    @property
    def opponent_away(self) -> int:
        return self.length - self.score[1]

    @property
    def post_crawford(self) -> bool:
        return not self.crawford and (self.mover_away == 1 or self.opponent_away == 1)

    def flipped(self) -> MatchGame:
        """The same game seen by the other side."""
        return MatchGame(self.length, (self.score[1], self.score[0]), self.crawford, self.met)

    def mwc_after(self, mover_points: int) -> float:
        """The mover's match winning chance once this game ends with the mover winning ``mover_points``
        (negative: losing that many). Follows GNU Backgammon's ``getME``."""
        mover_away = self.mover_away - max(mover_points, 0)
        opponent_away = self.opponent_away - max(-mover_points, 0)
        if mover_away <= 0:
            return 1.0
        if opponent_away <= 0:
            return 0.0
        if self.crawford or self.post_crawford:
            # The next game is post-Crawford, and the leader is still 1-away.
            if mover_away == 1:
                return 1.0 - self.met.post(opponent_away)
            return self.met.post(mover_away)
        return self.met.pre(mover_away, opponent_away)


Game = MoneyGame | MatchGame


def match_winning_chance(game: MatchGame) -> float:
    """The mover's match winning chance before this game starts (from the table)."""
    if game.crawford or not game.post_crawford:
        return game.met.pre(game.mover_away, game.opponent_away)
    if game.mover_away == 1:
        return 1.0 - game.met.post(game.opponent_away)
    return game.met.post(game.mover_away)


def mwc_to_emg(mwc, game: MatchGame, cube_value: int = 1):
    """Match winning chance -> equity on the money scale (EMG) for a cube of ``cube_value``.

    Linear, with the mover winning ``cube_value`` points mapped to +1 and losing them to -1
    (GNU Backgammon's ``mwc2eq``). Works on floats, numpy arrays and tensors.
    """
    win, lose = game.mwc_after(cube_value), game.mwc_after(-cube_value)
    return (2.0 * mwc - (win + lose)) / (win - lose)


def emg_to_mwc(emg, game: MatchGame, cube_value: int = 1):
    """Inverse of ``mwc_to_emg`` (GNU Backgammon's ``eq2mwc``)."""
    win, lose = game.mwc_after(cube_value), game.mwc_after(-cube_value)
    return 0.5 * (emg * (win - lose) + (win + lose))


@dataclass(frozen=True)
class GammonPrices:
    """What each outcome adds on the EMG scale at a match score and cube (GNU's ``arGammonPrice``).

    ``win_gammon``: extra equity of winning a gammon rather than a single game; ``win_backgammon``:
    extra of a backgammon over a gammon; ``lose_*`` the same for losses. Money play: all 1 (0 with the
    Jacoby rule and a centred cube). The classic "gammon value" (MWC gained by the gammon over the MWC
    at stake in a single game, win minus loss) is half of ``win_gammon``.
    """

    win_gammon: float
    win_backgammon: float
    lose_gammon: float
    lose_backgammon: float


def gammon_prices(game: Game, cube: CubeState = CubeState()) -> GammonPrices:
    """Gammon and backgammon prices for the mover at this score and cube (``matchequity.c``
    ``getGammonPrice``; money play: 1 or, with the Jacoby rule and a centred cube, 0)."""
    if isinstance(game, MoneyGame):
        price = 0.0 if game.jacoby and cube.owner == "centred" else 1.0
        return GammonPrices(price, price, price, price)
    value = cube.value
    win, lose = game.mwc_after(value), game.mwc_after(-value)
    half_span = (win - lose) / 2.0
    if half_span <= 1e-7:
        return GammonPrices(0.0, 0.0, 0.0, 0.0)
    win_gammon = (game.mwc_after(2 * value) - win) / half_span
    win_backgammon = (game.mwc_after(3 * value) - game.mwc_after(2 * value)) / half_span
    lose_gammon = (lose - game.mwc_after(-2 * value)) / half_span
    lose_backgammon = (game.mwc_after(-2 * value) - game.mwc_after(-3 * value)) / half_span
    return GammonPrices(
        *(max(price, 0.0) for price in (win_gammon, win_backgammon, lose_gammon, lose_backgammon))
    )


# ---------------------------------------------------------------------------------------------------
# Cube efficiency


class PositionKind(IntEnum):
    """The kinds of position GNU Backgammon gives different cube efficiencies (``ClassifyPosition``)."""

    OVER = 0  # the game is over: the cube is dead
    BEAROFF = 1  # no contact, every checker of both sides in its home board (or borne off)
    RACE = 2  # no contact
    CRASHED = 3  # contact, and a side has at most about six checkers left in play
    CONTACT = 4


@dataclass(frozen=True)
class CubeEfficiency:
    """Janowski's cube efficiency ``x`` per kind of position, after GNU Backgammon (``eval.c``
    ``EvalEfficiency``).

    Race: ``x = race_coefficient + race_factor * (pip count of the side to move)``, clamped to
    ``[race_min, race_max]``. GNU Backgammon uses exact cubeful bear-off databases instead for small
    two-sided bear-offs in money play (and derives ``x`` from them in match play); here every bear-off
    gets ``bearoff``.

    The defaults are the values of current GNU Backgammon, measured on the ``gnubg`` 1.1.0a16 Python
    package (money and match alike): contact and crashed 0.76; race 0.6 + 0.0025 per pip, from 0.6 to
    0.8 (reached at 80 pips); one-sided bear-off 0.6. ``CLASSIC_EFFICIENCY`` holds the older values that
    GNU Backgammon's manual ("The cube efficiency") and its 1.0x sources (``rContactX`` etc.) give:
    contact and crashed 0.68, race 0.55 + 0.00125 per pip from 0.6 (40 pips) to 0.7 (120 pips).
    """

    contact: float = 0.76
    crashed: float = 0.76
    race_coefficient: float = 0.6
    race_factor: float = 0.0025
    race_min: float = 0.6
    race_max: float = 0.8
    bearoff: float = 0.6
    over: float = 0.0

    def __post_init__(self) -> None:
        for name in ("contact", "crashed", "race_min", "race_max", "bearoff", "over"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"cube efficiency {name} must be in [0, 1], not {getattr(self, name)}")
        if self.race_min > self.race_max:
            raise ValueError("cube efficiency race_min must not exceed race_max")

    def of(self, kind, mover_pips=None) -> torch.Tensor:
        """Efficiencies ``float64[B]`` for ``kind: int[B]`` (``PositionKind`` values) and, for races,
        ``mover_pips: int[B]`` (pip count of the side to move)."""
        kind = torch.as_tensor(kind)
        if mover_pips is None:
            mover_pips = torch.zeros_like(kind)
        pips = torch.as_tensor(mover_pips, device=kind.device).to(torch.float64)
        race = (self.race_coefficient + self.race_factor * pips).clamp(self.race_min, self.race_max)
        table = torch.tensor(
            [self.over, self.bearoff, 0.0, self.crashed, self.contact],
            dtype=torch.float64,
            device=kind.device,
        )
        values = table[kind.long()]
        return torch.where(kind == PositionKind.RACE, race, values)


DEFAULT_EFFICIENCY = CubeEfficiency()
CLASSIC_EFFICIENCY = CubeEfficiency(
    contact=0.68, crashed=0.68, race_coefficient=0.55, race_factor=0.00125, race_min=0.6, race_max=0.7
)


# ---------------------------------------------------------------------------------------------------
# Decisions


class CubeAction(IntEnum):
    """The side to move's cube action, as GNU Backgammon names them (``GetCubeRecommendation``).

    With the cube already owned by the mover, "double" reads "redouble" (``action_label``).
    """

    NO_DOUBLE = 0  # "No double, take"
    NO_DOUBLE_BEAVER = 1  # "No double, beaver"
    DOUBLE_TAKE = 2
    DOUBLE_BEAVER = 3
    DOUBLE_PASS = 4
    TOO_GOOD_TAKE = 5  # too good to double: play on for a gammon; the opponent would take
    TOO_GOOD_PASS = 6  # too good to double; the opponent would pass
    OPTIONAL_DOUBLE_TAKE = 7  # double/take and no double are equal
    OPTIONAL_DOUBLE_BEAVER = 8
    OPTIONAL_DOUBLE_PASS = 9  # double/pass and no double (playing for a gammon) are equal
    NO_DOUBLE_DEAD_CUBE = 10  # match play: the mover may not or need not double (Crawford, dead cube)
    NOT_AVAILABLE = 11  # the opponent owns the cube (or money: the cube limit is reached)


class TakeAction(IntEnum):
    """The doubled side's correct response; ``NONE`` where the mover cannot double."""

    NONE = -1
    TAKE = 0
    PASS = 1
    BEAVER = 2


_DOUBLES = frozenset(
    {
        CubeAction.DOUBLE_TAKE,
        CubeAction.DOUBLE_BEAVER,
        CubeAction.DOUBLE_PASS,
        CubeAction.OPTIONAL_DOUBLE_TAKE,
        CubeAction.OPTIONAL_DOUBLE_BEAVER,
        CubeAction.OPTIONAL_DOUBLE_PASS,
    }
)


def is_double(action: int) -> bool:
    """Whether the action turns the cube (optional doubles count as doubles)."""
    return CubeAction(int(action)) in _DOUBLES


_LABELS = {
    CubeAction.NO_DOUBLE: "No {double}, take",
    CubeAction.NO_DOUBLE_BEAVER: "No {double}, beaver",
    CubeAction.DOUBLE_TAKE: "{Double}, take",
    CubeAction.DOUBLE_BEAVER: "{Double}, beaver",
    CubeAction.DOUBLE_PASS: "{Double}, pass",
    CubeAction.TOO_GOOD_TAKE: "Too good to {double}, take",
    CubeAction.TOO_GOOD_PASS: "Too good to {double}, pass",
    CubeAction.OPTIONAL_DOUBLE_TAKE: "Optional {double}, take",
    CubeAction.OPTIONAL_DOUBLE_BEAVER: "Optional {double}, beaver",
    CubeAction.OPTIONAL_DOUBLE_PASS: "Optional {double}, pass",
    CubeAction.NO_DOUBLE_DEAD_CUBE: "Never {double}, take (dead cube)",
    CubeAction.NOT_AVAILABLE: "Cube not available",
}


def action_label(action: int, cube: CubeState = CubeState()) -> str:
    """GNU Backgammon's wording of ``action``; "redouble" when the mover already owns the cube.

    (GNU writes "Double, beaver" even for a redouble; so does this.)
    """
    action = CubeAction(int(action))
    redouble = cube.owner == "mover" and action not in (
        CubeAction.DOUBLE_BEAVER,
        CubeAction.OPTIONAL_DOUBLE_BEAVER,
    )
    words = (
        {"double": "redouble", "Double": "Redouble"} if redouble else {"double": "double", "Double": "Double"}
    )
    return _LABELS[action].format(**words)


@dataclass(frozen=True)
class CubeDecision:
    """Cube decisions of a batch, one entry per position (``B`` positions).

    Equities ``float64[B]`` are the mover's, normalised to the current cube (money: points divided by
    ``cube.value``; match: EMG at the current cube), so ``double_pass`` is +1. ``double_take`` and
    ``double_pass`` are NaN where the mover cannot double. The ``*_mwc`` fields are the same in match
    winning chances (NaN for money games). Costs are >= 0 and in the same units:

    * ``cost_no_double``: what playing on loses against the best action;
    * ``cost_double``: what doubling loses, the opponent answering correctly (NaN if no double is possible);
    * ``cost_take`` / ``cost_pass``: what the doubled side loses by taking / passing wrongly.
    """

    action: torch.Tensor  # int64[B], CubeAction
    take: torch.Tensor  # int64[B], TakeAction
    no_double: torch.Tensor
    double_take: torch.Tensor
    double_pass: torch.Tensor
    optimal: torch.Tensor
    cost_no_double: torch.Tensor
    cost_double: torch.Tensor
    cost_take: torch.Tensor
    cost_pass: torch.Tensor
    no_double_mwc: torch.Tensor
    double_take_mwc: torch.Tensor
    double_pass_mwc: torch.Tensor
    optimal_mwc: torch.Tensor
    cubeless_equity: torch.Tensor  # money: true cubeless money equity; match: cubeless EMG
    cubeless_mwc: torch.Tensor
    efficiency: torch.Tensor

    def numpy(self) -> CubeDecision:
        """The same decision with numpy arrays."""
        return CubeDecision(
            **{name: np.asarray(getattr(self, name).cpu().numpy()) for name in self.__dataclass_fields__}
        )


# ---------------------------------------------------------------------------------------------------
# Public entry points


def cube_decision(probs, cube, game, efficiency=None) -> CubeDecision:
    """Cube decisions for the side to move from outcome probabilities.

    ``probs: float[B, 5]`` (torch or numpy): the mover's cumulative outcome probabilities before its
    roll, at whatever ply the caller evaluated them (0-ply: the network's output).
    ``cube``: a ``CubeState`` for the whole batch, or a sequence of ``B`` of them; ``game``: a
    ``MoneyGame`` or ``MatchGame`` (or ``B`` of them). ``efficiency``: Janowski's ``x``, a float or
    ``float[B]`` (see ``CubeEfficiency.of``); ``None`` means the contact default, 0.76.

    Returns a ``CubeDecision`` of tensors (numpy arrays when ``probs`` is a numpy array).
    """
    return _batched(_decide_group, probs, cube, game, efficiency)


def cubeful_equity(probs, cube, game, efficiency=None):
    """The mover's 0-ply cubeful equity ``float64[B]`` in the given cube position, before any cube
    action this turn: the "no double" equity (GNU's ``Cl2CfMoney`` / ``Cl2CfMatch`` converted to EMG).

    Normalised to ``cube.value`` like ``CubeDecision``. Arguments as for ``cube_decision``.
    """
    return _batched(_cubeful_group, probs, cube, game, efficiency)


def decide_from_equities(
    no_double, double_take, cube: CubeState, game: Game, gammon_possible=True
) -> CubeDecision:
    """The cube decision from cubeful equities computed elsewhere, e.g. by an n-ply search that averages
    cubeful leaf equities over rolls the way GNU Backgammon's n-ply cube analysis does.

    ``no_double`` and ``double_take: float[B]``: the mover's cubeful equities with the cube as it is and
    after double/take, both normalised to the CURRENT cube (money: the double/take equity per doubled
    cube times 2). ``gammon_possible: bool[B]``: whether the mover can still win a gammon (GNU uses it
    to tell "too good" from "double, pass").
    """
    output_numpy = isinstance(no_double, np.ndarray)
    nd = torch.as_tensor(no_double, dtype=torch.float64).reshape(-1)
    dt = torch.as_tensor(double_take, dtype=torch.float64, device=nd.device).reshape(-1)
    gammon = torch.as_tensor(gammon_possible, device=nd.device).to(torch.bool).expand_as(nd)
    nan = torch.full_like(nd, math.nan)
    if isinstance(game, MatchGame):
        mwcs = (emg_to_mwc(nd, game, cube.value), emg_to_mwc(dt, game, cube.value))
        mwcs += (torch.full_like(nd, game.mwc_after(cube.value)),)
    else:
        mwcs = (nan, nan, nan)
    decision = _classify(nd, dt, gammon, cube, game, *mwcs, nan, nan)
    return decision.numpy() if output_numpy else decision


# ---------------------------------------------------------------------------------------------------
# Batching: group rows by (cube, game) so that the formulas see scalar rules


def _batched(function, probs, cube, game, efficiency):
    output_numpy = isinstance(probs, np.ndarray)
    probs = torch.as_tensor(probs)
    if probs.shape[-1] != NUM_OUTCOMES:
        raise ValueError(
            f"probabilities must have {NUM_OUTCOMES} outcomes in the last dimension, not {probs.shape}"
        )
    leading = probs.shape[:-1]
    flat = probs.reshape(-1, NUM_OUTCOMES).to(torch.float64)
    count = flat.shape[0]
    if efficiency is None:
        efficiency = DEFAULT_EFFICIENCY.contact
    x = torch.as_tensor(efficiency, dtype=torch.float64, device=flat.device).expand(leading).reshape(-1)
    if bool(((x < 0) | (x > 1)).any()):
        raise ValueError("cube efficiency must be in [0, 1]")

    cubes = _per_row(cube, CubeState, count, "cube")
    games = _per_row(game, (MoneyGame, MatchGame), count, "game")
    if not isinstance(cubes, list) and not isinstance(games, list):
        result = function(flat, cubes, games, x)
    else:
        rows: dict[tuple, list[int]] = {}
        for row in range(count):
            key = (
                cubes[row] if isinstance(cubes, list) else cubes,
                games[row] if isinstance(games, list) else games,
            )
            rows.setdefault(key, []).append(row)
        parts = []
        for (group_cube, group_game), indices in rows.items():
            index = torch.tensor(indices, dtype=torch.long, device=flat.device)
            parts.append((index, function(flat[index], group_cube, group_game, x[index])))
        result = _scatter(parts, count, flat.device)

    if isinstance(result, CubeDecision):
        reshaped = CubeDecision(
            **{name: getattr(result, name).reshape(leading) for name in result.__dataclass_fields__}
        )
        return reshaped.numpy() if output_numpy else reshaped
    result = result.reshape(leading)
    return result.cpu().numpy() if output_numpy else result


def _per_row(value, kind, count: int, what: str):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    expected = " or ".join(k.__name__ for k in kinds)
    if isinstance(value, kind):
        return value
    if isinstance(value, Sequence) and not isinstance(value, str):
        values = list(value)
        if len(values) != count:
            raise ValueError(f"{what}: {len(values)} given for {count} positions")
        for item in values:
            if not isinstance(item, kind):
                raise TypeError(f"{what}: expected {expected}, got {type(item).__name__}")
        return values
    raise TypeError(f"{what}: expected a {expected} or a sequence of them, got {type(value).__name__}")


def _scatter(parts, count: int, device):
    first = parts[0][1]
    if isinstance(first, CubeDecision):
        fields = {}
        for name in first.__dataclass_fields__:
            template = getattr(first, name)
            out = torch.empty(count, dtype=template.dtype, device=device)
            for index, part in parts:
                out[index] = getattr(part, name)
            fields[name] = out
        return CubeDecision(**fields)
    out = torch.empty(count, dtype=first.dtype, device=device)
    for index, part in parts:
        out[index] = part
    return out


# ---------------------------------------------------------------------------------------------------
# One group: scalar cube and rules, tensors over positions


def _cubeful_group(probs: torch.Tensor, cube: CubeState, game: Game, x: torch.Tensor) -> torch.Tensor:
    if isinstance(game, MoneyGame):
        return _money_cubeful(probs, cube, game, x)
    return mwc_to_emg(_match_cubeful(probs, cube, game, x), game, cube.value)


def _decide_group(probs: torch.Tensor, cube: CubeState, game: Game, x: torch.Tensor) -> CubeDecision:
    gammon_possible = probs[:, WIN_GAMMON] > 0.0
    can_win = probs[:, WIN] > 0.0
    nan = torch.full_like(x, math.nan)
    if isinstance(game, MoneyGame):
        no_double = _money_cubeful(probs, cube, game, x)
        # The double/take position is worth twice its own normalised equity in current-cube units.
        double_take = 2.0 * _money_cubeful(probs, cube.doubled(), game, x) if _can_double(cube, game) else nan
        cubeless = _money_dead(probs, gammon_price=1.0)
        return _classify(
            no_double, double_take, gammon_possible, cube, game, nan, nan, nan, cubeless, x, nan, can_win
        )
    no_double_mwc = _match_cubeful(probs, cube, game, x)
    if _can_double(cube, game):
        double_take_mwc = _match_cubeful(probs, cube.doubled(), game, x)
        double_pass_mwc = torch.full_like(x, game.mwc_after(cube.value))
    else:
        double_take_mwc, double_pass_mwc = nan, nan
    cubeless_mwc = _match_dead(probs, cube.value, game)
    return _classify(
        mwc_to_emg(no_double_mwc, game, cube.value),
        mwc_to_emg(double_take_mwc, game, cube.value),
        gammon_possible,
        cube,
        game,
        no_double_mwc,
        double_take_mwc,
        double_pass_mwc,
        mwc_to_emg(cubeless_mwc, game, cube.value),
        x,
        cubeless_mwc,
        can_win,
    )


def _can_double(cube: CubeState, game: Game) -> bool:
    """eval.c ``GetDPEq``: whether the side to move may double now."""
    if cube.owner == "opponent":
        return False
    if isinstance(game, MoneyGame):
        return game.can_double(cube)
    # Not in the Crawford game; not when winning the current stake already wins the match; not for the
    # post-Crawford leader (doubling can only hurt).
    return (
        not game.crawford
        and game.mover_away > cube.value
        and not (game.post_crawford and game.mover_away == 1)
    )


def _classify(
    no_double: torch.Tensor,
    double_take: torch.Tensor,
    gammon_possible: torch.Tensor,
    cube: CubeState,
    game: Game,
    no_double_mwc: torch.Tensor,
    double_take_mwc: torch.Tensor,
    double_pass_mwc: torch.Tensor,
    cubeless: torch.Tensor,
    x: torch.Tensor,
    cubeless_mwc: torch.Tensor | None = None,
    can_win: torch.Tensor | None = None,
) -> CubeDecision:
    """eval.c ``FindBestCubeDecision`` on tensors, plus the responses and costs."""
    nan = torch.full_like(no_double, math.nan)
    if cubeless_mwc is None:
        cubeless_mwc = nan
    money = isinstance(game, MoneyGame)
    if not _can_double(cube, game):
        dead = not money and cube.owner in ("centred", "mover")
        action = torch.full_like(
            no_double,
            int(CubeAction.NO_DOUBLE_DEAD_CUBE if dead else CubeAction.NOT_AVAILABLE),
            dtype=torch.long,
        )
        return CubeDecision(
            action=action,
            take=torch.full_like(action, int(TakeAction.NONE)),
            no_double=no_double,
            double_take=nan,
            double_pass=nan,
            optimal=no_double,
            cost_no_double=torch.zeros_like(no_double),
            cost_double=nan,
            cost_take=nan,
            cost_pass=nan,
            no_double_mwc=no_double_mwc,
            double_take_mwc=nan,
            double_pass_mwc=nan,
            optimal_mwc=no_double_mwc,
            cubeless_equity=cubeless,
            cubeless_mwc=cubeless_mwc,
            efficiency=x,
        )

    nd, dt = no_double, double_take
    dp = torch.ones_like(nd)
    if can_win is None:
        can_win = torch.ones_like(nd, dtype=torch.bool)
    beavers = money and game.beavers
    beaver_range = (dt >= -2.0) & (dt <= 0.0) & beavers
    # GNU: an optional double/pass needs a possible gammon and, in money play, no Jacoby-centred cube.
    jacoby_centred = money and game.jacoby and cube.owner == "centred"
    optional_pass_allowed = gammon_possible & (not jacoby_centred)

    A = CubeAction
    action = torch.full_like(nd, int(A.NO_DOUBLE), dtype=torch.long)

    def assign(mask, value):
        nonlocal action
        action = torch.where(mask, torch.as_tensor(value, dtype=torch.long, device=nd.device), action)

    # A mover that cannot win gains nothing by doubling: an exact tie is "no double", not "optional"
    # (GNU's float32 rounding happens to break these ties the same way).
    tie_without_chances = ~can_win & ((dt - nd).abs() <= OPTIONAL_EPSILON)
    doubling = (dt >= nd) & (dp >= nd) & ~tie_without_chances
    # 6. DP > DT >= ND: double, take (or beaver).
    take_branch = doubling & (dp > dt)
    optional = (dt - nd).abs() <= OPTIONAL_EPSILON
    assign(take_branch & optional, int(A.OPTIONAL_DOUBLE_TAKE))
    assign(take_branch & ~optional, int(A.DOUBLE_TAKE))
    assign(take_branch & beaver_range & optional, int(A.OPTIONAL_DOUBLE_BEAVER))
    assign(take_branch & beaver_range & ~optional, int(A.DOUBLE_BEAVER))
    assign(take_branch & beaver_range & (2.0 * dt < nd), int(A.NO_DOUBLE_BEAVER))
    # 4. DT >= DP >= ND: double, pass.
    pass_branch = doubling & (dp <= dt)
    optional_pass = ((nd - dp).abs() <= OPTIONAL_EPSILON) & optional_pass_allowed
    assign(pass_branch & optional_pass, int(A.OPTIONAL_DOUBLE_PASS))
    assign(pass_branch & ~optional_pass, int(A.DOUBLE_PASS))
    # No double: ND > DT or ND > DP.
    holding = ~doubling
    too_good_pass = holding & (((nd > dt) & (dt > dp)) | ((dt >= nd) & (nd > dp)))  # cases 1 and 3
    assign(too_good_pass & gammon_possible, int(A.TOO_GOOD_PASS))
    assign(too_good_pass & ~gammon_possible, int(A.DOUBLE_PASS))
    too_good_take = holding & (nd > dt) & (dt <= dp) & (nd > dp)  # case 2
    assign(too_good_take & gammon_possible, int(A.TOO_GOOD_TAKE))
    assign(too_good_take & ~gammon_possible, int(A.NO_DOUBLE))
    plain = holding & (nd > dt) & (dt <= dp) & (nd <= dp)  # case 5
    assign(plain, int(A.NO_DOUBLE))
    assign(plain & beaver_range, int(A.NO_DOUBLE_BEAVER))

    optimal = torch.where(doubling, torch.minimum(dt, dp), nd)
    optimal = torch.where(action == int(A.NO_DOUBLE_BEAVER), nd, optimal)

    def code(value: TakeAction) -> torch.Tensor:
        return torch.full_like(action, int(value))

    take = torch.where(dt < dp, code(TakeAction.TAKE), code(TakeAction.PASS))
    take = torch.where((dt < dp) & beaver_range, code(TakeAction.BEAVER), take)

    if money:
        optimal_mwc = nan
        dp_mwc = nan
    else:
        dp_mwc = double_pass_mwc
        optimal_mwc = emg_to_mwc(optimal, game, cube.value)
    return CubeDecision(
        action=action,
        take=take,
        no_double=nd,
        double_take=dt,
        double_pass=dp,
        optimal=optimal,
        cost_no_double=(optimal - nd).clamp(min=0.0),
        cost_double=(optimal - torch.minimum(dt, dp)).clamp(min=0.0),
        cost_take=(dt - dp).clamp(min=0.0),
        cost_pass=(dp - dt).clamp(min=0.0),
        no_double_mwc=no_double_mwc,
        double_take_mwc=double_take_mwc,
        double_pass_mwc=dp_mwc,
        optimal_mwc=optimal_mwc,
        cubeless_equity=cubeless,
        cubeless_mwc=cubeless_mwc,
        efficiency=x,
    )


# ---------------------------------------------------------------------------------------------------
# Money play


def _money_dead(probs: torch.Tensor, gammon_price: float) -> torch.Tensor:
    """Cubeless money equity with gammons and backgammons each worth ``gammon_price`` extra."""
    return (
        2.0 * probs[:, WIN]
        - 1.0
        + gammon_price * (probs[:, WIN_GAMMON] - probs[:, LOSE_GAMMON])
        + gammon_price * (probs[:, WIN_BACKGAMMON] - probs[:, LOSE_BACKGAMMON])
    )


def _money_cube_alive(cube: CubeState, game: MoneyGame) -> bool:
    # Whoever holds access to the cube may double unless the limit stops the cube at its value.
    return game.can_double(cube)


def _money_cubeful(probs: torch.Tensor, cube: CubeState, game: MoneyGame, x: torch.Tensor) -> torch.Tensor:
    """eval.c ``Cl2CfMoney``: ``(1 - x) E_dead + x E_live``, normalised to the cube value."""
    win = probs[:, WIN]
    jacoby_centred = game.jacoby and cube.owner == "centred"
    dead = _money_dead(probs, gammon_price=0.0 if jacoby_centred else 1.0)
    if not _money_cube_alive(cube, game):
        return dead
    safe_win = torch.where(win > DEGENERATE_WIN, win, torch.ones_like(win))
    safe_loss = torch.where(win < 1.0 - DEGENERATE_WIN, 1.0 - win, torch.ones_like(win))
    # Average value of a win and of a loss (cumulative probabilities: a backgammon is in both terms).
    average_win = 1.0 + (probs[:, WIN_GAMMON] + probs[:, WIN_BACKGAMMON]) / safe_win
    average_loss = 1.0 + (probs[:, LOSE_GAMMON] + probs[:, LOSE_BACKGAMMON]) / safe_loss
    mover_cash, opponent_cash = _money_cash_points(average_win, average_loss, cube.value, game.cube_limit)
    live = _money_live(win, average_win, average_loss, mover_cash, opponent_cash, cube.owner, game.jacoby)
    cubeful = dead * (1.0 - x) + live * x
    degenerate = (win <= DEGENERATE_WIN) | (win >= 1.0 - DEGENERATE_WIN)
    return torch.where(degenerate, dead, cubeful)


def _money_cash_points(
    average_win: torch.Tensor, average_loss: torch.Tensor, value: int, limit: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Live-cube cash points of the mover (in its winning chance) and of the opponent (in its own).

    Without a limit, Janowski's closed form: ``(L + 1) / (W + L + 1/2)`` and ``(W + 1) / (W + L + 1/2)``.
    With one, GNU's match recursion (``GetPoints``) in money units: the top cube level whose redouble
    the limit forbids has the dead-cube cash point ``(L + 1/2) / (W + L)``, and each level below it
    ``CP(v) = 1 - CP_other(2v) (W - 1/2) / (W + 1)``; the closed form is its fixed point.
    """
    if limit is None:
        denominator = average_win + average_loss + 0.5
        return (average_loss + 1.0) / denominator, (average_win + 1.0) / denominator
    levels = int(math.log2(limit // value))  # doubles still allowed from this cube: v -> ... -> limit
    mover = (average_loss + 0.5) / (average_win + average_loss)
    opponent = (average_win + 0.5) / (average_win + average_loss)
    for _ in range(levels - 1):
        mover, opponent = (
            1.0 - opponent * (average_win - 0.5) / (average_win + 1.0),
            1.0 - mover * (average_loss - 0.5) / (average_loss + 1.0),
        )
    return mover, opponent


def _money_live(
    win: torch.Tensor,
    average_win: torch.Tensor,
    average_loss: torch.Tensor,
    mover_cash: torch.Tensor,
    opponent_cash: torch.Tensor,
    owner: str,
    jacoby: bool,
) -> torch.Tensor:
    """eval.c ``MoneyLive``: the fully live cube's equity, piecewise linear in the winning chance."""
    take_point = 1.0 - opponent_cash  # below it the opponent cashes (the mover passes)
    cash_point = mover_cash
    W, L = average_win, average_loss
    if owner == "centred":
        lose_side = torch.full_like(win, -1.0) if jacoby else -L + (L - 1.0) * win / take_point
        window = -1.0 + 2.0 * (win - take_point) / (cash_point - take_point)
        win_side = (
            torch.ones_like(win) if jacoby else 1.0 + (W - 1.0) * (win - cash_point) / (1.0 - cash_point)
        )
        return torch.where(win < take_point, lose_side, torch.where(win < cash_point, window, win_side))
    if owner == "mover":
        below = -L + (1.0 + L) * win / cash_point
        above = 1.0 + (W - 1.0) * (win - cash_point) / (1.0 - cash_point)
        return torch.where(win < cash_point, below, above)
    below = -L + (L - 1.0) * win / take_point
    above = -1.0 + (W + 1.0) * (win - take_point) / (1.0 - take_point)
    return torch.where(win < take_point, below, above)


# ---------------------------------------------------------------------------------------------------
# Match play


def _gammon_ratios(probs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Shares of gammons-only and backgammons among the mover's wins and among its losses."""
    win = probs[:, WIN]
    safe_win = torch.where(win > 0.0, win, torch.ones_like(win))
    safe_loss = torch.where(win < 1.0, 1.0 - win, torch.ones_like(win))
    zero = torch.zeros_like(win)
    win_gammon = torch.where(win > 0.0, (probs[:, WIN_GAMMON] - probs[:, WIN_BACKGAMMON]) / safe_win, zero)
    win_backgammon = torch.where(win > 0.0, probs[:, WIN_BACKGAMMON] / safe_win, zero)
    lose_gammon = torch.where(
        win < 1.0, (probs[:, LOSE_GAMMON] - probs[:, LOSE_BACKGAMMON]) / safe_loss, zero
    )
    lose_backgammon = torch.where(win < 1.0, probs[:, LOSE_BACKGAMMON] / safe_loss, zero)
    return win_gammon, win_backgammon, lose_gammon, lose_backgammon


def _match_dead(probs: torch.Tensor, value: int, game: MatchGame) -> torch.Tensor:
    """Cubeless MWC: every outcome at the current stake, weighted by its probability."""
    m = game.mwc_after
    win, win_gammon, win_backgammon = probs[:, WIN], probs[:, WIN_GAMMON], probs[:, WIN_BACKGAMMON]
    lose_gammon, lose_backgammon = probs[:, LOSE_GAMMON], probs[:, LOSE_BACKGAMMON]
    return (
        (win - win_gammon) * m(value)
        + (win_gammon - win_backgammon) * m(2 * value)
        + win_backgammon * m(3 * value)
        + (1.0 - win - lose_gammon) * m(-value)
        + (lose_gammon - lose_backgammon) * m(-2 * value)
        + lose_backgammon * m(-3 * value)
    )


def _match_cube_alive(cube: CubeState, game: MatchGame) -> bool:
    """eval.c ``fDoCubeful``: whether the cube has any life left at this score."""
    if game.mover_away <= cube.value and game.opponent_away <= cube.value:
        return False  # either side cashing the current stake wins the match
    if game.mover_away == 2 and game.opponent_away == 2:
        return False  # GNU treats 2-away/2-away as dead at 0 ply (the double is automatic)
    return not game.crawford


def _match_cash_points(
    ratios: tuple[torch.Tensor, ...], value: int, game: MatchGame
) -> tuple[torch.Tensor, torch.Tensor]:
    """matchequity.c ``GetPoints``: live-cube cash points of the mover and of the opponent (each in its
    own winning chance) for a cube of ``value``, by recursion from the highest cube level that can
    still matter down to ``value``."""
    # Player 0 is the mover, player 1 the opponent; gammon shares of each player's wins.
    gammon = (ratios[0], ratios[2])
    backgammon = (ratios[1], ratios[3])
    single = (1.0 - gammon[0] - backgammon[0], 1.0 - gammon[1] - backgammon[1])
    mover_left = game.mover_away - 1  # GNU's normalised scores i, j
    opponent_left = game.opponent_away - 1

    def mwc(player: int, points: int) -> float:
        """Player's MWC when it wins ``points`` (negative: loses)."""
        return game.mwc_after(points) if player == 0 else 1.0 - game.mwc_after(-points)

    top = value
    while mover_left >= 2 * top and opponent_left >= 2 * top:
        top *= 2
    live: dict[tuple[int, int], torch.Tensor] = {}
    level = top
    while level >= value:
        for player in (0, 1):
            other = 1 - player
            if mover_left < 2 * level or opponent_left < 2 * level:
                # The doubled cube will be dead, but a free automatic redouble by the side that cannot
                # lose more is still counted (GNU's "cube prime" value).
                mine, theirs = (mover_left, opponent_left) if player == 0 else (opponent_left, mover_left)
                prime = 2 * level if (mine < 2 * level and theirs >= 2 * level) else level
                double_take_lose = (
                    single[other] * mwc(player, -2 * prime)
                    + gammon[other] * mwc(player, -4 * prime)
                    + backgammon[other] * mwc(player, -6 * prime)
                )
                double_pass = mwc(player, level)
                double_take_win = (
                    single[player] * mwc(player, 2 * prime)
                    + gammon[player] * mwc(player, 4 * prime)
                    + backgammon[player] * mwc(player, 6 * prime)
                )
                live[player, level] = (double_take_lose - double_pass) / _nonzero(
                    double_take_lose - double_take_win
                )
            else:
                redouble_pass = mwc(player, -2 * level)
                double_pass = mwc(player, level)
                double_take_win = (
                    single[player] * mwc(player, 2 * level)
                    + gammon[player] * mwc(player, 4 * level)
                    + backgammon[player] * mwc(player, 6 * level)
                )
                live[player, level] = 1.0 - live[other, 2 * level] * (
                    double_pass - double_take_win
                ) / _nonzero(redouble_pass - double_take_win)
        level //= 2
    return live[0, value], live[1, value]


def _nonzero(denominator: torch.Tensor) -> torch.Tensor:
    return torch.where(denominator == 0.0, torch.full_like(denominator, 1e-300), denominator)


def _match_cubeful(probs: torch.Tensor, cube: CubeState, game: MatchGame, x: torch.Tensor) -> torch.Tensor:
    """eval.c ``Cl2CfMatch``: the mover's cubeful MWC, ``(1 - x) MWC_dead + x MWC_live``."""
    dead = _match_dead(probs, cube.value, game)
    if not _match_cube_alive(cube, game):
        return dead
    ratios = _gammon_ratios(probs)
    win_gammon, win_backgammon, lose_gammon, lose_backgammon = ratios
    m, value = game.mwc_after, cube.value
    win = probs[:, WIN]
    mover_cash_point, opponent_cash_point = _match_cash_points(ratios, value, game)
    cash, opponent_cash = m(value), m(-value)
    # MWC at p = 1 and p = 0 once the cube is no longer turned: a win (or loss) of each kind.
    all_wins = (
        (1.0 - win_gammon - win_backgammon) * cash + win_gammon * m(2 * value) + win_backgammon * m(3 * value)
    )
    all_losses = (
        (1.0 - lose_gammon - lose_backgammon) * opponent_cash
        + lose_gammon * m(-2 * value)
        + lose_backgammon * m(-3 * value)
    )
    too_good = mover_cash_point  # the mover's winning chance from which it cashes
    opponent_too_good = 1.0 - opponent_cash_point  # below this the opponent cashes

    def towards(start, end, fraction):
        return start + (end - start) * fraction

    def safe(denominator):
        return torch.where(denominator != 0.0, denominator, torch.ones_like(denominator))

    # Between p = 0 and the opponent's cash point; between the mover's cash point and p = 1.
    below_opponent = torch.where(
        opponent_too_good > 0.0, towards(all_losses, opponent_cash, win / safe(opponent_too_good)), all_losses
    )
    above_mover = torch.where(
        too_good < 1.0, towards(cash, all_wins, (win - too_good) / safe(1.0 - too_good)), all_wins
    )
    if cube.owner == "centred":
        window = towards(opponent_cash, cash, (win - opponent_too_good) / safe(too_good - opponent_too_good))
        live = torch.where(
            win <= opponent_too_good, below_opponent, torch.where(win < too_good, window, above_mover)
        )
    elif cube.owner == "mover":
        below_mover = torch.where(too_good > 0.0, towards(all_losses, cash, win / safe(too_good)), all_losses)
        live = torch.where(win <= too_good, below_mover, above_mover)
    else:
        above_opponent = torch.where(
            win != opponent_too_good,
            towards(opponent_cash, all_wins, (win - opponent_too_good) / safe(1.0 - opponent_too_good)),
            all_wins,
        )
        live = torch.where(win <= opponent_too_good, below_opponent, above_opponent)
    return dead * (1.0 - x) + live * x
