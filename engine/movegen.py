"""Legal moves as afterstates, for a whole batch of positions in one call.

``legal_afterstates(board, dice, rules)`` returns every DISTINCT legal resulting position of every
input position, flattened (see ``Afterstates``). A move is a resulting position: two different
checker-move sequences that end in the same position are one move.

How it works (all steps are tensor operations over the whole batch):

1. Each position becomes one partial "line" per order of its dice: two for a non-double (playing
   one die can enable the other: entering from the bar, or bringing the last checker home so that
   bearing off becomes legal), one for a double, which plays its die up to four times.
2. Each step expands every live line by every legal single checker move with its next die
   (``_single_moves``: two kernels that ``engine.kernels`` compiles on the CPU). With doubles a line
   may only move a checker from a point no higher than its previous move's source: every set of
   moves with one die can be played in that order (a higher checker's move never needs a lower
   one's first), and without it doubles produce about ten times more duplicates.
3. The dice-usage rule (``_dice_usage_filter``) picks, per position, which finished lines count.
4. Duplicates are removed (``engine.deduplicate``) by one sort on a 64-bit key, the position's index (24 bits) above 40 bits
   of a hash of the packed board; rows with equal keys are compared in full, and a collision
   between different boards falls back to an exact sort.
5. Acey-deucey (``Rules.acey_deucey``): a 1-2 whose two dice were both played goes on with each of
   the six doubles, as a second batched call on its afterstates (``_acey_deucey_turns``).

Variants change single moves (``_single_moves``): checkers in hand may move on before all have
entered, and Dutch backgammon forbids hits until a checker is home.

The extra roll: an afterstate is the resulting position plus one flag, ``extra_roll`` (an
acey-deucey 1-2 whose chosen double was played in full, so the same side rolls again). The flag
rides in a padding column of the packed row (``EXTRA_ROLL``), so hashing and deduplication treat
(position, flag) as the afterstate: one position reached both with and without the extra roll (two
choices of double) is two afterstates.

Internally a line is 40 int8 columns viewed as five int64 words: the board padded from 28 to 32
columns (four words; padding column ``EXTRA_ROLL`` holds the flag) and one word of metadata (the
input position, the dice, the previous source, the occupied points). Copying rows is the main
cost, and copying words is about 2.5 times faster than bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine import kernels
from engine.board import BOARD_WIDTH, MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR
from engine.deduplicate import BOARD_WORDS, deduplicate
from engine.position_facts import has_borne_off
from engine.rules import STANDARD, Rules

PACKED_WIDTH = 40  # int8 columns per packed line: the board (28), padding, metadata
WORDS = PACKED_WIDTH // 8  # four words of board, one word of metadata
EXTRA_ROLL = 29  # 1 when the afterstate earns an extra roll (acey-deucey), else 0
SOURCES = 26  # a checker can move from points 1..24, the bar (25) and the hand (26)
MAX_POSITIONS = 1 << 24

# Bit layout of a line's metadata word (word 4):
_PARENT_BITS = 24  # bits 0..23: the input position
_FIRST_DIE_SHIFT = 24  # bits 24..26: the die this line plays first
_SECOND_DIE_SHIFT = 27  # bits 27..29: the other die (the same for doubles)
_RANK_SHIFT = 30  # bits 30..34: doubles: rank of the previous move's source; others: see _ANY_SOURCE
_OCCUPIED_SHIFT = 35  # bits 35..61: bit s set when the mover has a checker on s (1..26)
_PARENT_MASK = (1 << _PARENT_BITS) - 1
_BAR_BIT = 1 << MOVER_BAR
_HAND_BIT = 1 << MOVER_IN_HAND
_POINTS_AND_BAR = ((1 << 26) - 1) & ~1  # bits 1..25
_ALL_SOURCES = ((1 << 27) - 1) & ~1  # bits 1..26
_HOME_BITS = 0b1111110  # points 1..6
# For a non-double the rank field holds the first move's target (0 when borne off), or _ANY_SOURCE
# when the first move entered from the bar or the hand.
_ANY_SOURCE = 31


@dataclass(frozen=True)
class Afterstates:
    """The distinct legal afterstates of B positions, flattened.

    ``boards: int8[N, 28]``    each afterstate, still seen from the side that moved (not flipped).
    ``position: int64[N]``     which input position each afterstate belongs to (non-decreasing).
    ``counts: int64[B]``       afterstates per input position; always >= 1, since a position with
                               no legal move has exactly one afterstate: itself.
    ``offsets: int64[B]``      where position b's afterstates start in ``boards``.
    ``dice_used: int8[N]``     how many dice the play used (0 to 4; an acey-deucey 1-2 turn counts
                               the 1, the 2 and the chosen double's moves, up to 6).
    ``extra_roll: bool[N]``    the mover rolls again after this play (acey-deucey: the 1-2 and the
                               whole chosen double were played); always False in other variants.

    The order within a position is fixed by the hash, so it is deterministic for a given input.
    """

    boards: torch.Tensor
    position: torch.Tensor
    counts: torch.Tensor
    offsets: torch.Tensor
    dice_used: torch.Tensor
    extra_roll: torch.Tensor

    @property
    def total(self) -> int:
        return self.boards.shape[0]

    def padded(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(boards: int8[B, M, 28], mask: bool[B, M])`` with M the largest count in the batch."""
        batch = self.counts.shape[0]
        width = int(self.counts.max()) if batch else 0
        slot = torch.arange(self.total, device=self.boards.device) - self.offsets[self.position]
        boards = torch.zeros(batch, width, BOARD_WIDTH, dtype=torch.int8, device=self.boards.device)
        mask = torch.zeros(batch, width, dtype=torch.bool, device=self.boards.device)
        boards[self.position, slot] = self.boards
        mask[self.position, slot] = True
        return boards, mask

    def select(self, choice: torch.Tensor) -> torch.Tensor:
        """The chosen afterstate per position: ``choice: int64[B]`` indexes into each position's
        afterstates (0 <= choice < counts). Returns ``int8[B, 28]``."""
        return self.boards[self.offsets + choice]

    def select_extra_roll(self, choice: torch.Tensor) -> torch.Tensor:
        """Whether each chosen afterstate earns an extra roll: ``bool[B]`` (for ``engine.game.play``)."""
        return self.extra_roll[self.offsets + choice]


def argmax_per_position(scores: torch.Tensor, afterstates: Afterstates) -> torch.Tensor:
    """The index of the best-scoring afterstate within each position (the first on ties): ``int64[B]``."""
    batch = afterstates.counts.shape[0]
    position = afterstates.position
    best = torch.full((batch,), float("-inf"), dtype=scores.dtype, device=scores.device)
    best = best.scatter_reduce(0, position, scores, "amax")
    flat_index = torch.arange(scores.shape[0], device=scores.device)
    candidate = torch.where(scores == best[position], flat_index, scores.shape[0])
    first = torch.full((batch,), scores.shape[0], dtype=torch.int64, device=scores.device)
    first = first.scatter_reduce(0, position, candidate, "amin")
    return first - afterstates.offsets



def rank_per_position(scores: torch.Tensor, afterstates: Afterstates) -> torch.Tensor:
    """Each afterstate's rank within its position by ``scores``, best first from 0 (ties keep the
    generation order): ``int64[N]``."""
    position = afterstates.position
    # Sort by score, then stably by position: each position's rows end up contiguous, best first.
    order = torch.argsort(scores, descending=True, stable=True)
    order = order[torch.argsort(position[order], stable=True)]
    rank = torch.empty_like(position)
    rank[order] = torch.arange(order.numel(), device=order.device) - afterstates.offsets[position[order]]
    return rank


def _rows(tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``tensor[mask]`` for a bool mask over rows; ``index_select`` copies int64 rows several times
    faster than advanced indexing on the CPU (measured with torch 2.13)."""
    return tensor.index_select(0, mask.nonzero().squeeze(1))


# A "line" is a partial play: int64[L, 5], the packed board after the moves so far (words 0..3)
# and its metadata word (word 4, layout above). Keeping everything a line needs in one row makes
# each expansion a single row copy.


def _metadata(parent, first_die, second_die, rank, occupied):
    return (
        parent
        | (first_die << _FIRST_DIE_SHIFT)
        | (second_die << _SECOND_DIE_SHIFT)
        | (rank << _RANK_SHIFT)
        | (occupied << _OCCUPIED_SHIFT)
    )


def _parent(lines: torch.Tensor) -> torch.Tensor:
    return lines[:, BOARD_WORDS] & _PARENT_MASK


def _field(lines: torch.Tensor, shift: int, bits: int) -> torch.Tensor:
    return (lines[:, BOARD_WORDS] >> shift) & ((1 << bits) - 1)


_CHUNK_BITS = 14  # set bits are counted and listed in two halves of a move mask: bits 0..13, 14..27
_CHUNK_MASK = (1 << _CHUNK_BITS) - 1


class _Tables:
    """Small lookup tables, one set per device."""

    def __init__(self, device: torch.device):
        source = torch.arange(1, SOURCES + 1, device=device)
        self.source_bit = torch.ones_like(source) << source  # bit s for s in 1..26
        # The highest set bit of every 7-bit home mask (0 when none).
        self.highest = torch.tensor([max(mask.bit_length() - 1, 0) for mask in range(128)], device=device)
        # For every _CHUNK_BITS-bit mask: how many bits are set, and the k-th lowest set bit at
        # [mask * _CHUNK_BITS + k] (0 past the last). Built as tensors: a Python loop over the 2 ** 14
        # masks cost a tenth of a second in every process's first move generation.
        bit = torch.arange(_CHUNK_BITS)
        bits = (torch.arange(1 << _CHUNK_BITS).unsqueeze(1) >> bit) & 1  # [masks, bits]
        self.popcount = bits.sum(1).to(device)
        # Set bits first, in ascending order: sort by (unset, bit); then zero the places past the count.
        ascending = torch.argsort((1 - bits) * _CHUNK_BITS + bit, dim=1)
        ascending = torch.where(bit < bits.sum(1, keepdim=True), ascending, 0)
        self.kth_bit = ascending.to(torch.int8).view(-1).to(device)


_tables_by_device: dict[torch.device, _Tables] = {}


def _tables(device: torch.device) -> _Tables:
    tables = _tables_by_device.get(device)
    if tables is None:
        tables = _tables_by_device[device] = _Tables(device)
    return tables


# Single checker moves, for every line at once, in two kernels around one data-dependent step:
# ``_move_masks`` gives each line the bit mask of the sources it may move from and their count;
# ``repeat_interleave`` lays out one child line per set bit; ``_children`` finds each child's
# source (the k-th set bit of its parent's mask) and plays the move. Both kernels are written as
# pure tensor code with no size that depends on the data, so on the CPU ``torch.compile`` fuses
# each into a single pass over the lines (``engine.kernels``); elsewhere they run op by op.


def _move_masks(metadata, die, ordered, open_points, blots, highest, popcount, step: int,
                hand_enters_first: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``(moves int64[L], count int64[L])``: bit s of ``moves`` is set when a checker may move from
    source s (1..26) with ``die``; ``count`` is the number of bits set.

    ``metadata``: the lines' metadata words; ``die: int64[L]`` the die each line plays now;
    ``ordered: bool[L]`` marks lines (doubles) whose move must start no higher than their previous
    one; ``open_points: int64[L]`` has bit t set when point t is not closed to the mover. The
    opponent's closed points cannot change during a turn (a hit only removes a lone checker), so
    these bits are computed once per position. ``blots: int64[L]`` (Dutch backgammon, else None):
    bit t set when point t holds an opposing blot that may not be hit while the line has no checker
    home. ``step``: how many dice the lines have played (0 to 3; from 2 on, only doubles).
    """
    occupied = (metadata >> _OCCUPIED_SHIFT) & ((1 << 27) - 1)
    if blots is not None:
        # Dutch backgammon (``Rules.hit_needs_home_checker``): "a player may not hit until at least
        # one of his own checkers has reached his home board", read by the state. Blots only go
        # during a turn by being hit, which needs a checker home, and a checker once home stays or
        # is borne off, so the start position's blots serve every line still without one.
        blots = torch.where((occupied & _HOME_BITS) != 0, 0, blots)
        open_points = open_points & ~blots

    # A checker on s lands on s - d, a point not held by two or more opposing checkers. Checkers on
    # the bar ("point 25") enter the opponent's home board the same way, on point 25 - d; checkers
    # in hand enter like checkers on the bar.
    moves = occupied & (open_points << die) & _POINTS_AND_BAR
    moves |= ((occupied >> MOVER_IN_HAND) & (open_points >> (25 - die)) & 1) << MOVER_IN_HAND
    # Bearing off: only when all the mover's checkers are home (points 1..6); with the exact die,
    # or with a larger die from the highest occupied point.
    all_home = (occupied >> 7) == 0
    highest_home = highest.index_select(0, occupied & 127)
    exact = occupied & (1 << die)
    from_highest = torch.where((highest_home < die) & (highest_home > 0), 1 << highest_home, 0)
    moves |= torch.where(all_home, exact | from_highest, 0)
    # Checkers on the bar must all enter before any other checker moves; checkers in hand likewise
    # (after the bar), unless ``Rules.hand_enters_first`` is off (acey-deucey: "entered checkers may
    # move before all are in").
    waiting = moves
    if hand_enters_first:
        waiting = torch.where((occupied & _HAND_BIT) != 0, moves & _HAND_BIT, moves)
    moves = torch.where((occupied & _BAR_BIT) != 0, moves & _BAR_BIT, waiting)
    if step > 0:
        rank = (metadata >> _RANK_SHIFT) & 31
        # Doubles: no source above the previous one (the bar and the hand rank together, as 25).
        below = (2 << rank) - 1 | torch.where(rank >= MOVER_BAR, _HAND_BIT, 0)
        if step >= 2:
            moves &= below
        else:
            # A non-double's second move in the low-die-first order is only needed where the
            # high-die-first order cannot reach the same position: when it continues the checker
            # just moved (the high die's landing point may be closed), when the first move entered
            # from the bar or the hand (the other checker may not move before it), or when it bears
            # off (the first move may have brought the last checker home, or moved the highest
            # checker). Any other pair of moves by two checkers can be played high die first, to the
            # same result.
            needed = torch.where(rank == _ANY_SOURCE, _ALL_SOURCES, 1 << rank) | torch.where(all_home, 127, 0)
            low_first_second = ~ordered & (((metadata >> _FIRST_DIE_SHIFT) & 7) < die)
            moves = torch.where(ordered, moves & below, torch.where(low_first_second, moves & needed, moves))
    count = popcount.index_select(0, moves & _CHUNK_MASK) + popcount.index_select(0, moves >> _CHUNK_BITS)
    return moves, count


def _byte(words: torch.Tensor, column: torch.Tensor) -> torch.Tensor:
    """The signed int8 at byte ``column`` of each row of ``words: int64[M, WORDS]``, as int64."""
    word = torch.gather(words, 1, (column >> 3).unsqueeze(1)).squeeze(1)
    return (((word >> ((column & 7) * 8)) & 0xFF) ^ 0x80) - 0x80


def _set_byte(words: torch.Tensor, column: torch.Tensor, old: torch.Tensor,
              new: torch.Tensor) -> torch.Tensor:
    """``words`` with byte ``column`` of each row changed from ``old`` to ``new``, by an XOR (no carry
    can cross into a neighbouring byte, as an addition to the word could)."""
    change = ((old ^ new) & 0xFF) << ((column & 7) * 8)
    word = torch.arange(WORDS, device=words.device)
    return words ^ torch.where(word == (column >> 3).unsqueeze(1), change.unsqueeze(1), 0)


def _children(lines, moves, line, first_child, die, ordered, blots, popcount, kth_bit,
              step: int) -> torch.Tensor:
    """The child lines ``int64[M, WORDS]``: child i plays the k-th legal move of line ``line[i]``,
    where k counts from the line's first child ``first_child[line[i]]`` (children come out in their
    parents' order, sources ascending)."""
    k = torch.arange(line.shape[0], device=line.device) - first_child.index_select(0, line)
    mask = moves.index_select(0, line)
    # The k-th set bit: in the low chunk of the mask if it has more than k bits, else in the high one.
    low = mask & _CHUNK_MASK
    low_count = popcount.index_select(0, low)
    in_low = k < low_count
    chunk = torch.where(in_low, low, mask >> _CHUNK_BITS)
    k = torch.where(in_low, k, k - low_count)
    src = kth_bit.index_select(0, chunk * _CHUNK_BITS + k).long() + torch.where(in_low, 0, _CHUNK_BITS)

    words = lines.index_select(0, line)
    child_die = die.index_select(0, line)
    # The bar and the hand both enter as from "point 25".
    from_point = src.clamp(max=MOVER_BAR)
    target = from_point - child_die
    bears_off = target < 1
    on_source = _byte(words, src)
    left = on_source - 1
    words = _set_byte(words, src, on_source, left)
    # Bearing off "lands" on the source byte and rewrites it unchanged.
    landing = torch.where(bears_off, src, target)
    before = _byte(words, landing)
    # Landing on a single opposing checker hits it: it goes to the opponent's bar.
    hit = before == -1
    words = _set_byte(words, landing, before, torch.where(hit, 1, before + (~bears_off).long()))
    opponent_bar = torch.full_like(src, OPPONENT_BAR)
    on_bar = _byte(words, opponent_bar)
    words = _set_byte(words, opponent_bar, on_bar, on_bar - hit.long())
    if step == 3:
        # The fourth move of a double is the last: nothing reads the occupied bits or the rank again.
        return words

    metadata = words[:, BOARD_WORDS]
    # The source's bit goes when its last checker left; the target's is set unless it bore off.
    occupied = (metadata >> _OCCUPIED_SHIFT) ^ ((left == 0).long() << src)
    occupied |= (~bears_off).long() << target.clamp(min=0)
    keep = metadata & ((1 << _RANK_SHIFT) - 1)  # parent and dice
    line_ordered = ordered.index_select(0, line)
    if step >= 2:
        rank = from_point  # only doubles play a third move
    else:
        first_rank = torch.where(src >= MOVER_BAR, _ANY_SOURCE, target.clamp(min=0))
        rank = torch.where(line_ordered, from_point, first_rank)
    if blots is not None:
        # Dutch: the move that brings the first checker home allows hits, so a later move (a higher
        # checker's with doubles, or the high die's in the low-die-first order) can need it first:
        # after it, any source may follow.
        arrives = (blots.index_select(0, line) != 0) & (target >= 1) & (target <= 6)
        rank = torch.where(arrives, torch.where(line_ordered, MOVER_BAR, _ANY_SOURCE), rank)
    metadata = keep | (rank << _RANK_SHIFT) | (occupied << _OCCUPIED_SHIFT)
    word = torch.arange(WORDS, device=words.device)
    return torch.where(word == BOARD_WORDS, metadata.unsqueeze(1), words)


def _single_moves(lines: torch.Tensor, die: torch.Tensor, ordered: torch.Tensor, open_points: torch.Tensor,
                  blots: torch.Tensor | None, rules: Rules, step: int) -> torch.Tensor:
    """Every legal single checker move of every line (the arguments: ``_move_masks``)."""
    tables, device = _tables(lines.device), lines.device
    moves, count = kernels.call(
        _move_masks, lines[:, BOARD_WORDS], die, ordered, open_points, blots, tables.highest, tables.popcount,
        min(step, 2), rules.hand_enters_first, rows=lines.shape[0], device=device,
    )
    line = torch.repeat_interleave(count)
    first_child = torch.cumsum(count, 0) - count
    return kernels.call(
        _children, lines, moves, line, first_child, die, ordered, blots, tables.popcount, tables.kth_bit,
        step,
        rows=line.shape[0], device=device,
    )


# The dice-usage rule, in one place. From the rules of backgammon:
#   "A player must use both numbers of a roll if this is legally possible (or all four numbers of a
#    double). When only one number can be played, the player must play that number. Or if either
#    number can be played but not both, the player must play the larger one. When neither number
#    can be used, the player loses his turn. In the case of doubles, when all four numbers cannot be
#    played, the player must play as many numbers as he can."
def _dice_usage_filter(levels: list[torch.Tensor], batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``levels[k]`` holds the lines that played k dice. Per position, keep the lines that use the
    most dice; when that is one die of a non-double, keep the lines that played the larger die if
    any did. Returns (lines, dice used per line)."""
    device = levels[0].device
    most_used = torch.zeros(batch, dtype=torch.int64, device=device)
    for used, lines in enumerate(levels):
        most_used.index_fill_(0, _parent(lines), used)
    kept, dice_used = [], []
    for used, lines in enumerate(levels):
        parent = _parent(lines)
        keep = most_used.index_select(0, parent) == used
        if used == 1:
            plays_larger = _field(lines, _FIRST_DIE_SHIFT, 3) > _field(lines, _SECOND_DIE_SHIFT, 3)
            some_larger = torch.zeros(batch, dtype=torch.bool, device=device)
            some_larger.index_fill_(0, parent[plays_larger], True)
            keep &= plays_larger | ~some_larger.index_select(0, parent)
        row = keep.nonzero().squeeze(1)
        kept.append(row)
        dice_used.append(torch.full((row.shape[0],), used, dtype=torch.int8, device=device))
    # Each level's kept lines are gathered straight into their slice of the result: no second copy
    # by a concatenation.
    chosen = torch.empty(sum(row.shape[0] for row in kept), WORDS, dtype=torch.int64, device=device)
    start = 0
    for lines, row in zip(levels, kept):
        torch.index_select(lines, 0, row, out=chosen[start : start + row.shape[0]])
        start += row.shape[0]
    return chosen, torch.cat(dice_used)


def legal_afterstates(board: torch.Tensor, dice: torch.Tensor, rules: Rules = STANDARD) -> Afterstates:
    """Every distinct legal afterstate of each position.

    ``board: int8[B, 28]`` positions from the side to move; ``dice: int[B, 2]`` their rolls (1..6,
    either order). Runs on the device of ``board``.
    """
    if board.dim() != 2 or board.shape[1] != BOARD_WIDTH:
        raise ValueError(f"board must be int8[B, {BOARD_WIDTH}], got shape {tuple(board.shape)}")
    if board.shape[0] >= MAX_POSITIONS:
        raise ValueError(f"at most {MAX_POSITIONS - 1} positions in one call, got {board.shape[0]}")
    batch = board.shape[0]
    dice = dice.to(device=board.device, dtype=torch.int64)
    words, parent, dice_used = _legal_words(board, dice, rules)
    if rules.acey_deucey:
        words, parent, dice_used = _acey_deucey_turns(dice, words, parent, dice_used, rules)
        extra_roll = words.view(torch.int8)[:, EXTRA_ROLL] != 0
    else:
        extra_roll = torch.zeros(words.shape[0], dtype=torch.bool, device=board.device)
    counts = torch.bincount(parent, minlength=batch)
    offsets = torch.cumsum(counts, 0) - counts
    boards = words.view(torch.int8)[:, :BOARD_WIDTH].contiguous()
    return Afterstates(
        boards=boards,
        position=parent,
        counts=counts,
        offsets=offsets,
        dice_used=dice_used,
        extra_roll=extra_roll,
    )


def _legal_words(
    board: torch.Tensor, dice: torch.Tensor, rules: Rules
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Steps 1 to 4 for ``board: int8[B, 28]`` and ``dice: int64[B, 2]``: the distinct afterstates as
    packed lines, ``(int64[N, 5] with the board in words 0..3, parent int64[N], dice used int8[N])``,
    ordered by parent."""
    device = board.device
    batch = board.shape[0]
    high, low = dice.max(1).values, dice.min(1).values
    double = high == low
    source_bit = _tables(device).source_bit
    occupied = torch.where(board[:, 1 : SOURCES + 1] > 0, source_bit, 0).sum(1)
    open_points = torch.where(board[:, 1:25] >= -1, source_bit[:24], 0).sum(1)
    blots = None
    if rules.hit_needs_home_checker:
        # Blots that may not be hit while no checker is home; none once a checker is borne off.
        mover_has_off, _ = has_borne_off(board, rules.checkers_per_side)
        blots = torch.where((board[:, 1:25] == -1) & ~mover_has_off.unsqueeze(1), source_bit[:24], 0).sum(1)

    packed = torch.zeros(batch, PACKED_WIDTH, dtype=torch.int8, device=device)
    packed[:, :BOARD_WIDTH] = board
    packed = packed.view(torch.int64)
    # One line per order of the dice: (high, low) for every position, then (low, high) for a
    # non-double. Playing one die can enable the other (entering from the bar, or bringing the last
    # checker home so that bearing off becomes legal), so both orders are needed. Lines stay in
    # position order from here on (children follow their parents), so the gathers of the
    # deduplication read memory almost in order.
    parent = torch.repeat_interleave(2 - double.long())
    low_first = torch.zeros_like(parent, dtype=torch.bool)
    low_first[1:] = parent[1:] == parent[:-1]
    lines = packed.index_select(0, parent)
    high, low = high.index_select(0, parent), low.index_select(0, parent)
    first = torch.where(low_first, low, high)
    second = torch.where(low_first, high, low)
    lines[:, BOARD_WORDS] = _metadata(
        parent, first, second, torch.full_like(parent, MOVER_BAR), occupied.index_select(0, parent)
    )

    levels = [lines]
    for step in range(4):
        if step >= 2:  # only doubles play a third and a fourth die
            lines = _rows(lines, double.index_select(0, _parent(lines)))
        if lines.shape[0] == 0:
            break
        parent = _parent(lines)
        die = _field(lines, _FIRST_DIE_SHIFT if step == 0 else _SECOND_DIE_SHIFT, 3)
        line_blots = None if blots is None else blots.index_select(0, parent)
        ordered, line_open_points = double.index_select(0, parent), open_points.index_select(0, parent)
        lines = _single_moves(lines, die, ordered, line_open_points, line_blots, rules, step)
        if lines.shape[0] == 0:
            break
        levels.append(lines)

    lines, dice_used = _dice_usage_filter(levels, batch)
    return deduplicate(lines, _parent(lines), dice_used)


DOUBLES = 6


# The acey-deucey roll (``Rules.acey_deucey``): "a roll of 1-2: play the 1 and the 2, then choose any
# double and play it as four moves, then roll again; if the 1 and 2 cannot both be played the turn
# ends at once, and if the chosen double cannot be played in full the extra roll is lost."
def _acey_deucey_turns(
    dice: torch.Tensor, words: torch.Tensor, parent: torch.Tensor, dice_used: torch.Tensor, rules: Rules
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The afterstates of ``_legal_words`` with every 1-2 that played both dice continued by each
    double, played as far as it goes (the dice-usage rule for doubles); a double played in full sets
    the ``EXTRA_ROLL`` column. Same form as ``_legal_words``' result, ordered by parent."""
    acey = (dice.max(1).values == 2) & (dice.min(1).values == 1)
    goes_on = acey[parent] & (dice_used == 2)
    if not bool(goes_on.any()):
        return words, parent, dice_used
    row = goes_on.nonzero().squeeze(1)
    if row.numel() * DOUBLES >= MAX_POSITIONS:
        raise ValueError(f"{row.numel()} acey-deucey 1-2 plays in one call: too many to continue; split the batch")
    # Each 1-2 afterstate six times, with the doubles 1-1 .. 6-6.
    starts = words.index_select(0, row).repeat_interleave(DOUBLES, 0).view(torch.int8)[:, :BOARD_WIDTH]
    double = torch.arange(1, DOUBLES + 1, device=words.device).repeat(row.numel())
    more_words, more_start, more_used = _legal_words(starts, torch.stack([double, double], 1), rules)
    more_words.view(torch.int8)[:, EXTRA_ROLL] = (more_used == 4).to(torch.int8)
    stays = (~goes_on).nonzero().squeeze(1)
    all_words = torch.cat([words.index_select(0, stays), more_words])
    continued_parent = parent.index_select(0, row)[more_start // DOUBLES]
    all_parent = torch.cat([parent.index_select(0, stays), continued_parent])
    all_used = torch.cat([dice_used.index_select(0, stays), 2 + more_used])
    # Two doubles can reach one afterstate: deduplicate again (this also restores the parent order).
    lines = torch.cat([all_words[:, :BOARD_WORDS], all_parent.unsqueeze(1)], 1)
    return deduplicate(lines, _parent(lines), all_used)
