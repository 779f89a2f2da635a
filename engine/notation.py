"""Move notation, derived from a position and its afterstate, as GNU Backgammon writes it.

A play is written as checker paths from the mover's side, e.g. ``24/18 13/11*``, ``bar/22``,
``6/off``, ``6/4(2)``, ``24/20*/16``. The conventions follow gnubg's ``FormatMove``
(``drawboard.c``):

* points are numbered from the mover's side, 24 down to 1 (our board indices 1..24); the bar is
  ``bar`` and a checker borne off goes to ``off``;
* single moves are ordered from the highest source point down (on a tie the higher destination
  first), then each move continues the first earlier path that ends where it starts, so a checker
  that moves more than once is written as one path, ``24/16``; an intermediate point is written
  only when a blot was hit there, ``24/20*/16``; paths keep the order of their first move;
* a point where a blot was hit is marked ``*`` once, where it is first written;
* identical paths are written once with their count, ``6/4(2)``.

Checkers in hand (index 26, variants whose checkers start off the board) enter like checkers on the
bar and are written ``bar`` too. Reading ``bar`` back, the bar is used while it holds a checker and
the hand after it, which is the order in which they must enter.

A roll that cannot be played is written ``(no move)`` (:data:`NO_MOVE`); gnubg writes nothing, and
:func:`parse_play` accepts both.

:func:`parse_play` also reads the numeric form of Jellyfish ``.mat`` files: ``25`` for the bar and
``0`` for off, one die per move (``25/21 13/9* 13/9``), in the order played.

``engine.batch_notation.batch_play_notations`` writes the same strings for whole batches of afterstates
on tensors, without the scalar search; :func:`scalar_play_notations` is its reference.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from engine.board import MOVER_BAR, MOVER_IN_HAND
from engine.reference import (
    BORNE_OFF,
    Board,
    Move,
    all_home,
    move_checker,
    reference_afterstates,
    reference_plays,
)
from engine.rules import STANDARD, Rules

NO_MOVE = "(no move)"

_BAR_WORD = "bar"
_OFF_WORD = "off"


def _point_text(point: int) -> str:
    if point in (MOVER_BAR, MOVER_IN_HAND):
        return _BAR_WORD
    if point == BORNE_OFF:
        return _OFF_WORD
    return str(point)


def _checker_paths(moves: Sequence[Move]) -> list[list[int]]:
    """Single moves joined into one path per checker: each move continues the first path (in
    notation order) that ends where it starts. Paths are ``[source, ..., destination]``."""
    ordered = sorted(moves, key=lambda move: (move[0], move[1]), reverse=True)
    paths: list[list[int]] = []
    for source, target, _ in ordered:
        for path in paths:
            if path[-1] == source:
                path.append(target)
                break
        else:
            paths.append([source, target])
    return paths


def format_play(moves: Sequence[Move]) -> str:
    """The notation of a sequence of checker moves ``(from_point, to_point, hit)``; see the module
    docstring. An empty sequence is :data:`NO_MOVE`."""
    if not moves:
        return NO_MOVE
    # The hand and the bar are both written "bar"; moves from either are the same for notation.
    moves = [
        (MOVER_BAR if source == MOVER_IN_HAND else source, target, bool(hit)) for source, target, hit in moves
    ]
    hit_points = {target for _, target, hit in moves if hit}
    paths = []
    for path in _checker_paths(moves):
        # gnubg keeps an intermediate landing point only where a blot was hit.
        inner = [point for point in path[1:-1] if point in hit_points]
        paths.append((path[0], *inner, path[-1]))
    counts: dict[tuple[int, ...], int] = {}
    for path in paths:
        counts[path] = counts.get(path, 0) + 1
    starred: set[int] = set()
    tokens = []
    for path, count in counts.items():  # in order of first appearance, as gnubg writes them
        parts = [_point_text(path[0])]
        for point in path[1:]:
            text = _point_text(point)
            if point in hit_points and point not in starred:
                text += "*"
                starred.add(point)
            parts.append(text)
        token = "/".join(parts)
        if count > 1:
            token += f"({count})"
        tokens.append(token)
    return " ".join(tokens)


def play_notation(
    before: Sequence[int], after: Sequence[int], dice: tuple[int, int], rules: Rules = STANDARD
) -> str:
    """The notation of the legal play of ``dice`` that turns ``before`` into ``after`` (both 28-int
    boards from the mover's side, as :func:`engine.reference.reference_plays` returns them).

    Several move sequences can reach one afterstate; the shortest notation among them is chosen
    (fewest paths, then fewest characters, then alphabetical), so the result is deterministic.
    """
    plays = reference_plays(before, dice, rules)
    after = tuple(int(count) for count in after)
    if after not in plays:
        raise ValueError(f"the afterstate is not a legal play of {dice[0]}-{dice[1]} from this position")
    candidates = {format_play(sequence) for sequence in plays[after]}
    return min(candidates, key=lambda text: (len(text.split()), len(text), text))


_TOKEN = re.compile(r"^(?P<path>[0-9a-z]+(?:/[0-9a-z]+\*?)+)(?:\((?P<count>[0-9])\))?$")


def _parse_point(text: str, token: str, first: bool, last: bool) -> int:
    if text == _BAR_WORD or (first and text == "25"):
        if not first:
            raise ValueError(f"{token!r}: the bar can only be where a path starts")
        return MOVER_BAR
    if text == _OFF_WORD or (last and text == "0"):
        if not last:
            raise ValueError(f"{token!r}: 'off' can only end a path")
        return BORNE_OFF
    if not text.isdigit() or not 1 <= int(text) <= 24:
        raise ValueError(f"{token!r}: {text!r} is not a point (1..24, bar or off)")
    return int(text)


def _parse_segments(notation: str) -> list[tuple[int, int, bool]]:
    """``(from, to, marked_hit)`` for each written step, repeats expanded, in written order."""
    segments = []
    for token in notation.replace(",", " ").lower().split():
        match = _TOKEN.match(token)
        if match is None:
            raise ValueError(f"{token!r} is not a move like '13/7', '24/20*/16', 'bar/22' or '6/off(2)'")
        texts = match.group("path").split("/")
        points, marks = [], []
        for index, text in enumerate(texts):
            marks.append(text.endswith("*"))
            points.append(
                _parse_point(text.rstrip("*"), token, first=index == 0, last=index == len(texts) - 1)
            )
        count = int(match.group("count") or 1)
        if not 1 <= count <= 4:
            raise ValueError(f"{token!r}: a move can be repeated 1 to 4 times, not {count}")
        # Repeated paths advance together, step by step: "bar/21*/17(2)" enters both checkers
        # before either moves on, as checkers on the bar must.
        for i in range(len(points) - 1):
            segments.extend([(points[i], points[i + 1], marks[i + 1])] * count)
    return segments


def _apply_segment(board: list[int], source: int, target: int, notation: str) -> bool:
    """Move one checker from ``source`` to ``target`` in place after checking what can be checked
    without the dice; returns whether it hit."""
    where = f"{_point_text(source)}/{_point_text(target)} in {notation!r}"
    entering = source == MOVER_BAR
    if entering:
        # Checkers on the bar enter before checkers in hand.
        if board[MOVER_BAR] > 0:
            source = MOVER_BAR
        elif board[MOVER_IN_HAND] > 0:
            source = MOVER_IN_HAND
        else:
            raise ValueError(f"{where}: no checker on the bar or in hand")
    else:
        if board[source] <= 0:
            raise ValueError(f"{where}: no checker of the mover on point {source}")
        if board[MOVER_BAR] > 0 or board[MOVER_IN_HAND] > 0:
            raise ValueError(f"{where}: checkers on the bar must enter first")
    start = 25 if entering else source
    if target >= start:
        raise ValueError(f"{where}: checkers move from higher to lower points")
    if target != BORNE_OFF and board[target] <= -2:
        raise ValueError(f"{where}: point {target} is closed")
    # Whether bearing off was allowed is checked on the whole play.
    return move_checker(board, source, target)


def parse_play(
    before: Sequence[int],
    notation: str,
    rules: Rules = STANDARD,
    *,
    dice: tuple[int, int] | None = None,
) -> Board:
    """Apply ``notation`` to ``before`` (28 ints, mover's side) and return the afterstate.

    Steps from the bar are applied first (waiting checkers enter before anything else moves), the
    others in written order. Each step must be a possible move of one checker: the mover has a
    checker there, it moves forwards, nothing else moves while checkers wait to enter, it does not
    land on a closed point, and a play that bears off ends with every checker home. A ``*`` must
    mark a point where a blot is hit; an unmarked hit is accepted (Jellyfish files do not always
    mark them). Without ``dice`` the pips of a step are not checked (``24/16`` moves one checker
    from 24 to 16). With ``dice`` the result must also be one of the legal afterstates of that
    roll (which checks the distances, the points passed on the way and the rule to use as many
    dice as possible). Raises ``ValueError`` naming the problem.
    """
    board = [int(count) for count in before]
    text = notation.strip()
    segments = [] if text in ("", NO_MOVE) else _parse_segments(text)
    # Every entering step first: all waiting checkers enter before any other checker moves, and
    # gnubg writes "bar/21*/17* bar/21" for a checker that moved on after both had entered.
    segments.sort(key=lambda segment: segment[0] != MOVER_BAR)
    marked = {target for _, target, mark in segments if mark}
    hit_points = set()
    for source, target, _ in segments:
        if _apply_segment(board, source, target, notation):
            hit_points.add(target)
    # Checkers only move forwards, so a play that bore off must end with every checker home; a
    # written path like "12/off" reaches home on the way.
    bore_off = any(target == BORNE_OFF for _, target, _ in segments)
    if bore_off and not all_home(board):
        raise ValueError(f"{notation!r} bears off while a checker is outside points 1..6")
    unhit = marked - hit_points
    if unhit:
        raise ValueError(f"{notation!r} marks a hit on {sorted(unhit)} but no blot was hit there")
    after = tuple(board)
    if dice is not None and after not in reference_afterstates(before, dice, rules):
        raise ValueError(
            f"{notation!r} is not a legal play of {dice[0]}-{dice[1]} here "
            "(wrong distances, a blocked point on the way, or dice left unused that could be played)"
        )
    return after


@functools.lru_cache(maxsize=1 << 16)
def _format_moves(moves: tuple[Move, ...]) -> str:
    """``format_play`` of a sorted move multiset: the notation depends on the multiset alone (the moves
    are sorted before they are joined into paths, and hits count by the point), so plays that recur
    across positions, ``8/5 6/5``, are written once."""
    return format_play(moves)


def _shortest(texts) -> str:
    return min(texts, key=lambda text: (len(text.split()), len(text), text))


def play_notations(before: Sequence[int], dice: tuple[int, int], rules: Rules = STANDARD) -> dict[Board, str]:
    """The notation of every legal play of ``dice`` from ``before``, by afterstate: one search per
    position (``play_notation`` per afterstate would repeat it), the same choice of notation."""
    return {
        after: _shortest({_format_moves(key) for key in {tuple(sorted(sequence)) for sequence in sequences}})
        for after, sequences in reference_plays(before, dice, rules).items()
    }


def scalar_play_notations(board, dice, afterstates, rules: Rules = STANDARD) -> list[str]:
    """The reference for ``engine.batch_notation.batch_play_notations``: the same list, from the scalar search.

    The same notation as ``play_notation`` (one search of the reference per distinct position and roll in
    the batch: repeated requests are answered once)."""
    befores = [tuple(row) for row in board.tolist()]
    rolls = [tuple(roll) for roll in dice.tolist()]
    rows = afterstates.boards.tolist()
    offsets, counts = afterstates.offsets.tolist(), afterstates.counts.tolist()
    searched: dict[tuple, dict[Board, str]] = {}
    notations: list[str] = [""] * len(rows)
    for index, (before, roll) in enumerate(zip(befores, rolls)):
        key = (before, roll)
        table = searched.get(key)
        if table is None:
            table = searched[key] = play_notations(before, roll, rules)
        for row in range(offsets[index], offsets[index] + counts[index]):
            notations[row] = table[tuple(rows[row])]
    return notations
