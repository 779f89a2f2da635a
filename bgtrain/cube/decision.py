"""Cube decisions: no double, double/take, double/pass, too good, from outcome probabilities (GNU
Backgammon's ``FindBestCubeDecision``), for whole batches grouped by cube state and game."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import torch

from bgtrain.cube.efficiency import DEFAULT_EFFICIENCY
from bgtrain.cube.match import _match_cubeful, _match_dead
from bgtrain.cube.money import _money_cubeful, _money_dead
from bgtrain.cube.state import CubeState, Game, MatchGame, MoneyGame, emg_to_mwc, mwc_to_emg
from bgtrain.outcomes import NUM_OUTCOMES, WIN, WIN_GAMMON

# eval.c isOptional: two equities closer than this make the double "optional".
OPTIONAL_EPSILON = 1e-5

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
    no_double_mwc, double_take_mwc, double_pass_mwc = mwcs
    decision = _classify(
        no_double=nd, double_take=dt, gammon_possible=gammon, cube=cube, game=game, no_double_mwc=no_double_mwc,
        double_take_mwc=double_take_mwc, double_pass_mwc=double_pass_mwc, cubeless=nan, efficiency=nan,
    )
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
            no_double=no_double, double_take=double_take, gammon_possible=gammon_possible, cube=cube, game=game,
            no_double_mwc=nan, double_take_mwc=nan, double_pass_mwc=nan, cubeless=cubeless, efficiency=x,
            cubeless_mwc=nan, can_win=can_win,
        )
    no_double_mwc = _match_cubeful(probs, cube, game, x)
    if _can_double(cube, game):
        double_take_mwc = _match_cubeful(probs, cube.doubled(), game, x)
        double_pass_mwc = torch.full_like(x, game.mwc_after(cube.value))
    else:
        double_take_mwc, double_pass_mwc = nan, nan
    cubeless_mwc = _match_dead(probs, cube.value, game)
    return _classify(
        no_double=mwc_to_emg(no_double_mwc, game, cube.value),
        double_take=mwc_to_emg(double_take_mwc, game, cube.value),
        gammon_possible=gammon_possible,
        cube=cube,
        game=game,
        no_double_mwc=no_double_mwc,
        double_take_mwc=double_take_mwc,
        double_pass_mwc=double_pass_mwc,
        cubeless=mwc_to_emg(cubeless_mwc, game, cube.value),
        efficiency=x,
        cubeless_mwc=cubeless_mwc,
        can_win=can_win,
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
    *,
    no_double: torch.Tensor,
    double_take: torch.Tensor,
    gammon_possible: torch.Tensor,
    cube: CubeState,
    game: Game,
    no_double_mwc: torch.Tensor,
    double_take_mwc: torch.Tensor,
    double_pass_mwc: torch.Tensor,
    cubeless: torch.Tensor,
    efficiency: torch.Tensor,
    cubeless_mwc: torch.Tensor | None = None,
    can_win: torch.Tensor | None = None,
) -> CubeDecision:
    """eval.c ``FindBestCubeDecision`` on tensors, plus the responses and costs. Every argument is
    named: the equities (``float64[B]``, normalised to the current cube), their match winning chances
    (NaN for money), the cubeless equity and MWC, Janowski's ``efficiency``, and which rows can still
    win (a gammon)."""
    x = efficiency
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
