"""What the bot's evaluator says about the game being played: the bot's own choices, the hints and the
tutor's warnings for the person, and the analysis of a finished game.

Everything here reads positions from the side that is to act (the mover), as ``bgtrain.evaluator``
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
from bgtrain.cube import CubeState, MatchGame, MoneyGame, TakeAction, action_label, cube_decision, is_double
from bgtrain.cube.efficiency import cube_efficiency
from bgtrain.evaluator import Evaluator
from bgtrain.outcomes import cubeless_equity, flip_outcomes
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
    decision = cube_decision(probabilities.double(), view.cube, view.game, cube_efficiency(_board(board)))

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


def analyse_moves(evaluator: Evaluator, moves: list[dict], ply: int) -> list[float]:
    """The equity each recorded play lost against the best play at ``ply``: one batched hint call
    for all of them. ``moves``: ``{"before", "after", "dice", "extra_roll"}`` (mover's side)."""
    if not moves:
        return []
    boards = torch.tensor([move["before"] for move in moves], dtype=torch.int8)
    dice = torch.tensor([move["dice"] for move in moves])
    losses = []
    for move, hints in zip(moves, evaluator.hint(boards, dice, ply, notation=False)):
        rows = [{"board": list(h.board), "extra_roll": h.extra_roll, "difference": h.difference} for h in hints]
        losses.append(play_loss(rows, move["after"], bool(move.get("extra_roll", False))))
    return losses


def analyse_game(evaluator: Evaluator, decisions: list[dict], ply: int, names: tuple[str, str]) -> dict:
    """The analysis of a finished game: the loss of every unforced play at ``ply`` (filled into
    ``decisions`` in place), the cube decisions' losses as recorded, then ``summarise``."""
    moves = [d for d in decisions if d["kind"] == "move" and not d["forced"]]
    for decision, loss in zip(moves, analyse_moves(evaluator, [d["move"] for d in moves], ply)):
        decision["loss"] = loss
    rows = [{k: v for k, v in d.items() if k not in ("move", "cube")} for d in decisions if d["loss"] is not None]
    return {"ply": ply, **summarise(rows, names)}


def summarise(decisions: list[dict], names: tuple[str, str]) -> dict:
    """Error rates and the mistakes worth a look, per side. ``decisions``: ``{"seat", "kind", "loss",
    "forced", "text", "position_id", "match_id"}``; the error rate is the mean loss over the decisions
    that were not forced, in thousandths (GNU Backgammon's millipoints per move)."""
    sides = []
    for seat, name in enumerate(names):
        mine = [d for d in decisions if d["seat"] == seat and not d.get("forced")]
        total = sum(d["loss"] for d in mine)
        mistakes = sorted((d for d in mine if d["loss"] >= DOUBTFUL), key=lambda d: -d["loss"])
        sides.append({
            "name": name,
            "decisions": len(mine),
            "total_loss": total,
            "error_rate": 1000.0 * total / len(mine) if mine else 0.0,
            "marks": {mark: sum(1 for d in mine if error_mark(d["loss"]) == mark)
                      for mark in ("doubtful", "bad", "very bad")},
            "mistakes": [dict(d, mark=error_mark(d["loss"])) for d in mistakes[:8]],
        })
    return {"sides": sides}
