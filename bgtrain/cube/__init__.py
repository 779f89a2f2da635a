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

Modules: ``state`` (cube states, money sessions and matches, gammon prices, MWC/EMG conversions),
``efficiency`` (GNU's kinds of position and the cube efficiency of each), ``decision`` (the cube
decision and cubeful equity for whole batches), ``money`` and ``match`` (the formulas of each kind of
play), ``met`` (match equity tables). Everything public is importable from ``bgtrain.cube``.
"""

from __future__ import annotations

from bgtrain.cube.decision import (
    OPTIONAL_EPSILON,
    CubeAction,
    CubeDecision,
    TakeAction,
    action_label,
    cube_decision,
    cubeful_equity,
    decide_from_equities,
    is_double,
)
from bgtrain.cube.efficiency import (
    CLASSIC_EFFICIENCY,
    DEFAULT_EFFICIENCY,
    CubeEfficiency,
    PositionKind,
    cube_efficiency,
    position_kinds,
)
from bgtrain.cube.met import (
    COMPLEMENT_TOLERANCE,
    DEFAULT_MET,
    MAX_MATCH_LENGTH,
    MatchEquityTable,
    default_met,
    load_met,
    parse_met,
)
from bgtrain.cube.state import (
    OWNERS,
    CubeState,
    Game,
    GammonPrices,
    MatchGame,
    MoneyGame,
    emg_to_mwc,
    gammon_prices,
    holder_seat,
    initial_cube,
    match_id_owner,
    match_winning_chance,
    mwc_to_emg,
    owner_from_match_id,
    owner_seen_by,
)

__all__ = [
    "CLASSIC_EFFICIENCY",
    "COMPLEMENT_TOLERANCE",
    "DEFAULT_EFFICIENCY",
    "DEFAULT_MET",
    "MAX_MATCH_LENGTH",
    "OPTIONAL_EPSILON",
    "OWNERS",
    "CubeAction",
    "CubeDecision",
    "CubeEfficiency",
    "CubeState",
    "Game",
    "GammonPrices",
    "MatchEquityTable",
    "MatchGame",
    "MoneyGame",
    "PositionKind",
    "TakeAction",
    "action_label",
    "cube_decision",
    "cube_efficiency",
    "cubeful_equity",
    "decide_from_equities",
    "default_met",
    "emg_to_mwc",
    "gammon_prices",
    "holder_seat",
    "initial_cube",
    "is_double",
    "load_met",
    "match_id_owner",
    "match_winning_chance",
    "mwc_to_emg",
    "owner_from_match_id",
    "owner_seen_by",
    "parse_met",
    "position_kinds",
]
