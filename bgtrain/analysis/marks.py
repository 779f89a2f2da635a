"""GNU Backgammon's marks for an error, by the equity it loses (normalised to the cube): doubtful from
0.04, bad from 0.08, very bad from 0.16 (its default thresholds). Shared by ``bgtrain analyse`` and the
web game's tutor and analysis."""

from __future__ import annotations

DOUBTFUL, BAD, VERY_BAD = 0.04, 0.08, 0.16
MARKS = ("doubtful", "bad", "very bad")


def error_mark(loss: float) -> str:
    """GNU Backgammon's mark for an error that loses ``loss`` equity: "" below 0.04."""
    if loss >= VERY_BAD:
        return "very bad"
    if loss >= BAD:
        return "bad"
    if loss >= DOUBTFUL:
        return "doubtful"
    return ""
