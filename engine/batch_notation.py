"""Move notation for whole batches of afterstates, on arrays: the strings of ``engine.notation``'s
``play_notation`` (gnubg's ``FormatMove`` conventions, described there), without the scalar search.

The notation of a play is a function of its *difference* alone: the net change of the mover's checkers
per node (0 is off, 1..24 the points, 25 the bar and the hand together: both are written ``bar`` and
enter alike), the points where an opponent blot disappeared (the hits), and the dice:

* doubles: every node has exactly one single-die step out of it (p -> p - d, or off from p <= d), so
  the net change fixes, from the bar down, how many steps leave each node;
* other rolls: at most two steps. Two nodes that lose a checker: one step each, and only one pairing
  of sources with destinations fits the dice. One node that loses a checker: one step, or one checker
  moving twice through s - d1 or s - d2, which is written only if a blot was hit there (the hits say
  which).

From the steps (at most four, sorted from the highest source down) the paths, their counts and the
``*`` marks follow gnubg's rules, all in fixed loops of numpy operations on node-major rows over the
batch (numpy rather than torch: at these sizes torch's int8 comparisons and column indexing cost many
times more on the CPU, measured); each path becomes one integer *token* (its points, marks and count).
``PlayWords`` numbers the batch's distinct tokens in the order of their text, which sorts plays as their
strings and writes them as bytes in bulk (``bgtrain moves``) without a Python string per play. Tested
string for string against ``engine.notation.scalar_play_notations`` on every variant. Acey-deucey turns
mix dice values (the 1-2, then a chosen double) and keep the scalar search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.notation import NO_MOVE, scalar_play_notations
from engine.rules import STANDARD, Rules

_NODES = 26
_BAR_NODE = 25
_MAX_STEPS = 4
_NONE = -1
_scalar_rows = 0  # rows answered by the scalar reference (acey-deucey), for the bench and the tests


def scalar_fallback_rows() -> int:
    """How many afterstates ``batch_play_notations`` has answered with the scalar search so far."""
    return _scalar_rows


def differences(board: torch.Tensor, afterstates) -> tuple[np.ndarray, np.ndarray]:
    """``(net int8[26, N], hits int64[N])`` (numpy): each afterstate's change of the mover's checkers per
    node (off, points, bar and hand), node-major, and a bit mask of the points where an opponent blot was
    hit (bit p for point p). Node-major and narrow: every operation below runs on whole rows of N bytes
    or integers (numpy: torch's int8 comparisons are many times slower on the CPU, measured)."""
    position = afterstates.position.cpu().numpy()
    before = np.ascontiguousarray(board.cpu().numpy().T).take(position, axis=1)
    after = np.ascontiguousarray(afterstates.boards.cpu().numpy().T)
    net = np.empty((_NODES, after.shape[1]), dtype=np.int8)
    net[1:25] = _positive(after[1:25]) - _positive(before[1:25])
    net[25] = after[25] + after[26] - before[25] - before[26]
    net[0] = -net[1:].sum(0, dtype=np.int8)
    hit = ((before[1:25] == -1) & (after[1:25] != -1)).view(np.uint8)
    # Bit p for point p, eight points to a byte first (narrow shifts by constants are the fast ones).
    hits = np.zeros(after.shape[1], dtype=np.int64)
    for first in range(0, 24, 8):
        byte = hit[first].copy()
        for point in range(1, 8):
            byte |= hit[first + point] << point
        hits |= byte.astype(np.int64) << (first + 1)
    return net, hits


def _positive(counts: np.ndarray) -> np.ndarray:
    """``max(counts, 0)``: against an array of zeros, which numpy runs many times faster than against 0."""
    return np.maximum(counts, np.zeros_like(counts))


# 1 << k by k: numpy shifts by a column of amounts one element at a time, and looks a table up fast.
_POWERS = np.left_shift(1, np.arange(63, dtype=np.int64))


def _bit(mask: np.ndarray, node: np.ndarray) -> np.ndarray:
    """Whether ``node int64[N]`` is set in the per-row bit mask ``mask int64[N]``."""
    return mask & _POWERS[node] != 0


def _units_from_top(counts: np.ndarray, top: int, units: int) -> tuple[list, list]:
    """``(nodes, present)``, lists of ``units`` arrays ``int64[N]`` and ``bool[N]``: the node of the k-th
    unit of ``counts int8[top + 1, N]`` (nodes ``top`` down to 0, each repeated as often as it counts)."""
    cumulative = np.empty_like(counts)  # row i: the units of nodes top .. top - i (at most 4)
    running = np.zeros(counts.shape[1], dtype=np.int8)
    for row, node in enumerate(range(top, -1, -1)):
        running = np.add(running, counts[node], out=cumulative[row])
    nodes = [top - (cumulative <= rank).view(np.int8).sum(0, dtype=np.int8).astype(np.int64) for rank in range(units)]
    return nodes, [running > rank for rank in range(units)]


def _double_steps(net: np.ndarray, die: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sources and destinations ``int64[4, N]`` (-1 past the last step) of doubles of ``die int64[N]``
    (``net``: ``int8[26, N]``): from the bar down, what arrives from p + d, less what stays at p, leaves p."""
    count = net.shape[1]
    leaving = np.zeros((_NODES + 6) * count, dtype=np.int8)  # node-major, flat; past 25: 0
    above = die * count + np.arange(count)  # where p + d is, less p * count
    for point in range(_BAR_NODE, 0, -1):
        leaving[point * count : (point + 1) * count] = leaving[above + point * count] - net[point]
    leaving = leaving.reshape(_NODES + 6, count)[: _BAR_NODE + 1]
    leaving[0] = 0
    nodes, present = _units_from_top(leaving, _BAR_NODE, _MAX_STEPS)
    source = np.stack([np.where(here, node, _NONE) for node, here in zip(nodes, present)])
    target = np.where(source >= 0, np.maximum(source - die, 0), _NONE)
    return source, target


def _fits(source: np.ndarray, target: np.ndarray, die: np.ndarray) -> np.ndarray:
    return target == np.maximum(source - die, 0)


def _two_die_steps(net, hits, dice) -> tuple[np.ndarray, np.ndarray]:
    """Sources and destinations ``int64[2, N]`` (-1 past the last step) of rolls of two different dice
    (``net``: ``int8[26, N]``, ``dice``: ``int64[2, N]``)."""
    leaving = _positive(-net)
    leaving[0] = 0
    (start, second), (one_or_more, two) = _units_from_top(leaving, _BAR_NODE, 2)
    (end, far), _ = _units_from_top(_positive(net[:_BAR_NODE]), _BAR_NODE - 1, 2)
    one = one_or_more & ~two
    none = np.full_like(start, _NONE)

    # One node loses a checker: one checker moved, once or through s - d1 or s - d2 (written if hit).
    through = none
    for die in dice:  # only the path it took can hold a hit
        middle = start - die
        passed = (middle > end) & (middle >= 1) & _bit(hits, np.maximum(middle, 0))
        through = np.where(passed, middle, through)
    twice = one & (through >= 0)

    # Two nodes (or one node twice) lose a checker: one step each; the pairing is the one the dice fit.
    straight = (_fits(start, end, dice[0]) & _fits(second, far, dice[1])) | (
        _fits(start, end, dice[1]) & _fits(second, far, dice[0]))
    first_target = np.where(straight, end, far)
    second_target = np.where(straight, far, end)
    # Steps are written from the highest (source, destination) down.
    swap = (start == second) & (first_target < second_target)
    first_target, second_target = (np.where(swap, second_target, first_target),
                                   np.where(swap, first_target, second_target))

    source = np.stack([np.where(one_or_more, start, none),
                       np.where(two, second, np.where(twice, through, none))])
    target = np.stack([np.where(two, first_target, np.where(twice, through, np.where(one, end, none))),
                       np.where(two, second_target, np.where(twice, end, none))])
    return source, target


# A token is one written path: start and end node (5 bits each), up to three intermediate hit points
# (5 bits each, in order), how many there are, the marks of those and of the end, and the count.
_INNER_BITS = 15


def _pack_token(start, end, inner, inner_count, inner_marks, end_mark, count):
    return (((((start * 32 + end) << _INNER_BITS | inner) * 4 + inner_count) * 8 + inner_marks) * 2
            + end_mark) * 8 + count


def _tokens(source: np.ndarray, target: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """``int64[S, N]``: the tokens of each play of at most ``S`` steps (``source``, ``target``: ``int64[S, N]``,
    -1 past the last step; ``hits``: a bit mask of the hit nodes per row) in written order, 0 for none.

    gnubg's rules (see ``engine.notation``): each step, from the highest source down, continues the first
    path that ends where it starts, else starts a path; an intermediate point is kept only where a blot
    was hit; identical paths are written once with their count, in order of first appearance; a hit
    point is marked ``*`` where it is first written. Paths are lists of ``int64[N]`` rows."""
    steps, rows = source.shape
    none = np.full(rows, _NONE, dtype=np.int64)
    zero = np.zeros(rows, dtype=np.int64)
    start, end, inner, inner_count = [], [], [], []
    for step in range(steps):
        origin, destination = source[step], target[step]
        kept = _bit(hits, np.maximum(origin, 0))
        unplaced = origin >= 0
        for path in range(step):  # the first path that ends where this step starts
            extend = unplaced & (end[path] == origin)
            unplaced = unplaced & ~extend
            keep = extend & kept
            inner[path] = np.where(keep, inner[path] * 32 + origin, inner[path])
            inner_count[path] = inner_count[path] + keep
            end[path] = np.where(extend, destination, end[path])
        # Otherwise a new path, in slot `step`: slots are in order of creation, and a slot whose step
        # continued a path stays empty and writes nothing.
        start.append(np.where(unplaced, origin, none))
        end.append(np.where(unplaced, destination, none))
        inner.append(zero)
        inner_count.append(zero)

    # Identical paths: counted at their first appearance.
    identity = [(first * 32 + last) << _INNER_BITS | points for first, last, points in zip(start, end, inner)]
    count = [(first >= 0).astype(np.int64) for first in start]
    for later in range(1, steps):
        for earlier in range(later):
            same = (count[later] > 0) & (count[earlier] > 0) & (identity[earlier] == identity[later])
            count[earlier] = count[earlier] + same
            count[later] = np.where(same, 0, count[later])

    # Marks where each hit point is first written: the kept points of each path, then its end.
    marked = zero
    tokens = np.zeros((steps, rows), dtype=np.int64)
    for path in range(steps):
        written = count[path] > 0
        inner_marks = zero
        for position in range(steps - 1 - path):  # the steps after its first can keep a point each
            later = inner_count[path] - 1 - position  # kept points after this one (5 bits each)
            points = inner[path]
            point = np.where(later <= 0, points, np.where(later == 1, points >> 5, points >> 10)) & 31
            fresh = written & (inner_count[path] > position) & ~_bit(marked, point)  # kept points are hits
            inner_marks = inner_marks | (fresh.astype(np.int64) << position)
            marked = marked | np.where(fresh, _POWERS[point], 0)
        finish = np.maximum(end[path], 0)
        end_mark = (written & _bit(hits, finish) & ~_bit(marked, finish)).astype(np.int64)
        marked = marked | np.where(end_mark == 1, _POWERS[finish], 0)
        token = _pack_token(np.maximum(start[path], 0), finish, inner[path], inner_count[path], inner_marks,
                            end_mark, count[path])
        tokens[path] = np.where(written, token, 0)
    return tokens


def _node_text(node: int) -> str:
    return "bar" if node == _BAR_NODE else "off" if node == 0 else str(node)


def _token_text(token: int) -> str:
    count, token = token & 7, token >> 3
    end_mark, token = token & 1, token >> 1
    inner_marks, token = token & 7, token >> 3
    inner_count, token = token & 3, token >> 2
    inner, token = token & ((1 << _INNER_BITS) - 1), token >> _INNER_BITS
    start, end = token >> 5, token & 31
    parts = [_node_text(start)]
    for position in range(inner_count):
        point = (inner >> (5 * (inner_count - 1 - position))) & 31
        parts.append(str(point) + ("*" if inner_marks >> position & 1 else ""))
    parts.append(_node_text(end) + ("*" if end_mark else ""))
    text = "/".join(parts)
    return text if count == 1 else f"{text}({count})"


# Text by token, shared by every batch; cleared past _CACHE_LIMIT entries to bound memory.
_token_texts: dict[int, str] = {}
_CACHE_LIMIT = 1 << 18

# A token without intermediate points is numbered by its start, end, end mark and count alone:
# (start * 32 + end) * 16 + end mark * 8 + count, below _SIMPLE_TOKENS. Tokens with intermediate points
# (a hit on the way) are rare and numbered from _SIMPLE_TOKENS up, by their value, per batch.
_SIMPLE_TOKENS = 1 << 14
_TOKEN_TAIL_BITS = 24  # the token bits below its start and end: inner points, their count and marks, ...


def _token_text_of(token: int) -> str:
    text = _token_texts.get(token)
    if text is None:
        if len(_token_texts) > _CACHE_LIMIT:
            _token_texts.clear()
        text = _token_texts[token] = _token_text(token) if token else ""
    return text


@dataclass(frozen=True)
class PlayWords:
    """The notation of each afterstate as numbered words (the paths, ``24/18(2)``, that spaces separate):
    ``words: int64[S, N]`` (numpy), the number of each afterstate's k-th word, 0 past its last; ``texts``,
    the text of each number, ``texts[0] == ""``. An afterstate without words is :data:`NO_MOVE`.

    Numbers follow the order of their texts, so comparing two rows number by number orders them as their
    strings: no word holds a space, which sorts before every character in one, and a row's words come
    first (no 0 before a word). ``fields`` writes the rows as bytes for output in bulk."""

    words: np.ndarray
    texts: list[str]

    def strings(self) -> list[str]:
        """The notation of each afterstate, as ``engine.notation.play_notation`` writes it."""
        texts = self.texts
        return [" ".join(filter(None, map(texts.__getitem__, row))) or NO_MOVE for row in self.words.T.tolist()]

    def _tables(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The padded ASCII of each number as a first word (0: ``NO_MOVE``) and as a later one (after a
        space; 0: nothing), with the lengths."""
        texts = [text.encode("ascii") for text in self.texts[1:]]
        return _padded_table([NO_MOVE.encode("ascii"), *texts]), _padded_table([b"", *(b" " + text for text in texts)])

    def fields(self, order: np.ndarray) -> list[np.ndarray]:
        """The notation of the rows ``order`` as ``uint8[len(order), w]`` blocks of ASCII, one per word (after
        a space from the second on), each padded with NUL bytes to its own width: the blocks side by side,
        with the NUL bytes deleted, are the strings of ``strings()``."""
        first, later = self._tables()
        blocks = []
        for slot, words in enumerate(self.words):
            table, table_lengths = first if slot == 0 else later
            words = words[order]
            present = np.zeros(len(table), dtype=bool)
            present[words] = True
            width = int(table_lengths[present].max(initial=0))
            if width:  # a slot no row uses writes nothing
                blocks.append(table[:, :width][words])
        return blocks


def _padded_table(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``(uint8[len(texts), width], lengths int64[len(texts)])``: each text left-aligned and padded with NUL
    bytes to the longest, and its length."""
    width = max(map(len, texts), default=0)
    table = np.frombuffer(b"".join(text.ljust(width, b"\0") for text in texts), dtype=np.uint8)
    return table.reshape(len(texts), width), np.array([len(text) for text in texts], dtype=np.int64)


def _numbered_words(tokens: np.ndarray) -> PlayWords:
    """``PlayWords`` of ``tokens int64[S, N]`` (0 for none, no 0 before a token in a column)."""
    simple = tokens >> _TOKEN_TAIL_BITS << 4 | tokens & 15
    inner = (tokens >> 7) & 3 > 0
    complex_values, complex_numbers = np.unique(tokens[inner], return_inverse=True)
    ids = simple
    ids[inner] = _SIMPLE_TOKENS + complex_numbers.reshape(-1)
    present = np.zeros(_SIMPLE_TOKENS + len(complex_values), dtype=bool)
    present[ids] = True
    # Number 0 is "no word" even where every row fills every slot (two checkers entering from the hand,
    # say): without it the first word would take number 0 and be written as nothing.
    present[0] = True
    used = np.flatnonzero(present)
    simple_used = used[used < _SIMPLE_TOKENS]
    values = [*((simple_used >> 4 << _TOKEN_TAIL_BITS | simple_used & 15).tolist()), *complex_values.tolist()]
    texts = [_token_text_of(value) for value in values]
    order = sorted(range(len(texts)), key=texts.__getitem__)  # "" (no token) first
    number = np.zeros(len(present), dtype=np.int64)
    number[used[order]] = np.arange(len(order))
    return PlayWords(number[ids], [texts[index] for index in order])


def _compact(tokens: np.ndarray) -> np.ndarray:
    """``tokens int64[S, N]`` with each column's tokens moved up, in order, over the empty slots (0): a slot
    whose step continued an earlier path, or whose path was counted in an earlier one, is empty."""
    tokens = tokens.copy()
    for _ in range(len(tokens) - 1):  # each pass moves every token at least one empty slot up
        for slot in range(len(tokens) - 1):
            up = (tokens[slot] == 0) & (tokens[slot + 1] != 0)
            tokens[slot] = np.where(up, tokens[slot + 1], tokens[slot])
            tokens[slot + 1] = np.where(up, 0, tokens[slot + 1])
    return tokens


def _words_of_strings(strings: list[str]) -> PlayWords:
    """``PlayWords`` of whole notation strings (the scalar search's), split at their spaces."""
    rows = [[] if text == NO_MOVE else text.split(" ") for text in strings]
    texts = sorted({"", *(word for row in rows for word in row)})
    number = {text: index for index, text in enumerate(texts)}
    width = max([1, *map(len, rows)])  # one slot at least: a row without words is NO_MOVE
    words = np.zeros((width, len(rows)), dtype=np.int64)
    for column, row in enumerate(rows):
        words[: len(row), column] = [number[word] for word in row]
    return PlayWords(words, texts)


def play_words(board, dice, afterstates, rules: Rules = STANDARD) -> PlayWords:
    """The notation of every afterstate of ``engine.movegen.legal_afterstates(board, dice, rules)``, in its
    order, as ``PlayWords``; acey-deucey turns use the scalar search (``scalar_play_notations``)."""
    if rules.acey_deucey:
        global _scalar_rows
        _scalar_rows += afterstates.total
        return _words_of_strings(scalar_play_notations(board, dice, afterstates, rules))
    if afterstates.total == 0:
        return PlayWords(np.zeros((1, 0), dtype=np.int64), [""])
    net, hits = differences(board, afterstates)
    rolls = np.ascontiguousarray(dice.cpu().numpy().T.astype(np.int64)).take(afterstates.position.cpu().numpy(), axis=1)
    doubles = rolls[0] == rolls[1]
    tokens = np.zeros((_MAX_STEPS if doubles.any() else 2, net.shape[1]), dtype=np.int64)
    # Columns by ``take``: ``net[:, rows]`` is laid out column-major, and every row operation on it strided.
    if doubles.any():
        rows = np.flatnonzero(doubles)
        steps = _double_steps(net.take(rows, axis=1), rolls[0, rows])
        tokens[:, rows] = _compact(_tokens(*steps, hits[rows]))
    if not doubles.all():  # at most two steps: the loops over steps and paths stop at two
        rows = np.flatnonzero(~doubles)
        steps = _two_die_steps(net.take(rows, axis=1), hits[rows], rolls.take(rows, axis=1))
        # Two steps leave no empty slot before a token: the first step starts the first path.
        tokens[:2, rows] = _tokens(*steps, hits[rows])
    return _numbered_words(tokens)


def batch_play_notations(board, dice, afterstates, rules: Rules = STANDARD) -> list[str]:
    """The notation of every afterstate of ``engine.movegen.legal_afterstates(board, dice, rules)``, in its
    order: ``board int8[B, 28]``, ``dice int8[B, 2]`` -> ``list[str]`` of length ``afterstates.total``.

    The same strings as ``engine.notation.play_notation``; acey-deucey uses the scalar search
    (``scalar_play_notations``)."""
    return play_words(board, dice, afterstates, rules).strings()
