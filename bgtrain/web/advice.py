"""What the bot's evaluator says about the game being played: the bot's own choices, the hints and the
tutor's warnings for the person (the analysis of a finished game is ``bgtrain.web.analysis``).

Everything here reads positions from the side that is to act (the mover), as ``bgtrain.values.evaluator``
and ``bgtrain.cube`` do. Play equities are cubeless (the evaluator's ``hint``), in points per game
for a 1-cube; cube equities are GNU Backgammon's, normalised to the current cube
(``bgtrain.cube.CubeDecision``). GNU Backgammon's marks grade an error by the equity it loses:
doubtful from 0.04, bad from 0.08, very bad from 0.16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# GNU Backgammon's marks for errors, shared with ``bgtrain analyse`` (re-exported here for the web game).
from bgtrain.analysis.marks import BAD, DOUBTFUL, VERY_BAD, error_mark  # noqa: F401
from bgtrain.cube import CubeState, MatchGame, MoneyGame, TakeAction, action_label, is_double
from bgtrain.outcomes import cubeless_equity, flip_outcomes
from bgtrain.values.cube_action import cube_action
from bgtrain.values.evaluator import Evaluator
from engine.movegen import legal_afterstates


@dataclass(frozen=True)
class CubeView:
    """The cube and score from the side to move: what ``bgtrain.cube`` needs."""

    cube: CubeState
    game: MoneyGame | MatchGame
    available: bool  # the mover may double now


def _board(board) -> torch.Tensor:
    return torch.tensor([list(board)], dtype=torch.int8)


def bot_play(evaluator: Evaluator, board, dice, ply: int) -> tuple[tuple[int, ...], bool]:
    """The bot's play of ``dice`` from ``board`` (mover's side): (afterstate, earns an extra roll)."""
    afterstates = legal_afterstates(_board(board), torch.tensor([list(dice)]), evaluator.rules)
    choice = evaluator.choose(afterstates, ply)
    row = int(afterstates.offsets[0] + choice[0])
    return tuple(afterstates.boards[row].tolist()), bool(afterstates.extra_roll[row])


def cube_advice(evaluator: Evaluator, board, view: CubeView, ply: int) -> dict:
    """The cube decision of the side to move before its roll: the three equities, the proper action,
    the doubled side's proper answer and the cost of each wrong choice (all plain floats)."""
    probabilities = evaluator.probabilities(_board(board), ply)
    decision, _ = cube_action(probabilities, _board(board), view.cube, view.game, evaluator.two_sided, evaluator.rules)

    def number(tensor) -> float | None:
        value = float(tensor[0])
        return None if math.isnan(value) else value

    return {
        "probabilities": [float(p) for p in probabilities[0]],
        "no_double": number(decision.no_double),
        "double_take": number(decision.double_take),
        "double_pass": number(decision.double_pass),
        "action": action_label(int(decision.action[0]), view.cube),
        "double": bool(is_double(int(decision.action[0]))),
        "take": int(decision.take[0]) in (int(TakeAction.TAKE), int(TakeAction.BEAVER)),
        "cost_no_double": number(decision.cost_no_double) or 0.0,
        "cost_double": number(decision.cost_double) or 0.0,
        "cost_take": number(decision.cost_take) or 0.0,
        "cost_pass": number(decision.cost_pass) or 0.0,
        "ply": ply,
    }


def play_hints(evaluator: Evaluator, board, dice, ply: int, limit: int | None = None) -> list[dict]:
    """The legal plays of ``dice`` ranked best first, with GNU Backgammon's columns: the mover's
    win, gammon and backgammon chances, the opponent's, the cubeless equity and the difference."""
    hints = evaluator.hint(_board(board), torch.tensor([list(dice)]), ply, limit)[0]
    rows = []
    for rank, move in enumerate(hints, 1):
        p = move.probabilities
        rows.append({
            "rank": rank, "play": move.play, "board": list(move.board), "extra_roll": move.extra_roll,
            "ply": move.ply, "equity": move.equity, "difference": move.difference,
            "win": p[0], "win_gammon": p[1], "win_backgammon": p[2],
            "lose": 1.0 - p[0], "lose_gammon": p[3], "lose_backgammon": p[4],
        })
    return rows


def play_loss(hints: list[dict], after, extra_roll: bool = False) -> float:
    """Equity the play ``after`` loses against the best of ``hints`` (0 for the best)."""
    after = list(after)
    for row in hints:
        if row["board"] == after and row["extra_roll"] == extra_roll:
            return max(0.0, -row["difference"])
    raise ValueError("the play is not among the legal plays")


def resignation_accepted(evaluator: Evaluator, board_of_resigner, points: int, gammons_count: bool) -> bool:
    """Whether the bot accepts a resignation of ``points`` (per cube) from the side whose position
    ``board_of_resigner`` is (that side to move, before the roll): when playing on is worth no more to
    the bot than the points offered (cubeless; gammons only where they count)."""
    probabilities = flip_outcomes(evaluator.probabilities(_board(board_of_resigner), 0))
    if not gammons_count:
        probabilities = probabilities.clone()
        probabilities[:, 1:] = 0.0
    expected = float(cubeless_equity(probabilities, evaluator.rules)[0])
    return points >= expected - 1e-9
