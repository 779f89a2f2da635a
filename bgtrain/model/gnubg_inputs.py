"""GNU Backgammon's hand-crafted contact inputs, batched: ``int8[B, 28]`` -> ``float32[B, 50]``.

GNU Backgammon's contact and crashed networks (``eval.c``, the ``I_OFF1 .. I_BACKRESCAPES`` inputs)
see, besides the raw points, 25 features per side in the spirit of Berliner's BKG. This module
computes them for whole batches with tensor operations only (comparisons, ``where``, gathers with
precomputed index tables, reductions and small float matrix products; no Python branch on a tensor
value), so the same code runs inside an exported ONNX graph and gives there exactly what the encoder
gives (``bgtrain.export.graph``). Every count is a small integer held exactly in float32. Two steps
of the shot counting take a faster way in eager torch, with the same numbers: each way to hit's
hitters are found on bit masks of the points (``_hitters_by_masks``; traced for an export, the float
matrix product ``_hitters_by_matrix``, as ONNX has no bit operations at opset 17), and the shots of a
side with one checker on the bar are worked out only for the rows that have one.

The features of one side ("us"), in our words (``half_features``):

==================  ==================================================================================
feature             meaning
==================  ==================================================================================
off1, off2, off3    checkers we have borne off, n, as three ramps: min(n, 5) / 5, clamp(n - 5, 0, 5) / 5,
                    max(n - 10, 0) / 5
break_contact       pips our checkers must travel until every one is past the opponent's rearmost
                    checker, / 167
back_checker        our rearmost checker's index (point - 1; 24 on the bar) / 24
back_anchor         our rearmost made point's index (at or in front of the rearmost checker) / 24
forward_anchor      our most advanced anchor in the opponent's home board (else the most advanced of
                    its points 7..12), as its point number in the opponent's numbering / 6; 2 if none
pip_loss            pips the opponent loses to our hits, summed over the 36 rolls (best hit per roll)
                    / (12 * 36), from GNU's shot-counting heuristics (``_shots``)
p1, p2              rolls of 36 that hit at least one / at least two of the opponent's checkers / 36
back_escapes        rolls of 36 with which the opponent's rearmost checker jumps our points ahead of it
                    (landing free, one of the two intermediate points free) / 36
acontain            1 - (fewest such escaping rolls of an opponent checker anywhere from our 9-point
                    back to the opponent's rearmost checker) / 36; ``acontain2`` its square
contain             the same from our 9-point to our 1-point whatever the opponent holds; ``contain2``
mobility            sum over our checkers outside our home board of (their point - 6) x (rolls that let
                    them jump the opponent's points ahead) / 3600
moment2             one-sided second moment of our checkers behind their (rounded-up) mean point / 400
enter               pips we lose on average to closed entering points while on the bar / (36 * 49 / 6)
enter2              1 - (points the opponent has not made in its home board) ** 2 / 36
timing              pips we can still play without breaking our home-board points (GNU's ``I_TIMING``
                    recipe) / 100
backbone            1 - (closeness of our made points behind our rearmost anchor, 11 for a gap of up to
                    6 pips, falling to 0 beyond 11) / 11, averaged; 0 with fewer than two made points
backg, backg1       back-game holdings: with two or more anchors in the opponent's home board,
                    (our checkers there and on the bar - 3) / 4; with exactly one, that count / 8
free_pip            pips of our checkers already past every opponent checker / 100
back_rescapes       like ``back_escapes`` but a roll only counts if it also moves past the first of our
                    points ahead of that checker
==================  ==================================================================================

Where GNU's code reads a neighbouring array cell that the rule it states does not describe (the
entering die of a double and the intermediate blot of an indirect shot from the bar, in
``CalculateHalfInputs``), this module follows the stated rule; everything else follows GNU's
definitions, including its quirks (blots on our 1- and 2-points are not counted as targets unless
we hold at least three home-board points; a home-board point of exactly two checkers is not broken
to hit). ``tests/test_gnubg_inputs.py`` works out each feature by hand on drawn boards and checks the
shot counting against a slow scalar reference on random positions.
"""

from __future__ import annotations

import functools

import torch

from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND, flip_board
from engine.dice import ALL_ROLLS
from engine.escapes import escape_tables as engine_escape_tables

FEATURES = (
    "off1", "off2", "off3", "break_contact", "back_checker", "back_anchor", "forward_anchor",
    "pip_loss", "p1", "p2", "back_escapes", "acontain", "acontain2", "contain", "contain2", "mobility",
    "moment2", "enter", "enter2", "timing", "backbone", "backg", "backg1", "free_pip", "back_rescapes",
)
HALF_SIZE = len(FEATURES)  # 25 per side

ROLLS = ALL_ROLLS  # the 21 rolls, larger die first


def side_counts(board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """GNU's half-board view: ``(ours, theirs)``, each ``float32[B, 25]``, index i = the side's own point
    i + 1 and index 24 its bar (checkers in hand, in the variants that have them, wait there too)."""
    b = board.to(torch.float32)
    ours = torch.cat((torch.relu(b[:, 1:25]), (b[:, MOVER_BAR] + b[:, MOVER_IN_HAND]).unsqueeze(1)), dim=1)
    # The opponent's point j is our point 25 - j: columns 24 down to 1.
    theirs = torch.cat((torch.relu(-b[:, 1:25]).flip(1), -(b[:, OPPONENT_BAR] + b[:, OPPONENT_IN_HAND]).unsqueeze(1)),
                       dim=1)
    return ours, theirs


def contact_features(board: torch.Tensor, checkers_per_side: int = 15) -> torch.Tensor:
    """``int8[B, 28]`` -> ``float32[B, 50]``: ``half_features`` of the side to move, then of the opponent."""
    ours, theirs = side_counts(board)
    return torch.cat((half_features(ours, theirs, checkers_per_side),
                      half_features(theirs, ours, checkers_per_side)), dim=1)


def contact_features_of_flipped(board: torch.Tensor, checkers_per_side: int = 15) -> torch.Tensor:
    """``contact_features(flip_board(board))``."""
    return contact_features(flip_board(board), checkers_per_side)


# ---------------------------------------------------------------------------------------------------
# Tables, built once per device.


@functools.cache
def escape_tables(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(escapes, escapes_past_first)``, ``float32[4096]`` each: ``engine.escapes.escape_tables`` (GNU's
    ``anEscapes`` and ``anEscapes1``) as floats for the matrix products below."""
    return tuple(table.to(torch.float32) for table in engine_escape_tables(device))


@functools.cache
def _pattern_weights(device: torch.device) -> torch.Tensor:
    """``float32[25, 25]``: ``blocked @ W`` gives, for a checker at each index n (0..24) moving down, the
    escape pattern of the up to 12 points ahead of it (bit k <- index n - 1 - k)."""
    weights = torch.zeros(25, 25)
    for start in range(25):
        for k in range(min(start, 12)):
            weights[start - 1 - k, start] = 2.0 ** k
    return weights.to(device)


def _escapes(blocked: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """``blocked: float32[B, 25]`` (1 where the other side holds the point, in the mover's indices) ->
    ``float32[B, 25]``: escaping rolls of a checker at each index."""
    patterns = blocked @ _pattern_weights(blocked.device)
    return table[patterns.to(torch.int64)]


class _Ways:
    """GNU's ways to hit: every distinct (distance, dice used, intermediate landing points, whether all
    are needed) that one of the 21 rolls offers, and each roll's ways in order (slot 0 and 1 the single
    dice or 1 and 2 steps of a double, then the rest), as index tables."""

    def __init__(self, device: torch.device):
        ways: list[tuple[int, int, tuple[int, ...], bool]] = []  # (distance, faces, intermediates, all needed)
        roll_ways = []
        for high, low in ROLLS:
            if high == low:
                options = [(high * steps, steps, tuple(high * s for s in range(1, steps)), True) for steps in (1, 2, 3, 4)]
            else:
                options = [(high, 1, (), True), (low, 1, (), True), (high + low, 2, (high, low), False)]
            slots = []
            for option in options:
                if option not in ways:
                    ways.append(option)
                slots.append(ways.index(option))
            roll_ways.append(slots)
        none = len(ways)  # a padding way that never hits
        self.count = none + 1
        self.distance = torch.tensor([w[0] for w in ways] + [99], device=device, dtype=torch.float32)
        distance = torch.tensor([w[0] for w in ways] + [99])
        # The hit test of every (way, hitter index) pair as one matrix product (fast in BLAS, exportable):
        # with x = [target blots, blocked points, hitters, 1] of a board (float32[B, 76]), column
        # way * 25 + hitter of ``x @ hit_test`` is t - n / m + 2 h - 2, where t is 1 for an opponent blot
        # at the target, n counts blocked intermediate landing points, m is how many blocked ones stop
        # the way (1 for a double, which needs every one; 2 for two dice, which need either) and h is 1
        # for a hitter on the source. It is > 0 exactly when the pair hits (t = 1, n < m, h = 1), and a
        # multiple of 1/2 otherwise <= 0. Pairs without a target (hitter closer than the distance) stay
        # at t = 0.
        hit_test = torch.zeros(76, self.count * 25)
        for index, way in enumerate(ways):
            stops = 1.0 if way[3] else 2.0
            for source in range(25):
                column = index * 25 + source
                hit_test[50 + source, column] = 2.0
                hit_test[75, column] = -2.0
                if source < way[0]:
                    continue
                hit_test[source - way[0], column] = 1.0
                for pips in way[2]:
                    hit_test[25 + source - pips, column] -= 1.0 / stops
        for source in range(25):
            hit_test[50 + source, len(ways) * 25 + source] = 2.0
            hit_test[75, len(ways) * 25 + source] = -2.0
        self.hit_test = hit_test.to(device)
        # The same test on 25-bit masks of the points (bit i: index i), for eager torch: multiplying a
        # mask by 2 ** k moves every point k pips back, so bit s of (targets * 2 ** d) is a target d
        # pips in front of s, and of (blocked * 2 ** p) a blocked point p pips in front of s.
        self.target_scale = torch.tensor([2 ** w[0] for w in ways] + [0], device=device)
        self.intermediate_scale = torch.tensor(
            [[2 ** pips for pips in w[2]] + [0] * (3 - len(w[2])) for w in ways] + [[0, 0, 0]], device=device
        )  # [W, 3], 0 for no intermediate point
        self.every_one_needed = torch.tensor([w[3] for w in ways] + [True], device=device)
        slots = torch.full((len(ROLLS), 4), none, dtype=torch.long)
        for roll, listed in enumerate(roll_ways):
            slots[roll, : len(listed)] = torch.tensor(listed)
        self.slot_way = slots.to(device)  # [21, 4]
        faces = torch.tensor([w[1] for w in ways] + [0])
        self.slot_direct = (faces[slots] == 1).to(device)
        self.slot_distance = distance[slots].to(device=device, dtype=torch.float32)
        # Intermediate landing points of each slot's way, as pips from the hitter (0 = none).
        slot_inter = torch.zeros(len(ROLLS), 4, 3, dtype=torch.long)
        for roll, listed in enumerate(roll_ways):
            for slot, way in enumerate(listed):
                for k, pips in enumerate(ways[way][2]):
                    slot_inter[roll, slot, k] = pips
        self.slot_inter = slot_inter.to(device)
        self.double = torch.tensor([high == low for high, low in ROLLS], device=device)
        # The die a checker on the bar enters with when the other die (or step) of the roll hits.
        self.slot_other_die = torch.tensor(
            [[low, high, 0, 0] if high != low else [high, 0, 0, 0] for high, low in ROLLS], device=device
        )
        self.roll_weight = torch.where(self.double, 1.0, 2.0)


@functools.cache
def _ways(device: torch.device) -> _Ways:
    return _Ways(device)


# ---------------------------------------------------------------------------------------------------
# The features.


def half_features(ours: torch.Tensor, theirs: torch.Tensor, checkers_per_side: int = 15) -> torch.Tensor:
    """``FEATURES`` of the side ``ours`` against ``theirs`` (``side_counts`` layout, ``float32[B, 25]``
    each): ``float32[B, 25]``."""
    device = ours.device
    index = torch.arange(25, device=device, dtype=torch.float32)
    plain, past_first = escape_tables(device)

    # The opponent's rearmost checker, in its own indices (-1: none left), and in ours.
    their_back = torch.where(theirs > 0, index, -1.0).amax(1)
    their_back_ours = 23.0 - their_back  # our index of that checker (24 when there is none)
    behind = index > their_back_ours.unsqueeze(1)  # our checkers not yet past it

    off = torch.relu(checkers_per_side - ours.sum(1))
    off1 = torch.clamp(off, max=5.0) / 5.0
    off2 = torch.clamp(off - 5.0, min=0.0, max=5.0) / 5.0
    off3 = torch.relu(off - 10.0) / 5.0
    break_contact = (ours * (index + 1.0 - their_back_ours.unsqueeze(1)) * behind).sum(1) / 167.0
    free_pip = (ours * (index + 1.0) * (index < their_back_ours.unsqueeze(1))).sum(1) / 100.0

    made = ours >= 2
    back = torch.where(ours > 0, index, -1.0).amax(1)
    anchor_limit = torch.clamp(back, max=23.0)
    back_anchor = torch.where(made & (index <= anchor_limit.unsqueeze(1)), index, -1.0).amax(1)
    # Forward anchor: the lowest made index in 18 .. back_anchor, else the highest made in 12 .. 17.
    in_home = made & (index >= 18) & (index <= back_anchor.unsqueeze(1))
    home_anchor = torch.where(in_home, index, 99.0).amin(1)
    outer_anchor = torch.where(made & (index >= 12) & (index <= 17), index, -1.0).amax(1)
    forward = torch.where(home_anchor < 99, 24.0 - home_anchor, torch.where(outer_anchor >= 0, 24.0 - outer_anchor, 0.0))
    forward_anchor = torch.where(forward > 0, forward / 6.0, 2.0)

    pip_loss, p1, p2 = _shots(ours, theirs)

    # Escapes of the opponent's checkers through our points, by their own index n (our index 23 - n).
    # Our made points in the opponent's indices (its index n is our 23 - n).
    our_blocks = torch.cat((made[:, :24].flip(1), torch.zeros_like(made[:, :1])), 1).to(torch.float32)
    their_escapes = _escapes(our_blocks, plain)
    their_escapes_past = _escapes(our_blocks, past_first)
    at_back = their_back.clamp(min=0).to(torch.int64).unsqueeze(1)
    back_escapes = torch.where(their_back >= 0, their_escapes.gather(1, at_back).squeeze(1), 36.0) / 36.0
    back_rescapes = torch.where(their_back >= 0, their_escapes_past.gather(1, at_back).squeeze(1), 0.0) / 36.0
    window = (index >= 15) & (index <= 23)
    acontain = 1.0 - torch.where(window & (index <= their_back.unsqueeze(1)), their_escapes, 36.0).amin(1) / 36.0
    contain = 1.0 - torch.where(window, their_escapes, 36.0).amin(1) / 36.0

    # Our checkers' escapes through the opponent's points (its index j is our 23 - j).
    their_blocks = torch.cat(((theirs[:, :24] >= 2).flip(1), torch.zeros_like(theirs[:, :1], dtype=torch.bool)), 1)
    our_escapes = _escapes(their_blocks.to(torch.float32), plain)
    mobility = (ours * torch.relu(index - 5.0) * our_escapes).sum(1) / 3600.0

    count = ours.sum(1)
    mean = torch.ceil((ours * index).sum(1) / count.clamp(min=1.0))
    ahead = index > mean.unsqueeze(1)
    ahead_count = (ours * ahead).sum(1)
    spread = (ours * ahead * (index - mean.unsqueeze(1)) ** 2).sum(1)
    moment2 = torch.ceil(spread / ahead_count.clamp(min=1.0)) / 400.0

    closed = (theirs[:, :6] >= 2).to(torch.float32)  # their home points, where we enter with die i + 1
    enter = _entering_loss(closed, ours[:, 24])
    enter2 = (36.0 - (closed.sum(1) - 6.0) ** 2) / 36.0

    timing = _timing(ours, their_back_ours)
    backbone = _backbone(made, index)
    anchors = (made & (index >= 18) & (index <= 23)).sum(1)
    back_game_checkers = (ours * (index >= 18)).sum(1)
    backg = torch.where(anchors > 1, (back_game_checkers - 3.0) / 4.0, 0.0)
    backg1 = torch.where(anchors == 1, back_game_checkers / 8.0, 0.0)

    return torch.stack((
        off1, off2, off3, break_contact, back / 24.0, back_anchor / 24.0, forward_anchor,
        pip_loss, p1, p2, back_escapes, acontain, acontain ** 2, contain, contain ** 2, mobility,
        moment2, enter, enter2, timing, backbone, backg, backg1, free_pip, back_rescapes,
    ), dim=1)


def _entering_loss(closed: torch.Tensor, on_bar: torch.Tensor) -> torch.Tensor:
    """Pips lost over the 36 rolls to closed entering points, with ``closed: float32[B, 6]`` (die i + 1
    blocked) and ``on_bar: float32[B]`` checkers: each double of a closed number loses its 4 steps; a
    roll of two closed numbers loses both dice; with two or more on the bar a roll of one closed number
    loses that die."""
    pips = torch.arange(1, 7, device=closed.device, dtype=torch.float32)
    upper = torch.triu(torch.ones(6, 6, device=closed.device), diagonal=1)  # pairs i < j
    doubles = (closed * 4.0 * pips).sum(1)
    both = ((closed.unsqueeze(2) * closed.unsqueeze(1)) * (pips[:, None] + pips[None, :]) * upper).sum((1, 2))
    one = ((closed.unsqueeze(2) * (1.0 - closed.unsqueeze(1)) * pips[:, None]
            + (1.0 - closed.unsqueeze(2)) * closed.unsqueeze(1) * pips[None, :]) * upper).sum((1, 2))
    loss = doubles + 2.0 * both + torch.where(on_bar > 1, 2.0 * one, 0.0)
    return torch.where(on_bar > 0, loss, 0.0) / (36.0 * 49.0 / 6.0)


def _timing(ours: torch.Tensor, their_back_ours: torch.Tensor) -> torch.Tensor:
    """GNU's ``I_TIMING`` / 100: pips of the checkers free to move. Checkers on the bar count fully; on
    our points beyond max(the opponent's rearmost checker, index 11) a made point keeps two (a blot
    counts as one); from there down to index 6 every checker counts; then from index 5 down to 0 each
    home point's spares beyond two add their pips and a point short of two takes the checkers it lacks
    (their pips subtracted) while enough free checkers remain. Never below 0."""
    index = torch.arange(25, device=ours.device, dtype=torch.float32)
    limit = torch.clamp(their_back_ours, min=11.0).unsqueeze(1)
    outfield = (index > limit) & (index <= 23)
    middle = (index >= 6) & (index <= limit) & (index <= 23)
    kept = torch.where(ours > 2, ours - 2.0, torch.where(ours == 1, 1.0, 0.0))
    counted = torch.where(outfield, kept, torch.where(middle, ours, 0.0))
    counted = counted + torch.where(index == 24, ours, 0.0)
    pips = (counted * index).sum(1)
    free = counted.sum(1)
    for point in range(5, -1, -1):
        here = ours[:, point]
        spare = torch.relu(here - 2.0)
        lack = torch.relu(2.0 - here)
        fills = (lack > 0) & (free >= lack)
        pips = pips + point * spare - torch.where(fills, point * lack, 0.0)
        free = free + spare - torch.where(fills, lack, 0.0)
    return torch.relu(pips) / 100.0


def _backbone(made: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """1 - mean closeness / 11 of our made points on indices 1..22 behind the rearmost made point of
    indices 1..23 (closeness 11 for a gap of at most 6 pips, 13 - gap up to 11, 0 beyond); 0 when there
    is no such pair."""
    candidate = made & (index >= 1) & (index <= 23)
    top = torch.where(candidate, index, -1.0).amax(1, keepdim=True)
    others = candidate & (index < top)
    gap = top - index
    closeness = torch.where(gap <= 6, 11.0, torch.where(gap <= 11, 13.0 - gap, 0.0))
    pairs = others.sum(1)
    total = (closeness * others).sum(1)
    return torch.where(pairs > 0, 1.0 - total / (pairs.clamp(min=1) * 11.0), 0.0)


def _shots(ours: torch.Tensor, theirs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GNU's hitting heuristics: ``(pip_loss, p1, p2)``, ``float32[B]`` each.

    Targets: the opponent's blots on our indices 0..23 (only 2..23 unless we occupy three or more of our
    home points). Hitters: our checkers that can reach a target with a way to hit (a single die, or a
    combination whose intermediate landing points are open: one of the two for two dice, every one for
    a double), not taken from a home point of exactly two. Per roll, with none of ours on the bar: each
    direct way counts a hit (from its rearmost hitter; once more for a double that reaches a second
    target) and each combination counts at least one hit, plus one when a blot sits on its path.
    With one on the bar, hits from the bar count, and one direct hit from a point counts only if the
    other die enters and no earlier way of the roll already needed it to; combinations count from the
    bar only. With two or more on the bar, only single dice from the bar count. A roll's pip loss is
    the largest point number (our numbering) of a blot it hits.
    """
    ways = _ways(ours.device)
    batch = ours.shape[0]
    index25 = torch.arange(25, device=ours.device)
    blocked = torch.cat(((theirs[:, :24] >= 2).flip(1), torch.zeros_like(theirs[:, :1], dtype=torch.bool)), 1)
    blot = torch.cat(((theirs[:, :24] == 1).flip(1), torch.zeros_like(theirs[:, :1], dtype=torch.bool)), 1)
    home_points = (ours[:, :6] > 0).sum(1)

    hitter = (ours > 0) & ~((index25 < 6) & (ours == 2))
    # Blots on our 1- and 2-points (indices 0, 1) are no targets with fewer than three home points.
    targets = blot & ((index25 >= 2) | (home_points > 2).unsqueeze(1))
    # A traced export takes the graph-friendly way (no bit operations in ONNX opset 17, no data-dependent
    # row selection); eager torch the fast one. Both give the same numbers.
    exporting = torch.jit.is_tracing() or torch.onnx.is_in_onnx_export()
    if exporting:
        rearmost, several, from_bar, rearmost_point = _hitters_by_matrix(ways, targets, blocked, hitter)
    else:
        rearmost, several, from_bar, rearmost_point = _hitters_by_masks(ways, targets, blocked, hitter)
    any_hit = rearmost >= 0

    def per_slot(values: torch.Tensor, slot: int) -> torch.Tensor:
        return _per_slot(ways, values, slot)

    zeros = torch.zeros(batch, len(ROLLS), device=ours.device)
    # None of ours on the bar.
    hits, pips, previous = zeros, zeros, zeros - 1.0
    for slot in range(4):
        active, source = per_slot(any_hit, slot), per_slot(rearmost, slot)
        distance = ways.slot_distance[:, slot]
        direct = ways.slot_direct[:, slot]
        stacked = ours.gather(1, source.clamp(min=0).to(torch.int64)) > 1
        direct_hits = hits + (active & ((previous != source) | stacked)) + (active & ways.double & per_slot(several, slot))
        on_path = _blots_on_path(blot, source, ways.slot_inter[:, slot])
        indirect_hits = torch.where(active & (hits == 0), 1.0, hits) + (active & on_path)
        hits = torch.where(direct, direct_hits, indirect_hits)
        previous = torch.where(direct & active, source, previous)
        pips = torch.maximum(pips, torch.where(active, source - distance + 1.0, 0.0))
    free = (hits, pips)

    # One of ours on the bar: in eager torch only the rows that have one (a few percent of them).
    if exporting:
        one_on_bar = _shots_with_one_on_bar(ways, blocked, blot, from_bar, rearmost_point)
    else:
        rows = (ours[:, 24] == 1).nonzero(as_tuple=True)[0]
        one_on_bar = (zeros.clone(), zeros.clone())
        if rows.numel():
            hits, pips = _shots_with_one_on_bar(ways, blocked[rows], blot[rows], from_bar[rows], rearmost_point[rows])
            one_on_bar[0][rows], one_on_bar[1][rows] = hits, pips

    # Two or more on the bar: single dice from the bar only.
    hits, pips = zeros, zeros
    for slot in range(2):
        bar = per_slot(from_bar, slot) & ways.slot_direct[:, slot]
        hits = hits + bar
        pips = torch.maximum(pips, torch.where(bar, 25.0 - ways.slot_distance[:, slot], 0.0))
    many_on_bar = (hits, pips)

    on_bar = ours[:, 24:25]
    hits = torch.where(on_bar == 0, free[0], torch.where(on_bar == 1, one_on_bar[0], many_on_bar[0]))
    pips = torch.where(on_bar == 0, free[1], torch.where(on_bar == 1, one_on_bar[1], many_on_bar[1]))
    weight = ways.roll_weight
    pip_loss = (pips * weight).sum(1) / (12.0 * 36.0)
    p1 = ((hits > 0) * weight).sum(1) / 36.0
    p2 = ((hits > 1) * weight).sum(1) / 36.0
    return pip_loss, p1, p2


def _per_slot(ways: _Ways, values: torch.Tensor, slot: int) -> torch.Tensor:
    """Per-way ``values: [B, W]`` -> ``[B, 21]``: each roll's way in ``slot``."""
    return values.index_select(1, ways.slot_way[:, slot])


def _shots_with_one_on_bar(ways: _Ways, blocked: torch.Tensor, blot: torch.Tensor, from_bar: torch.Tensor,
                           rearmost_point: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``_shots``' hits and pip losses per roll (``float32[B, 21]`` each) for a side with one checker on
    the bar: hits from the bar, and one direct hit from a point when the other die enters."""

    def per_slot(values: torch.Tensor, slot: int) -> torch.Tensor:
        return _per_slot(ways, values, slot)

    zeros = torch.zeros(blocked.shape[0], len(ROLLS), device=blocked.device)
    hits, pips, entered = zeros, zeros, torch.zeros_like(zeros, dtype=torch.bool)
    bar_source = torch.full_like(zeros, 24.0)
    for slot in range(4):
        distance = ways.slot_distance[:, slot]
        direct = ways.slot_direct[:, slot]
        bar = per_slot(from_bar, slot)
        other = ways.slot_other_die[:, slot]
        enters = ~blocked[:, (24 - other).clamp(min=0)] & (other > 0)
        point = per_slot(rearmost_point, slot)
        extra = (point >= 0) & ~entered & enters & direct
        direct_hits = hits + bar + extra
        on_path = _blots_on_path(blot, bar_source, ways.slot_inter[:, slot])
        indirect_hits = torch.where(bar & (hits == 0), 1.0, hits) + (bar & on_path)
        hits = torch.where(direct, direct_hits, indirect_hits)
        entered = entered | extra
        pips = torch.maximum(pips, torch.where(bar, 25.0 - distance, 0.0))
        pips = torch.maximum(pips, torch.where(extra, point - distance + 1.0, 0.0))
    return hits, pips


def _hitters_by_matrix(ways: _Ways, targets: torch.Tensor, blocked: torch.Tensor, hitter: torch.Tensor
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per way (``float32[B, W]`` or ``bool[B, W]``): the index of its rearmost hitter (-1 for none),
    whether more than one checker hits with it, whether the one on the bar does, and the index of its
    rearmost hitter on a point (-1 for none). ``bool[B, 25]`` inputs by our indices (24: the bar).

    The reference and the exported graph's way: one float matrix product over every (way, source)
    pair, then reductions over [B, W, 25] (only ops ONNX opset 17 has)."""
    batch = targets.shape[0]
    index25 = torch.arange(25, device=targets.device)
    inputs = torch.cat((targets, blocked, hitter, torch.ones_like(hitter[:, :1])), 1).to(torch.float32)
    hit_test = (inputs @ ways.hit_test).view(batch, ways.count, 25)  # [B, W, 25], > 0 where it hits
    # The hitter's index + 1 where the pair hits, else 0 (one ``where``: no boolean [B, W, 25] copies).
    numbered = torch.where(hit_test > 0.25, index25 + 1.0, 0.0)
    rearmost = numbered.amax(-1) - 1.0  # [B, W], -1 for no hitter
    several = numbered.sum(-1) > rearmost + 1.0  # distinct positive numbers sum above their maximum
    from_bar = numbered[..., 24] > 0
    rearmost_point = numbered[..., :24].amax(-1) - 1.0
    return rearmost, several, from_bar, rearmost_point


def _hitters_by_masks(ways: _Ways, targets: torch.Tensor, blocked: torch.Tensor, hitter: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``_hitters_by_matrix`` on 25-bit masks: [B, W] integers instead of [B, W, 25] floats, about 25
    times less memory traffic (the shot counting was most of the encoder's time). Exact: the same
    numbers (tests/test_gnubg_inputs.py compares the two on random positions)."""
    bits = 2 ** torch.arange(25, device=targets.device)
    target_mask = (targets.to(torch.int64) * bits).sum(1, keepdim=True)  # [B, 1]
    blocked_mask = (blocked.to(torch.int64) * bits).sum(1).view(-1, 1, 1)
    hitter_mask = (hitter.to(torch.int64) * bits).sum(1, keepdim=True)
    stops = blocked_mask * ways.intermediate_scale  # [B, W, 3]: the blocked intermediates, per source bit
    # A double needs every intermediate point open; two dice need one of their two.
    stopped = torch.where(ways.every_one_needed, stops[..., 0] | stops[..., 1] | stops[..., 2],
                          stops[..., 0] & stops[..., 1])
    hits = hitter_mask & (target_mask * ways.target_scale) & ~stopped & (2 ** 25 - 1)  # [B, W]
    on_points = hits & (2 ** 24 - 1)
    # frexp: x = m * 2 ** e with 0.5 <= m < 1, so the highest set bit of x > 0 is e - 1 (and 0 -> -1).
    rearmost = torch.frexp(hits.to(torch.float64)).exponent.to(torch.float32) - 1.0
    rearmost_point = torch.frexp(on_points.to(torch.float64)).exponent.to(torch.float32) - 1.0
    several = (hits & (hits - 1)) != 0  # more than one bit set
    return rearmost, several, hits != on_points, rearmost_point


def _blots_on_path(blot: torch.Tensor, source: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """Whether an opponent blot sits on an intermediate landing point ``steps: long[21, 3]`` pips (0 =
    none) in front of ``source: float32[B, 21]`` (our index; < 0 = no hitter): ``bool[B, 21]``."""
    found = torch.zeros_like(source, dtype=torch.bool)
    for k in range(3):
        landing = (source - steps[:, k]).clamp(min=0, max=24).to(torch.int64)
        found = found | (blot.gather(1, landing) & (steps[:, k] > 0) & (source >= 0))
    return found
