"""Network input encoders: named, versioned objects in a registry, chosen by name in the config.

Every encoder maps ``board: int8[B, 28]`` (the side to move's view, layout in ``engine.board``) and the
rules to ``float32[B, size]``. A checkpoint stores the encoder's name and version; change what an
encoder computes only under a new version (or a new name), never in place.

The first-layer table trick
---------------------------
For the first ``separable_size`` units of an encoder, each unit is a sum over the 28 board columns of a
function of (column, signed count), plus a constant. The first Linear layer applied to such units is then
also a sum over columns, so it equals a sum of 28 rows of a precomputed table indexed by
``column * 31 + count + 15`` (``first_layer_indices``): one ``embedding_bag`` instead of encoding the
board and a matrix product (``FirstLayerTable``). Linear units such as borne-off counts and pip counts
fold into the same rows, as they are sums of per-column terms too. Units that are not separable
(a race flag, the longest prime) come after the separable ones, from ``extra_units``, and go through
the remaining weight columns as an ordinary (small) matrix product.

The table rows are not written by hand: they are read off ``encode`` itself by probing it with boards
holding one count in one column (``unit_table``), and the tests check ``table path == encode``
on random boards, which catches an encoder claiming separability it does not have.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from bgtrain.model import fast_encoders
from engine.board import (
    BOARD_WIDTH,
    FLIP_PERMUTATION,
    MOVER_BAR,
    MOVER_IN_HAND,
    OPPONENT_BAR,
    OPPONENT_IN_HAND,
    borne_off,
    flip_board,
    pip_counts,
)
from engine.escapes import escape_tables
from engine.position_facts import (
    COUNT_VALUES,
    MAX_CHECKERS,
    TABLE_ROWS,
    column_count_indices,
    point_masks,
    rearmost_points,
)
from engine.rules import Rules

# ---------------------------------------------------------------------------------------------------
# Position features of the encoders (the point masks and the race are ``engine.position_facts``).


def _escape_table(device: torch.device) -> torch.Tensor:
    """``long[4096]``: how many of the 36 rolls let a checker escape past each blocking pattern of the 12
    points in front of it (``engine.escapes``, GNU Backgammon's ``anEscapes``)."""
    return escape_tables(device)[0]


@functools.cache
def _escape_table_reversed(device: torch.device) -> torch.Tensor:
    """``_escape_table`` indexed by the bit-reversed 12-bit pattern."""
    patterns = torch.arange(1 << 12)
    reversed_patterns = torch.zeros_like(patterns)
    for bit in range(12):
        reversed_patterns |= ((patterns >> bit) & 1) << (11 - bit)
    return _escape_table(device)[reversed_patterns.to(device)]


def _longest_run_of_bits(masks: torch.Tensor) -> torch.Tensor:
    """Length of the longest run of consecutive set bits of each ``long`` in ``masks`` (< 2 ** 24)."""
    run = torch.zeros_like(masks)
    # Each step clears the lowest bit of every run; the number of steps to zero is the longest run.
    # Stopping early (typically after 3-7 of the 24 possible steps) costs one host sync a step.
    for _ in range(24):
        nonzero = masks != 0
        if not bool(nonzero.any()):
            break
        run += nonzero
        masks = masks & (masks << 1)
    return run


# Table rows of each board's columns, ``column * 31 + count + 15``: ``int8[B, 28]`` -> ``int32[B, 28]``.
first_layer_indices = column_count_indices


# ---------------------------------------------------------------------------------------------------
# Encoders.


class Encoder:
    """Base of the encoders; subclasses set the class attributes and implement ``encode``.

    ``separable_size``: units ``[0, separable_size)`` are column-separable (see the module docstring);
    ``extra_units`` returns units ``[separable_size, size)`` alone, for the table path.
    """

    name: str
    version: int
    size: int
    separable_size: int

    def encode(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        """``int8[B, 28]`` -> ``float32[B, size]``: ``reference_encode``, by the native kernel where it
        applies (eager CPU, ``bgtrain.model.fast_encoders``; equal bit for bit)."""
        fast = fast_encoders.encode(self.name, board, rules.checkers_per_side)
        return self.reference_encode(board, rules) if fast is None else fast

    def reference_encode(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        """``encode`` in torch code: what exported graphs and CUDA run, and the fast path's oracle."""
        raise NotImplementedError

    def extra_units(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        """The units that are not column-separable: ``float32[B, size - separable_size]`` (by the native
        kernel where it applies, as ``encode``)."""
        fast = fast_encoders.encode(self.name, board, rules.checkers_per_side, extra_units=True)
        return self.reference_extra_units(board, rules) if fast is None else fast

    def reference_extra_units(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        """``extra_units`` in torch code."""
        return board.new_zeros((board.shape[0], 0), dtype=torch.float32)

    def first_layer_indices(self, board: torch.Tensor) -> torch.Tensor:
        """Rows of ``unit_table`` to sum, one per column: ``int8[B, 28]`` -> ``int32[B, 28]``."""
        return first_layer_indices(board)

    def unit_table(
        self, rules: Rules, device: torch.device | str = "cpu"
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rows: float32[28 * 31, separable_size], constant: float32[separable_size])`` such that
        ``encode(board)[:, :separable_size] == constant + rows[first_layer_indices(board)].sum(1)``.
        """
        return _unit_table(self, rules, torch.device(device))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, version={self.version}, size={self.size})"


def column_probes() -> torch.Tensor:
    """``int8[28 * 31, 28]``: row ``column * 31 + count + 15`` holds ``count`` in ``column`` and nothing else.

    For a function of the board that is a sum over columns of per-(column, count) terms plus a constant,
    ``f(probes) - f(empty board)`` is the table of those terms, indexed by ``first_layer_indices``. Some
    probes are not legal positions (a positive count on the opponent's bar); their rows are never indexed.
    """
    probes = torch.zeros((TABLE_ROWS, BOARD_WIDTH), dtype=torch.int8)
    rows = torch.arange(TABLE_ROWS)
    probes[rows, rows // COUNT_VALUES] = (rows % COUNT_VALUES - MAX_CHECKERS).to(torch.int8)
    return probes


@functools.cache
def _unit_table(encoder: Encoder, rules: Rules, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    separable = slice(0, encoder.separable_size)
    constant = encoder.encode(torch.zeros((1, BOARD_WIDTH), dtype=torch.int8), rules)[0, separable]
    table = encoder.encode(column_probes(), rules)[:, separable] - constant
    return table.to(device), constant.to(device)


@functools.cache
def _seen_unit_table(
    encoder: Encoder, rules: Rules, device: torch.device, flipped: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """``encoder.unit_table``, or with ``flipped`` the table that evaluates ``flip_board(board)`` from
    ``board``'s own indices. Cached: the training loop rebuilds its first-layer tables every turn."""
    units, constant = encoder.unit_table(rules, device)
    if flipped:
        # The flipped board holds -board[P[i]] in column i (P = FLIP_PERMUTATION, an involution), so
        # column j's count v of the board we are given reads the rows of column P[j] at count -v.
        column = torch.tensor(FLIP_PERMUTATION, device=device).repeat_interleave(COUNT_VALUES)
        count = torch.arange(COUNT_VALUES, device=device).repeat(BOARD_WIDTH)
        units = units[column * COUNT_VALUES + (COUNT_VALUES - 1 - count)]
    return units, constant


@functools.cache
def _point_unit_table(device: torch.device) -> torch.Tensor:
    """``float32[31, 4]``: TD-Gammon's four units of a point holding ``row - 15`` of a side's checkers
    (no units for a negative count, the other side's): [>= 1, >= 2, >= 3, (n - 3) / 2 beyond 3].
    """
    count = torch.arange(-MAX_CHECKERS, MAX_CHECKERS + 1, dtype=torch.float32).clamp(min=0.0)
    units = torch.stack((count >= 1, count >= 2, count >= 3), dim=-1).to(torch.float32)
    return torch.cat((units, ((count - 3.0).clamp(min=0.0) * 0.5)[:, None]), dim=-1).to(device)


def _point_units(counts: torch.Tensor) -> torch.Tensor:
    """``int[B, P]`` signed counts (> 0 the side's own checkers) -> ``float32[B, 4 P]``, the four units of
    each point in turn. A row lookup writes them already interleaved: measured 3x faster than computing
    four [B, P] indicators and interleaving them.
    """
    rows = counts.to(torch.int32) + MAX_CHECKERS
    return F.embedding(rows, _point_unit_table(counts.device)).flatten(-2)


class Tesauro198(Encoder):
    """TD-Gammon's 198 input units (Tesauro 1992/1995), all from the side to move:

    ==========  ==========================================================================================
    units       meaning
    ==========  ==========================================================================================
    0 .. 95     the mover's points 1..24 (its own numbering), 4 units each: 1 if >= 1 checker, 1 if >= 2,
                1 if >= 3, (n - 3) / 2 beyond 3
    96 .. 191   the opponent's points 1..24 numbered from the opponent's side (its point j is the mover's
                point 25 - j), 4 units each as above
    192, 193    checkers waiting to enter / 2: the mover's, the opponent's (bar plus, in variants, in hand)
    194, 195    checkers borne off / 15: the mover's, the opponent's
    196, 197    the side to move: always (1, 0), as the board is always seen from the mover
    ==========  ==========================================================================================

    Swapping the mover's and the opponent's units of ``encode(b)`` gives ``encode(flip_board(b))``
    (apart from the side-to-move pair). Every unit is column-separable.
    """

    name = "tesauro198"
    version = 1
    size = 198
    separable_size = 198

    def reference_encode(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        points = board[:, 1:25]
        # Both sides' counts on their own points: the mover's, then the opponent's point j (mover's 25 - j).
        counts = torch.cat((points, -points.flip(-1)), dim=-1)
        mover_off, opponent_off = borne_off(board, rules.checkers_per_side)
        others = torch.stack(
            (
                (board[:, MOVER_BAR].to(torch.float32) + board[:, MOVER_IN_HAND]) * 0.5,
                (board[:, OPPONENT_BAR].to(torch.float32) + board[:, OPPONENT_IN_HAND]) * -0.5,
                mover_off.to(torch.float32) / 15.0,
                opponent_off.to(torch.float32) / 15.0,
                torch.ones_like(mover_off, dtype=torch.float32),
                torch.zeros_like(mover_off, dtype=torch.float32),
            ),
            dim=-1,
        )
        return torch.cat((_point_units(counts), others), dim=-1)


class TesauroPlus(Encoder):
    """The 198 Tesauro units followed by a few cheap batched features in the spirit of GNU Backgammon's:

    ==========  ==========================================================================================
    units       meaning
    ==========  ==========================================================================================
    0 .. 197    ``Tesauro198``
    198, 199    pip counts / 100: the mover's, the opponent's (column-separable: a sum of count x distance)
    200         race flag: 1 when no checker can meet an opposing one again (``engine.position_facts.is_race``)
    201, 202    rearmost checker's point / 25 (25 = on the bar or in hand, 0 = none left): mover, opponent
    203, 204    rolls of 36 with which that checker clears the other side's points / 36 (``_escape_table``)
    205, 206    longest run of consecutive made points / 6: mover, opponent
    ==========  ==========================================================================================

    Each opponent feature equals the mover's feature of ``flip_board(board)``. Units 0..199 are
    column-separable; 200..206 come from ``extra_units``, computed from point bitmasks without any
    reduction over points (the readable definitions they are tested against live in the tests).
    """

    name = "tesauro_plus"
    version = 1
    size = 207
    separable_size = 200

    def reference_encode(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        return torch.cat(
            (ENCODERS["tesauro198"].reference_encode(board, rules), self._pips(board), self.reference_extra_units(board, rules)),
            dim=-1,
        )

    @staticmethod
    def _pips(board: torch.Tensor) -> torch.Tensor:
        mover, opponent = pip_counts(board)
        return torch.stack((mover, opponent), dim=-1).to(torch.float32) / 100.0

    def reference_extra_units(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        aggregates = point_masks(board)
        mover_back, opponent_front = rearmost_points(aggregates)

        # The 12 points in front of each rearmost checker as a pattern for the escape table.
        # The mover moves down from b: bits j of (made << 12) >> (b - 1) hold points b - 12 + j (reversed).
        window = ((aggregates.opponent_made << 12) >> (mover_back - 1).clamp(min=0)) & 0xFFF
        mover_escapes = torch.where(mover_back > 0, _escape_table_reversed(board.device)[window], 0)
        # The opponent moves up from f (mover's numbering): bits j of made >> f hold points f + 1 + j.
        window = (aggregates.mover_made >> opponent_front) & 0xFFF
        opponent_has_checkers = (aggregates.opponent_occupied != 0) | aggregates.opponent_waiting
        opponent_escapes = torch.where(opponent_has_checkers, _escape_table(board.device)[window], 0)

        primes = _longest_run_of_bits(torch.stack((aggregates.mover_made, aggregates.opponent_made), dim=-1))
        return torch.stack(
            (
                (mover_back < opponent_front).to(torch.float32),  # is_race
                mover_back.to(torch.float32) / 25.0,
                (25 - opponent_front).to(torch.float32) / 25.0,  # in the opponent's own numbering
                mover_escapes.to(torch.float32) / 36.0,
                opponent_escapes.to(torch.float32) / 36.0,
                primes[:, 0].to(torch.float32) / 6.0,
                primes[:, 1].to(torch.float32) / 6.0,
            ),
            dim=-1,
        )


class GnubgContact(Encoder):
    """The 198 Tesauro units followed by GNU Backgammon's 25 hand-crafted contact inputs of each side
    (``bgtrain.model.gnubg_inputs``: pip loss and shots, escapes and containment, anchors, mobility, moment,
    entering, timing, backbone, back game, free pips, break contact, checkers off):

    ==========  ==========================================================================================
    units       meaning
    ==========  ==========================================================================================
    0 .. 197    ``Tesauro198`` (column-separable)
    198 .. 222  ``gnubg_inputs.FEATURES`` of the side to move
    223 .. 247  the same of the opponent (= the mover's features of ``flip_board(board)``)
    ==========  ==========================================================================================
    """

    name = "gnubg_contact"
    version = 1
    size = 248
    separable_size = 198

    def reference_encode(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        return torch.cat((ENCODERS["tesauro198"].reference_encode(board, rules), self.reference_extra_units(board, rules)), dim=-1)

    def reference_extra_units(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        from bgtrain.model.gnubg_inputs import contact_features

        return contact_features(board, rules.checkers_per_side)


RACE_OFF_UNITS = 14  # one-hot borne-off counts 1..14 (none off and all off need no unit)


def _crossings(board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mover's, opponent's) quadrant crossings still to make: a checker on a side's point p (its own
    numbering, home board 1..6) crosses ``(p - 1) // 6`` quadrant lines to get home, one on the bar
    four; summed over the side's checkers. ``int32[B]`` each."""
    points = torch.arange(1, 25, device=board.device, dtype=torch.int32)
    per_point = (points - 1) // 6
    b = board.to(torch.int32)
    mover = (b[:, 1:25].clamp(min=0) * per_point).sum(-1) + 4 * b[:, MOVER_BAR].clamp(min=0)
    opponent = ((-b[:, 1:25]).clamp(min=0) * per_point.flip(0)).sum(-1) + 4 * (-b[:, OPPONENT_BAR]).clamp(min=0)
    return mover, opponent


class GnubgRace(Encoder):
    """The 198 Tesauro units followed by the inputs GNU Backgammon's race network adds to its point
    units (``eval.c``'s race inputs: borne-off checkers one-hot, cross-overs), and pip counts:

    ==========  ==========================================================================================
    units       meaning
    ==========  ==========================================================================================
    0 .. 197    ``Tesauro198``
    198, 199    pip counts / 100: the mover's, the opponent's
    200, 201    quadrant crossings still to make / 10 (``_crossings``): the mover's, the opponent's
    202 .. 215  the mover has borne off exactly k checkers, k = 1 .. 14 (one unit each)
    216 .. 229  the same for the opponent
    ==========  ==========================================================================================

    The crossings say how far outside checkers are from home in whole quadrants, the measure of a
    bear-in's wastage that the pip count misses; the borne-off counts, one-hot, let a race network
    treat each stage of a bear-off apart (the gammon saved at the first checker off, say). Units 0..201
    are column-separable; 202..229 come from ``extra_units``. Each opponent unit equals the mover's
    unit of ``flip_board(board)``.
    """

    name = "gnubg_race"
    version = 1
    size = 230
    separable_size = 202

    def reference_encode(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        mover, opponent = _crossings(board)
        crossings = torch.stack((mover, opponent), dim=-1).to(torch.float32) / 10.0
        return torch.cat((ENCODERS["tesauro198"].reference_encode(board, rules), TesauroPlus._pips(board), crossings,
                          self.reference_extra_units(board, rules)), dim=-1)

    def reference_extra_units(self, board: torch.Tensor, rules: Rules) -> torch.Tensor:
        counts = torch.arange(1, RACE_OFF_UNITS + 1, device=board.device, dtype=torch.int32)
        mover_off, opponent_off = borne_off(board, rules.checkers_per_side)
        return torch.cat((mover_off.to(torch.int32)[:, None] == counts,
                          opponent_off.to(torch.int32)[:, None] == counts), dim=-1).to(torch.float32)


ENCODERS: dict[str, Encoder] = {
    encoder.name: encoder for encoder in (Tesauro198(), TesauroPlus(), GnubgContact(), GnubgRace())
}


def get_encoder(name: str) -> Encoder:
    """The registered encoder called ``name``; a ValueError lists the known names otherwise."""
    try:
        return ENCODERS[name]
    except KeyError:
        raise ValueError(f"unknown encoder {name!r}; known: {', '.join(sorted(ENCODERS))}") from None


# ---------------------------------------------------------------------------------------------------
# The first layer as a table.


class FirstLayerTable:
    """A first Linear layer over an encoder's units, evaluated as table lookups.

    ``FirstLayerTable(encoder, linear, rules)(board) == linear(encoder.encode(board, rules))`` to float
    tolerance. The table is built from ``linear.weight`` with ordinary tensor operations, so when built
    with gradients enabled it is differentiable in the weight and bias; for inference build it under
    ``torch.no_grad()`` and reuse it while the weights are unchanged (``ValueNetwork.evaluate`` does).

    ``table: float[28 * 31, H]`` (column 0's rows also carry the bias and the constant units),
    ``extra_weight: float[size - separable_size, H]`` for the non-separable units.
    """

    def __init__(self, encoder: Encoder, linear: torch.nn.Linear, rules: Rules, flipped: bool = False):
        if linear.in_features != encoder.size:
            raise ValueError(f"{encoder!r} gives {encoder.size} units, the layer takes {linear.in_features}")
        weight = linear.weight
        units, constant = _seen_unit_table(encoder, rules, weight.device, flipped)
        self.flipped = flipped
        separable_weight = weight[:, : encoder.separable_size].t()
        self.encoder = encoder
        self.rules = rules
        offset = constant.to(weight.dtype) @ separable_weight
        if linear.bias is not None:
            offset = offset + linear.bias
        # Every board indexes exactly one row of each column, so the bias and the constant units ride on
        # column 0's rows: one less pass over the [B, H] result.
        column_zero = torch.zeros((TABLE_ROWS, 1), dtype=weight.dtype, device=weight.device)
        column_zero[:COUNT_VALUES] = 1.0
        self.table = units.to(weight.dtype) @ separable_weight + column_zero * offset
        self.extra_weight = weight[:, encoder.separable_size :].t()

    def __call__(self, board: torch.Tensor) -> torch.Tensor:
        """``int8[B, 28]`` -> ``float[B, H]``, the layer's pre-activations."""
        indices = self.encoder.first_layer_indices(board)
        hidden = F.embedding_bag(indices, self.table, mode="sum")
        if self.extra_weight.shape[0]:
            seen = flip_board(board) if self.flipped else board
            # One gemm that adds into the lookups' sum in place: no [B, H] product to allocate, add and free
            # (measured: batched 0-ply about 12% faster, scripts/bench_latency.py). The sum is the bag's own
            # fresh tensor, and its backward does not read it.
            hidden.addmm_(self.encoder.extra_units(seen, self.rules).to(hidden.dtype), self.extra_weight)
        return hidden
