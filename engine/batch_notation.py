"""Move notation for whole batches of afterstates, on tensors: the strings of ``engine.notation``'s
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
``*`` marks follow gnubg's rules, all in fixed loops of tensor operations over the batch; each path
becomes one integer *token* (its points, marks and count), and Python joins the cached text of each
distinct row's tokens once. Tested string for string against ``engine.notation.scalar_play_notations``
on every variant. Acey-deucey turns mix dice values (the 1-2, then a chosen double) and keep the scalar
search.
"""

from __future__ import annotations

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


def differences(board: torch.Tensor, afterstates) -> tuple[torch.Tensor, torch.Tensor]:
    """``(net int64[N, 26], hit bool[N, 26])``: each afterstate's change of the mover's checkers per node
    (off, points, bar and hand) and the nodes (points 1..24 only) where an opponent blot was hit."""
    before = board.to(afterstates.boards.device)[afterstates.position].to(torch.int64)
    after = afterstates.boards.to(torch.int64)
    net = torch.zeros(after.shape[0], _NODES, dtype=torch.int64, device=after.device)
    net[:, 1:25] = after[:, 1:25].clamp(min=0) - before[:, 1:25].clamp(min=0)
    net[:, 25] = after[:, 25] + after[:, 26] - before[:, 25] - before[:, 26]
    net[:, 0] = -net[:, 1:].sum(-1)
    hit = torch.zeros(after.shape[0], _NODES, dtype=torch.bool, device=after.device)
    hit[:, 1:25] = (before[:, 1:25] == -1) & (after[:, 1:25] != -1)
    return net, hit


def _units_from_top(counts: torch.Tensor, top: int, units: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(node int64[N, units], present bool[N, units])``: the node of the k-th unit of ``counts`` (nodes
    ``top`` down to 0 of ``counts int64[N, top + 1]``, each node repeated as often as it counts)."""
    cumulative = counts.flip(1).cumsum(1)  # column i is node top - i
    rank = torch.arange(units, device=counts.device)
    node = top - (cumulative.unsqueeze(1) <= rank.view(1, -1, 1)).sum(-1)
    return node, cumulative[:, -1:] > rank


def _double_steps(net: torch.Tensor, die: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sources and destinations ``int64[N, 4]`` (-1 past the last step) of doubles of ``die int64[N]``:
    from the bar down, what arrives from p + d, less what stays at p, leaves p."""
    rows = net.shape[0]
    leaving = torch.zeros(rows, _NODES + 6, dtype=torch.int64, device=net.device)  # nodes past 25 stay 0
    for point in range(_BAR_NODE, 0, -1):
        arriving = leaving.gather(1, (point + die).unsqueeze(1)).squeeze(1)
        leaving[:, point] = arriving - net[:, point]
    counts = leaving[:, : _BAR_NODE + 1].clone()
    counts[:, 0] = 0
    source, present = _units_from_top(counts, _BAR_NODE, _MAX_STEPS)
    target = (source - die.unsqueeze(1)).clamp(min=0)
    return torch.where(present, source, _NONE), torch.where(present, target, _NONE)


def _fits(source: torch.Tensor, target: torch.Tensor, die: torch.Tensor) -> torch.Tensor:
    return target == (source - die).clamp(min=0)


def _two_die_steps(net, hit, dice) -> tuple[torch.Tensor, torch.Tensor]:
    """Sources and destinations ``int64[N, 2]`` (-1 past the last step) of rolls of two different dice."""
    rows = net.shape[0]
    leaving = (-net).clamp(min=0)
    leaving[:, 0] = 0
    arriving = net[:, :_BAR_NODE].clamp(min=0)
    sources, _ = _units_from_top(leaving, _BAR_NODE, 2)
    targets, _ = _units_from_top(arriving, _BAR_NODE - 1, 2)
    movers = leaving.sum(1)
    high, low = dice[:, 0], dice[:, 1]
    source = torch.full((rows, 2), _NONE, dtype=torch.int64, device=net.device)
    target = source.clone()

    # One node loses a checker: one checker moved, once or through s - d1 or s - d2 (written if hit).
    start, end = sources[:, 0], targets[:, 0]
    through = torch.full_like(start, _NONE)
    for die in (low, high):  # the first that fits wins; only the actual path can hold a hit
        middle = start - die
        hit_there = hit.gather(1, middle.clamp(min=0).unsqueeze(1)).squeeze(1)
        through = torch.where((through < 0) & (middle > end) & (middle >= 1) & hit_there, middle, through)
    one = movers == 1
    twice = one & (through >= 0)
    source[:, 0] = torch.where(one, start, source[:, 0])
    target[:, 0] = torch.where(twice, through, torch.where(one, end, target[:, 0]))
    source[:, 1] = torch.where(twice, through, source[:, 1])
    target[:, 1] = torch.where(twice, end, target[:, 1])

    # Two nodes (or one node twice) lose a checker: one step each; the pairing is the one the dice fit.
    first, second = sources[:, 0], sources[:, 1]
    near, far = targets[:, 0], targets[:, 1]
    straight = (_fits(first, near, high) & _fits(second, far, low)) | (
        _fits(first, near, low) & _fits(second, far, high))
    first_target = torch.where(straight, near, far)
    second_target = torch.where(straight, far, near)
    # Steps are written from the highest (source, destination) down.
    swap = (first == second) & (first_target < second_target)
    two = movers == 2
    source[:, 0] = torch.where(two, first, source[:, 0])
    source[:, 1] = torch.where(two, second, source[:, 1])
    target[:, 0] = torch.where(two, torch.where(swap, second_target, first_target), target[:, 0])
    target[:, 1] = torch.where(two, torch.where(swap, first_target, second_target), target[:, 1])
    return source, target


# A token is one written path: start and end node (5 bits each), up to three intermediate hit points
# (5 bits each, in order), how many there are, the marks of those and of the end, and the count.
_INNER_BITS = 15


def _pack_token(start, end, inner, inner_count, inner_marks, end_mark, count):
    return (((((start * 32 + end) << _INNER_BITS | inner) * 4 + inner_count) * 8 + inner_marks) * 2
            + end_mark) * 8 + count


def _tokens(source: torch.Tensor, target: torch.Tensor, hit: torch.Tensor) -> torch.Tensor:
    """``int64[N, S]``: the tokens of each play of at most ``S`` steps (``source``, ``target``: ``int64[N, S]``,
    -1 past the last step) in written order, 0 past the last.

    gnubg's rules (see ``engine.notation``): each step, from the highest source down, continues the first
    path that ends where it starts, else starts a path; an intermediate point is kept only where a blot
    was hit; identical paths are written once with their count, in order of first appearance; a hit
    point is marked ``*`` where it is first written."""
    rows, steps = source.shape
    device = source.device
    zeros = torch.zeros(rows, steps, dtype=torch.int64, device=device)
    start, end = zeros - 1, zeros - 1
    inner, inner_count = zeros.clone(), zeros.clone()
    paths = torch.zeros(rows, dtype=torch.int64, device=device)
    for step in range(steps):
        origin, destination = source[:, step], target[:, step]
        active = origin >= 0
        matches = (end == origin.unsqueeze(1)) & active.unsqueeze(1)
        continues = matches.any(1)
        chosen = matches.to(torch.int8).argmax(1)
        passed_hit = hit.gather(1, origin.clamp(min=0).unsqueeze(1)).squeeze(1)
        for path in range(step + 1):  # a step continues or starts one of the paths so far
            extend = active & continues & (chosen == path)
            keep = extend & passed_hit
            inner[:, path] = torch.where(keep, inner[:, path] * 32 + origin, inner[:, path])
            inner_count[:, path] += keep.to(torch.int64)
            fresh = active & ~continues & (paths == path)
            start[:, path] = torch.where(fresh, origin, start[:, path])
            end[:, path] = torch.where(extend | fresh, destination, end[:, path])
        paths += (active & ~continues).to(torch.int64)

    # Identical paths: counted at their first appearance.
    present = start >= 0
    identity = (start * 32 + end) << _INNER_BITS | inner
    count = present.to(torch.int64)
    for later in range(1, steps):
        for earlier in range(later):
            same = present[:, later] & (count[:, later] > 0) & (count[:, earlier] > 0) & (
                identity[:, earlier] == identity[:, later])
            count[:, earlier] += same.to(torch.int64)
            count[:, later] = torch.where(same, 0, count[:, later])

    # Marks where each hit point is first written: the kept points of each path, then its end.
    marked = torch.zeros(rows, _NODES, dtype=torch.bool, device=device)
    tokens = zeros.clone()
    row_index = torch.arange(rows, device=device)
    for path in range(steps):
        written = count[:, path] > 0
        inner_marks = torch.zeros(rows, dtype=torch.int64, device=device)
        for position in range(steps - 1):  # a path of k steps keeps at most k - 1 points
            exists = written & (inner_count[:, path] > position)
            shift = (inner_count[:, path] - 1 - position).clamp(min=0) * 5
            point = (inner[:, path] >> shift) & 31
            fresh = exists & ~marked[row_index, point]  # kept points are hit points
            inner_marks |= fresh.to(torch.int64) << position
            marked[row_index, point] |= fresh
        finish = end[:, path].clamp(min=0)
        end_mark = written & hit[row_index, finish] & ~marked[row_index, finish]
        marked[row_index, finish] |= end_mark
        token = _pack_token(start[:, path].clamp(min=0), finish, inner[:, path], inner_count[:, path],
                            inner_marks, end_mark.to(torch.int64), count[:, path])
        tokens[:, path] = torch.where(written, token, 0)
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


def _play_texts(rows: list[list[int]]) -> list[str]:
    if len(_token_texts) > _CACHE_LIMIT:
        _token_texts.clear()
    texts = []
    for tokens in rows:
        words = []
        for token in tokens:
            if token:
                text = _token_texts.get(token)
                if text is None:
                    text = _token_texts[token] = _token_text(token)
                words.append(text)
        texts.append(" ".join(words) if words else NO_MOVE)
    return texts


def distinct_play_notations(board, dice, afterstates, rules: Rules = STANDARD) -> tuple[list[str], torch.Tensor]:
    """``(texts, index int64[N])``: the distinct notations of the afterstates of
    ``engine.movegen.legal_afterstates(board, dice, rules)`` and, for each afterstate in its order, the
    position of its notation in ``texts`` (so callers can work per distinct play)."""
    if rules.acey_deucey:
        global _scalar_rows
        _scalar_rows += afterstates.total
        texts = scalar_play_notations(board, dice, afterstates, rules)
        distinct = list(dict.fromkeys(texts))
        where = {text: index for index, text in enumerate(distinct)}
        return distinct, torch.tensor([where[text] for text in texts], dtype=torch.int64)
    if afterstates.total == 0:
        return [], torch.zeros(0, dtype=torch.int64)
    net, hit = differences(board, afterstates)
    rolls = dice.to(net.device)[afterstates.position].to(torch.int64)
    doubles = rolls[:, 0] == rolls[:, 1]
    tokens = torch.zeros(net.shape[0], _MAX_STEPS, dtype=torch.int64, device=net.device)
    if doubles.any():
        rows = doubles.nonzero().squeeze(1)
        tokens[rows] = _tokens(*_double_steps(net[rows], rolls[rows, 0]), hit[rows])
    if not doubles.all():  # at most two steps: the loops over steps and paths stop at two
        rows = (~doubles).nonzero().squeeze(1)
        tokens[rows, :2] = _tokens(*_two_die_steps(net[rows], hit[rows], rolls[rows]), hit[rows])
    tokens = tokens.cpu()
    distinct, index = _distinct_rows(tokens)
    return _play_texts(distinct.tolist()), index


def _distinct_rows(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.unique(tokens, dim=0, return_inverse=True)``, faster: the tokens are numbered first, and a
    row of four numbers becomes one integer to sort when they fit (``unique`` by rows sorts row by row)."""
    values, numbers = torch.unique(tokens, return_inverse=True)
    base = values.shape[0]
    if base**_MAX_STEPS >= 1 << 62:
        return torch.unique(tokens, dim=0, return_inverse=True)
    key = numbers[:, 0]
    for column in range(1, _MAX_STEPS):
        key = key * base + numbers[:, column]
    keys, index = torch.unique(key, return_inverse=True)
    digits = torch.empty(keys.shape[0], _MAX_STEPS, dtype=torch.int64)
    for column in range(_MAX_STEPS - 1, -1, -1):
        digits[:, column] = keys % base
        keys = keys // base
    return values[digits], index


def batch_play_notations(board, dice, afterstates, rules: Rules = STANDARD) -> list[str]:
    """The notation of every afterstate of ``engine.movegen.legal_afterstates(board, dice, rules)``, in its
    order: ``board int8[B, 28]``, ``dice int8[B, 2]`` -> ``list[str]`` of length ``afterstates.total``.

    The same strings as ``engine.notation.play_notation``; acey-deucey uses the scalar search
    (``scalar_play_notations``)."""
    texts, index = distinct_play_notations(board, dice, afterstates, rules)
    return [texts[position] for position in index.tolist()]
