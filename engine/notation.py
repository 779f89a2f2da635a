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

:func:`batch_play_notations` writes the same strings for whole batches of afterstates without the
scalar search, from each afterstate's difference with its parent (see the comment above it);
:func:`scalar_play_notations` is its reference.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import torch

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
    """The reference for ``batch_play_notations``: the same list, from the scalar search.

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


# --- The batched path: notation from the tensor difference between each afterstate and its parent. ---
#
# Nodes of the difference: 0 is off, 1..24 the points, 25 the bar and the hand together (both are
# written "bar" and enter alike). The notation is a function of (net change of the mover's checkers
# per node, points where an opponent blot disappeared, dice) alone:
# * doubles: every node has exactly one single-die step out of it (p -> p - d, or off from p <= d), so
#   the steps form a tree rooted at off and the net change fixes how many steps leave each node;
# * other rolls: at most two steps; the step multisets with the right net change differ only in an
#   unwritten intermediate point, unless a blot was hit there, which the hit points decide.
# Either way ``format_play`` depends only on the step multiset and the set of hit points, so every
# candidate sequence of the scalar search writes the same string. Acey-deucey turns mix dice values
# (the 1-2, then a chosen double) and keep the scalar path.

_NODES = 26
_scalar_rows = 0  # rows answered by the scalar reference (acey-deucey), for the bench and the tests


def scalar_fallback_rows() -> int:
    """How many afterstates ``batch_play_notations`` has answered with the scalar search so far."""
    return _scalar_rows


def _step_target(point: int, die: int) -> int:
    return max(point - die, BORNE_OFF)


def _double_steps(net: Sequence[int], die: int) -> list[tuple[int, int]] | None:
    """The unique steps of ``die`` with this net change, from the bar down (None if none exist)."""
    steps: list[tuple[int, int]] = []
    leaving = [0] * (_NODES + 6)
    losing = [point for point in range(1, 26) if net[point] < 0]
    for point in range(max(losing, default=0), 0, -1):
        # what arrives from point + die (counted already, higher up), less what stays here, leaves
        out = leaving[point + die] - net[point]
        if out:
            if out < 0:
                return None
            leaving[point] = out
            steps.extend([(point, point - die if point > die else BORNE_OFF)] * out)
    return steps


def _two_die_steps(net: Sequence[int], dice: tuple[int, int], hits: frozenset[int]):
    """A multiset of one step of each die (or of one die if no pair fits) with this net change and
    whose targets include every hit point, as a one-element list (empty if there is none)."""
    movers = [point for point in range(1, 26) if net[point] < 0]
    for count in (2, 1):
        orders = [dice, dice[::-1]] if count == 2 else [(dice[0],), (dice[1],)]
        for order in orders:
            for first in movers:
                middle = _step_target(first, order[0])
                for second in (movers + ([middle] if middle else [])) if count == 2 else [None]:
                    steps = [(first, middle)]
                    if second is not None:
                        steps.append((second, _step_target(second, order[1])))
                    change = [0] * _NODES
                    for source, target in steps:
                        change[source] -= 1
                        change[target] += 1
                    if change[1:] == list(net[1:]) and hits <= {target for _, target in steps}:
                        # Any other fit differs only in an intermediate point of one checker's
                        # path that saw no hit, which is not written: the same notation.
                        return [steps]
    return []


def _notation_of_difference(net: tuple[int, ...], hits: frozenset[int], dice: tuple[int, int]) -> str:
    if not any(net):
        return NO_MOVE
    if dice[0] == dice[1]:
        candidates = [_double_steps(net, dice[0])]
    else:
        candidates = _two_die_steps(net, dice, hits)
    texts = set()
    for steps in candidates:
        if steps is None:
            continue
        flagged: set[int] = set()
        moves = []
        for source, target in steps:
            # one step per hit point carries the hit; format_play reads hits by point
            hit = target in hits and target not in flagged
            if hit:
                flagged.add(target)
            moves.append((source, target, hit))
        texts.add(format_play(moves))
    if not texts:
        raise AssertionError(f"no single-die steps of {dice} give the change {net}")
    return _shortest(texts)


def _differences(board, afterstates):
    """``(net int8[N, 26], hit bool[N, 24])``: each afterstate's change of the mover's checkers per node
    (off, points, bar and hand) and the points where an opponent blot was hit."""
    before = board.to(afterstates.boards.device)[afterstates.position]
    after = afterstates.boards
    net = torch.zeros(after.shape[0], _NODES, dtype=torch.int8, device=after.device)
    net[:, 1:25] = after[:, 1:25].clamp(min=0) - before[:, 1:25].clamp(min=0)
    net[:, 25] = after[:, 25] + after[:, 26] - before[:, 25] - before[:, 26]
    net[:, 0] = -net[:, 1:].sum(-1, dtype=torch.int8)
    hit = (before[:, 1:25] == -1) & (after[:, 1:25] != -1)
    return net, hit


# Notation by packed difference key, shared by every batch (plays recur across positions); cleared when
# it grows past _CACHE_LIMIT entries, to bound memory on endless streams.
_cache: dict[tuple[int, int, int], str] = {}
_CACHE_LIMIT = 1 << 20


def _packed_keys(net: torch.Tensor, hit: torch.Tensor, rolls: torch.Tensor) -> torch.Tensor:
    """``int64[N, 3]``: the net change (-4..4 per node, 4 bits each: 13 nodes per word), the hit points
    (24 bits) and the dice (3 bits each) of every row, packed so that a row's key is three Python ints."""
    shifts = torch.arange(13, dtype=torch.int64, device=net.device) * 4
    nibbles = (net.to(torch.int64) + 4) << shifts.repeat(2)
    low, high = nibbles[:, :13].sum(-1), nibbles[:, 13:].sum(-1)
    bits = hit.to(torch.int64) << torch.arange(24, dtype=torch.int64, device=net.device)
    rest = bits.sum(-1) | (rolls[:, 0].to(torch.int64) << 24) | (rolls[:, 1].to(torch.int64) << 27)
    return torch.stack([low, high, rest], dim=1)


def batch_play_notations(board, dice, afterstates, rules: Rules = STANDARD) -> list[str]:
    """The notation of every afterstate of ``engine.movegen.legal_afterstates(board, dice, rules)``, in its
    order: ``board int8[B, 28]``, ``dice int8[B, 2]`` -> ``list[str]`` of length ``afterstates.total``.

    The same strings as ``play_notation``, derived from each afterstate's difference from its parent
    (see above); each distinct (difference, hits, dice) is formatted once. Acey-deucey uses the scalar
    search (``scalar_play_notations``)."""
    if rules.acey_deucey:
        global _scalar_rows
        _scalar_rows += afterstates.total
        return scalar_play_notations(board, dice, afterstates, rules)
    if afterstates.total == 0:
        return []
    net, hit = _differences(board, afterstates)
    rolls = dice.to(net.device)[afterstates.position]
    keys = list(map(tuple, _packed_keys(net, hit, rolls).tolist()))
    if len(_cache) > _CACHE_LIMIT:
        _cache.clear()
    missing: dict[tuple[int, int, int], int] = {}
    for row, key in enumerate(keys):
        if key not in _cache and key not in missing:
            missing[key] = row
    if missing:
        rows = torch.tensor(list(missing.values()), dtype=torch.int64, device=net.device)
        for key, changes, flags, roll in zip(
            missing, net[rows].tolist(), hit[rows].tolist(), rolls[rows].tolist()
        ):
            hits = frozenset(point + 1 for point, flag in enumerate(flags) if flag)
            _cache[key] = _notation_of_difference(tuple(changes), hits, (roll[0], roll[1]))
    return [_cache[key] for key in keys]
