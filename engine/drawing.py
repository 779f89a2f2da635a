"""An ASCII board in GNU Backgammon's text layout, from the side to move (drawn at the bottom).

The start position with 31 to play::

     Position ID: 4HPwATDgc/ABMA
     +13-14-15-16-17-18------19-20-21-22-23-24-+     O: 167 pips, 0 off
     | X           O    |   | O              X |
     | X           O    |   | O              X |
     | X           O    |   | O                |
     | X                |   | O                |
     | X                |   | O                |
     |                  |BAR|                  |     X to play 31
     | O                |   | X                |
     | O                |   | X                |
     | O           X    |   | X                |
     | O           X    |   | X              O |
     | O           X    |   | X              O |
     +12-11-10--9--8--7-------6--5--4--3--2--1-+     X: 167 pips, 0 off

Each point shows up to 5 checkers; the fifth row (next to the bar line) shows the count instead when there are
more than 5, as gnubg does. The column after the right edge shows borne-off checkers in three stacks of five
(the opponent's at the top), and the middle column the checkers on each side's bar. The 44 columns from the
left edge match eXtreme Gammon's text export as well. Trailing spaces are stripped, so the drawing can sit in
a docstring.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND
from engine.position_id import board_to_list, encode_position_id

TOP_LABELS = " +13-14-15-16-17-18------19-20-21-22-23-24-+"
BOTTOM_LABELS = " +12-11-10--9--8--7-------6--5--4--3--2--1-+"
BAR_LINE = " |                  |BAR|                  |"
ROWS_PER_HALF = 5
NOTE_GAP = "     "


def _cell(count: int, row: int, marker: str) -> str:
    """Three characters for ``count`` checkers of one colour at stack height ``row`` (0 at the edge)."""
    if row < ROWS_PER_HALF - 1 or count <= ROWS_PER_HALF:
        text = marker if count > row else " "
    else:
        text = str(count)
    return f"{text:^3}"


def _point_cell(value: int, row: int, mover: str, opponent: str) -> str:
    if value > 0:
        return _cell(value, row, mover)
    return _cell(-value, row, opponent)


def _borne_off(count: int, row: int, marker: str) -> str:
    """Row ``row`` of three stacks of five borne-off checkers."""
    return "".join(marker if count > 5 * stack + row else " " for stack in range(3))


def draw_board(
    board: Sequence[int] | torch.Tensor,
    dice: Sequence[int] | torch.Tensor | None = None,
    *,
    mover: str = "X",
    opponent: str = "O",
    checkers_per_side: int = 15,
    caption: str | None = None,
) -> str:
    """The board (28 ints or ``int[28]``, from the side to move) as lines of text, mover at the bottom.

    ``dice`` (two ints; ``(0, 0)`` or None when not rolled) is written beside the bar line. ``mover`` and
    ``opponent`` are the one-character markers of the two sides.
    """
    values = board_to_list(board)
    rolled = [int(die) for die in dice] if dice is not None else [0, 0]
    mover_on_board = sum(max(0, value) for value in values[1:26]) + values[MOVER_IN_HAND]
    opponent_on_board = sum(max(0, -value) for value in values[0:25]) - values[OPPONENT_IN_HAND]
    mover_off = checkers_per_side - mover_on_board
    opponent_off = checkers_per_side - opponent_on_board
    # A checker on the mover's point p travels p pips; the opponent's on it, 25 - p; bar and in hand, 25.
    mover_pips = sum(p * max(0, values[p]) for p in range(1, 26)) + 25 * values[MOVER_IN_HAND]
    opponent_pips = sum((25 - p) * max(0, -values[p]) for p in range(25)) - 25 * values[OPPONENT_IN_HAND]

    lines = []
    if caption:
        lines.append(f" {caption}")
    if values[MOVER_IN_HAND] or values[OPPONENT_IN_HAND]:
        lines.append(" Position ID: none (checkers in hand)")
        lines.append(f" In hand: {mover} {values[MOVER_IN_HAND]}, {opponent} {-values[OPPONENT_IN_HAND]}")
    else:
        lines.append(f" Position ID: {encode_position_id(values)}")
    lines.append(f"{TOP_LABELS}{NOTE_GAP}{opponent}: {opponent_pips} pips, {opponent_off} off")

    def row_text(points: range, bar_value: int, row: int, off: str) -> str:
        left = "".join(_point_cell(values[p], row, mover, opponent) for p in points[:6])
        right = "".join(_point_cell(values[p], row, mover, opponent) for p in points[6:])
        bar = _point_cell(bar_value, row, mover, opponent)
        return f" |{left}|{bar}|{right}| {off}"

    for row in range(ROWS_PER_HALF):  # top half, from the edge towards the bar
        off = _borne_off(opponent_off, row, opponent)
        lines.append(row_text(range(13, 25), values[OPPONENT_BAR], row, off))
    if rolled[0]:
        lines.append(f"{BAR_LINE}{NOTE_GAP}{mover} to play {rolled[0]}{rolled[1]}")
    else:
        lines.append(f"{BAR_LINE}{NOTE_GAP}{mover} on roll")
    for row in reversed(range(ROWS_PER_HALF)):  # bottom half, from the bar towards the edge
        off = _borne_off(mover_off, row, mover)
        lines.append(row_text(range(12, 0, -1), values[MOVER_BAR], row, off))
    lines.append(f"{BOTTOM_LABELS}{NOTE_GAP}{mover}: {mover_pips} pips, {mover_off} off")
    return "\n".join(line.rstrip() for line in lines)
