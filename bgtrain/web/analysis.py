"""The analysis of a finished game, as GNU Backgammon's post-game analysis reads: each side's errors
(the equity every decision lost against the best at the analysis ply), each roll's luck
(``bgtrain.web.luck``), the game's equity graph and the moves to step through in review.

* ``sides``: per side, the error rate and marks, the mistakes worth a look, and the luck totals;
* ``timeline``: every decision in order with the person's cubeless equity after it (per unit cube;
  the bot's is its negative), its loss and mark, and its roll's luck: the equity graph's points;
* ``review``: every checker play with the board before it, after it and after the best play (28 ints
  from the person's side; ``bgtrain.web.view`` turns them into the page's boards, so the saved
  session keeps the short form), the played and the best play's notation, the loss and the luck.

All plays of the game are valued in one batched ``Evaluator.hint`` call and all rolls' luck in one
batched evaluation over positions x 21 rolls.
"""

from __future__ import annotations

import torch

from bgtrain.outcomes import cubeless_equity
from bgtrain.values.evaluator import Evaluator
from bgtrain.web.advice import DOUBTFUL, error_mark, play_loss
from bgtrain.web.luck import luck_mark, roll_luck
from bgtrain.web.record import flip
from engine.notation import play_notation

YOU = 0


def analyse_moves(evaluator: Evaluator, moves: list[dict], ply: int) -> list[dict]:
    """Each recorded play against the best at ``ply``, in one batched hint call: ``{"loss", "equity"
    (the played position's, mover's side), "best_board", "best_extra_roll"}``. ``moves``: ``{"before",
    "after", "dice", "extra_roll"}`` (mover's side)."""
    if not moves:
        return []
    boards = torch.tensor([move["before"] for move in moves], dtype=torch.int8)
    dice = torch.tensor([move["dice"] for move in moves])
    out = []
    for move, hints in zip(moves, evaluator.hint(boards, dice, ply, notation=False)):
        rows = [{"board": list(h.board), "extra_roll": h.extra_roll, "difference": h.difference,
                 "equity": h.equity} for h in hints]
        loss = play_loss(rows, move["after"], bool(move.get("extra_roll", False)))
        out.append({"loss": loss, "equity": rows[0]["equity"] - loss, "best_board": rows[0]["board"],
                    "best_extra_roll": rows[0]["extra_roll"]})
    return out


def analyse_game(evaluator: Evaluator, decisions: list[dict], ply: int, names: tuple[str, str],
                 opening_roll: bool = True) -> dict:
    """The analysis of a finished game. ``decisions`` as ``Session`` records them (the loss of every
    unforced play is filled in place); ``opening_roll``: the game's first play was of the opening
    roll, which has no luck of its own here (it cannot be a double, so the 21-roll average does not
    apply; GNU Backgammon values it against the 15 non-doubles)."""
    rules = evaluator.rules
    moves = [d for d in decisions if d["kind"] == "move"]
    played = analyse_moves(evaluator, [d["move"] for d in moves], ply)
    lucky = moves[1:] if opening_roll else moves
    luck = dict(zip(map(id, lucky), roll_luck(evaluator, [d["move"]["before"] for d in lucky],
                                             [d["move"]["dice"] for d in lucky])))
    valued = dict(zip(map(id, moves), played))
    timeline, review, equity = [], [], 0.0
    for index, decision in enumerate(decisions):
        seat = decision["seat"]
        sign = 1.0 if seat == YOU else -1.0
        point = {"index": index, "seat": seat, "kind": decision["kind"], "text": decision["text"],
                 "forced": decision["forced"], "luck": None}
        if decision["kind"] == "move":
            value = valued[id(decision)]
            if not decision["forced"]:
                decision["loss"] = value["loss"]
            equity = sign * value["equity"]
            point["luck"] = luck.get(id(decision))
            review.append(_review_step(decision, value, point["luck"], names, rules, len(timeline)))
        elif decision["cube"] is not None:
            # The cube decider's position before the roll (the bot's, for the person's take or pass).
            decider = seat if decision["kind"] == "cube" else 1 - seat
            probabilities = torch.tensor([decision["cube"]["probabilities"]])
            equity = (1.0 if decider == YOU else -1.0) * float(cubeless_equity(probabilities, rules)[0])
        point.update(equity=equity, loss=decision["loss"], mark=error_mark(decision["loss"] or 0.0))
        timeline.append(point)
    # Each row keeps its place in the timeline (``index``), so a listed mistake opens its move in review.
    rows = [{**{k: v for k, v in d.items() if k not in ("move", "cube")}, "index": index}
            for index, d in enumerate(decisions) if d["loss"] is not None]
    summary = summarise(rows, names)
    for seat, side in enumerate(summary["sides"]):
        side["luck"] = luck_summary([p["luck"] for p in timeline if p["seat"] == seat and p["luck"] is not None])
    return {"ply": ply, "luck_ply": 0, **summary, "timeline": timeline, "review": review}


def _review_step(decision: dict, value: dict, luck: float | None, names, rules, index: int) -> dict:
    move, seat = decision["move"], decision["seat"]

    def seen(board):  # a mover's-side board from the person's side of the table (view.py draws it)
        return list(board) if seat == YOU else list(flip(board))

    best = value["best_board"]
    same = best == list(move["after"]) and value["best_extra_roll"] == bool(move.get("extra_roll"))
    best_text = move["play"]
    if not same:
        try:
            best_text = play_notation(move["before"], best, tuple(move["dice"]), rules)
        except ValueError:  # acey-deucey's 1-2 with a chosen double: not written by play_notation
            best_text = "(another play)"
    loss = decision["loss"] or 0.0
    return {"index": index, "who": "you" if seat == YOU else "bot", "name": names[seat], "dice": move["dice"],
            "played": move["play"], "best": best_text, "best_is_played": same, "forced": decision["forced"],
            "loss": loss, "mark": error_mark(loss), "luck": luck, "luck_mark": luck_mark(luck or 0.0),
            "position_id": move.get("position_id"), "match_id": move.get("match_id"),
            "before": seen(move["before"]), "after": seen(move["after"]), "best_after": seen(best)}


def luck_summary(lucks: list[float]) -> dict:
    """One side's luck over a game: the total (per unit cube), the rolls counted, the rate in
    thousandths per roll, and how many rolls got each of GNU Backgammon's marks."""
    marks = [luck_mark(luck) for luck in lucks]
    return {"total": sum(lucks), "rolls": len(lucks), "rate": 1000.0 * sum(lucks) / len(lucks) if lucks else 0.0,
            "marks": {mark: marks.count(mark) for mark in ("very lucky", "lucky", "unlucky", "very unlucky")}}


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
