"""GNU Backgammon position ID: 14 characters for the checkers of both sides.

Format (GNU Backgammon manual, "A technical description of the Position ID"; gnubg ``positionid.c``):

* The *key* is a string of bits. For each side in turn, for each of its 25 places (its own points 1..24,
  numbered from that side, then its bar): as many 1-bits as it has checkers there, then one 0-bit. Two sides
  give 50 0-bits plus one 1-bit per checker: at most 15 + 15 + 50 = 80 bits, padded with 0-bits to 80.
* The bits are packed little-endian into 10 bytes: bit ``i`` of the string is bit ``i % 8`` of byte ``i // 8``.
* The ID is the standard Base64 (RFC 4648) of the 10 bytes without the ``==`` padding: 14 characters, the last
  carrying 2 key bits and 4 zero bits.

Which side comes first: the manual's prose says "the player on roll" first, but gnubg writes ``anBoard[0]``
first and ``anBoard[1]`` is the side on roll; a board gnubg draws with "On roll" beside X lists O's checkers in
the first half, and wildbg (``crates/engine/src/position/conversion.rs``: "Encoding the position for the
player not on roll" first) agrees. So the key holds the **opponent of the player on roll first**, then the
player on roll. The start position is symmetric, so ``4HPwATDgc/ABMA`` cannot tell the two orders apart; the
tests pin asymmetric IDs.

A position ID holds no checkers in hand (variants whose checkers start off the board): those boards cannot be
encoded. Borne-off checkers are implicit: whatever a side lacks of ``checkers_per_side``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence

import numpy as np
import torch

from engine.board import (
    BOARD_WIDTH,
    MOVER_BAR,
    MOVER_IN_HAND,
    OPPONENT_BAR,
    OPPONENT_IN_HAND,
    mover_checkers_on_board,
    opponent_checkers_on_board,
)
from engine.rules import STANDARD, Rules

BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
POSITION_ID_LENGTH = 14
POSITION_KEY_BYTES = 10
POSITION_KEY_BITS = 80
PLACES_PER_SIDE = 25  # points 1..24 and the bar
MAX_CHECKERS_PER_SIDE = 15  # the most the 80-bit key is specified for


def board_to_list(board: Sequence[int] | torch.Tensor) -> list[int]:
    """One position as 28 Python ints (layout in ``engine.board``), from a sequence or a tensor ``int[28]``."""
    if isinstance(board, torch.Tensor):
        if board.shape != (BOARD_WIDTH,):
            raise ValueError(f"a board is a tensor of shape ({BOARD_WIDTH},), not {tuple(board.shape)}")
        return [int(value) for value in board.tolist()]
    values = [int(value) for value in board]
    if len(values) != BOARD_WIDTH:
        raise ValueError(f"a board has {BOARD_WIDTH} entries, not {len(values)}")
    return values


def check_board_signs(values: list[int], what: str) -> None:
    """The sign conventions of the row: opponent's bar and in-hand <= 0, mover's >= 0."""
    if values[OPPONENT_BAR] > 0 or values[OPPONENT_IN_HAND] > 0:
        raise ValueError(f"{what}: the opponent's bar and in-hand counts must be <= 0")
    if values[MOVER_BAR] < 0 or values[MOVER_IN_HAND] < 0:
        raise ValueError(f"{what}: the mover's bar and in-hand counts must be >= 0")


def check_base64(text: str, length: int, what: str) -> list[int]:
    """The 6-bit values of ``text``, which must be ``length`` characters of the Base64 alphabet."""
    if not isinstance(text, str):
        raise TypeError(f"{what} {text!r}: must be a string")
    if len(text) != length:
        # A wrong length may be a whole stray file on one line: quote its start only (errors stay short).
        shown = repr(text) if len(text) <= 4 * length else repr(text[: 2 * length]) + "..."
        raise ValueError(f"{what} {shown}: must be {length} characters, not {len(text):,}")
    for index, character in enumerate(text):
        if character not in BASE64_ALPHABET:
            raise ValueError(f"{what} {text!r}: character {character!r} at {index} is not Base64")
    return [BASE64_ALPHABET.index(character) for character in text]


def key_to_base64(key: bytes, length: int) -> str:
    """Standard Base64 of ``key``, cut to ``length`` characters (gnubg drops the ``=`` padding)."""
    return base64.b64encode(key).decode("ascii")[:length]


def base64_to_key(text: str, key_bytes: int) -> int:
    """The key bytes behind a checked Base64 string, as one little-endian integer (bit i = key bit i)."""
    padded = text + "=" * (-len(text) % 4)
    key = base64.b64decode(padded)[:key_bytes]
    return int.from_bytes(key, "little")


def _runs_from_board(values: list[int]) -> list[int]:
    """The 50 checker counts in key order: the opponent's 25 places, then the mover's."""
    # The opponent's own point q is the mover's point 25 - q; its bar is index 0 (as a count <= 0).
    opponent = [max(0, -values[25 - q]) for q in range(1, 25)] + [-values[OPPONENT_BAR]]
    mover = [max(0, values[p]) for p in range(1, 25)] + [values[MOVER_BAR]]
    return opponent + mover


def encode_position_id(board: Sequence[int] | torch.Tensor) -> str:
    """The position ID of a board seen from the player on roll.

    ``board``: 28 ints or ``int[28]`` (layout in ``engine.board``). Raises ``ValueError`` for checkers in hand,
    more than 15 checkers a side, or a sign out of place.
    """
    values = board_to_list(board)
    check_board_signs(values, "position ID")
    if values[MOVER_IN_HAND] or values[OPPONENT_IN_HAND]:
        raise ValueError(
            f"position ID: checkers in hand (mover {values[MOVER_IN_HAND]}, opponent "
            f"{-values[OPPONENT_IN_HAND]}) cannot be written in a position ID"
        )
    runs = _runs_from_board(values)
    for side, counts in (("player on roll", runs[PLACES_PER_SIDE:]), ("opponent", runs[:PLACES_PER_SIDE])):
        if sum(counts) > MAX_CHECKERS_PER_SIDE:
            raise ValueError(
                f"position ID: {sum(counts)} checkers for the {side} (at most {MAX_CHECKERS_PER_SIDE})"
            )
    key = 0
    bit = 0
    for count in runs:
        key |= ((1 << count) - 1) << bit  # `count` 1-bits; `+ 1` leaves the closing 0-bit
        bit += count + 1
    return key_to_base64(key.to_bytes(POSITION_KEY_BYTES, "little"), POSITION_ID_LENGTH)


def decode_position_id(text: str, rules: Rules = STANDARD) -> torch.Tensor:
    """The board ``int8[28]`` (from the player on roll) that a position ID describes.

    Raises ``ValueError`` naming the problem: wrong length, a character outside Base64, a side with more than
    ``rules.checkers_per_side`` checkers, a point held by both sides, or bits set past the last checker.
    """
    sextets = check_base64(text, POSITION_ID_LENGTH, "position ID")
    # 14 characters carry 84 bits; the last character's low 4 bits lie past the 80-bit key.
    if sextets[-1] & 0b1111:
        raise ValueError(f"position ID {text!r}: trailing bits past the 80-bit key are not zero")
    key = base64_to_key(text, POSITION_KEY_BYTES)

    runs: list[int] = []
    bit = 0
    while len(runs) < 2 * PLACES_PER_SIDE:
        count = 0
        while bit < POSITION_KEY_BITS and (key >> bit) & 1:
            count += 1
            bit += 1
        if bit >= POSITION_KEY_BITS:
            raise ValueError(
                f"position ID {text!r}: the key ends after {len(runs)} of the {2 * PLACES_PER_SIDE} places "
                f"(too many checkers)"
            )
        bit += 1  # the 0-bit closing this place
        runs.append(count)
    if key >> bit:
        raise ValueError(f"position ID {text!r}: trailing bits after the last place are not zero")

    opponent, mover = runs[:PLACES_PER_SIDE], runs[PLACES_PER_SIDE:]
    limit = rules.checkers_per_side
    for side, counts in (("player on roll", mover), ("opponent", opponent)):
        if sum(counts) > limit:
            raise ValueError(
                f"position ID {text!r}: {sum(counts)} checkers for the {side} "
                f"(at most {limit} in {rules.name})"
            )
    for point in range(1, 25):
        # The mover's point p is the opponent's point 25 - p.
        if mover[point - 1] and opponent[25 - point - 1]:
            raise ValueError(
                f"position ID {text!r}: point {point} of the player on roll (the opponent's point "
                f"{25 - point}) holds checkers of both sides"
            )

    board = torch.zeros(BOARD_WIDTH, dtype=torch.int8)
    for point in range(1, 25):
        board[point] = mover[point - 1] - opponent[25 - point - 1]
    board[MOVER_BAR] = mover[24]
    board[OPPONENT_BAR] = -opponent[24]
    return board


# Checkers in hand (variants whose checkers start off the board): a position ID counts only the
# checkers on the points and the bar, so tools carry the checkers in hand beside it.


def with_checkers_in_hand(board: torch.Tensor, hand: tuple[int, int], rules: Rules) -> torch.Tensor:
    """``board`` (``int8[28]``, as decoded from a position ID) with ``hand`` = (the player on roll's,
    the opponent's) checkers put in hand. Raises ``ValueError`` naming the variant when its checkers
    never start in hand or a side would have more than its checkers."""
    if not rules.start_in_hand:
        raise ValueError(f"hand {hand[0]},{hand[1]}: no checkers are in hand in {rules.name}")
    for side, count, on_board in (("player on roll", hand[0], mover_checkers_on_board(board)),
                                  ("opponent", hand[1], opponent_checkers_on_board(board))):
        if count < 0 or int(on_board) + count > rules.checkers_per_side:
            raise ValueError(f"hand {hand[0]},{hand[1]}: {int(on_board)} checkers on the board and {count} in "
                             f"hand for the {side}, more than the {rules.checkers_per_side} of {rules.name}")
    board = board.clone()
    board[MOVER_IN_HAND] = hand[0]
    board[OPPONENT_IN_HAND] = -hand[1]
    return board


def with_checkers_in_hand_rows(board: torch.Tensor, hand: torch.Tensor, rules: Rules) -> torch.Tensor:
    """``with_checkers_in_hand`` of every row: ``board int8[N, 28]``, ``hand int[N, 2]``. If any row breaks a
    rule, the rows are done one by one by ``with_checkers_in_hand``, which raises its ``ValueError``."""
    mover = mover_checkers_on_board(board.to(torch.int64))
    opponent = opponent_checkers_on_board(board.to(torch.int64))
    fits = (hand >= 0).all(1) & (mover + hand[:, 0] <= rules.checkers_per_side) & (
        opponent + hand[:, 1] <= rules.checkers_per_side)
    if not rules.start_in_hand or not bool(fits.all()):
        return torch.stack([with_checkers_in_hand(row, (int(mine), int(theirs)), rules)
                            for row, (mine, theirs) in zip(board, hand.tolist())])
    board = board.clone()
    board[:, MOVER_IN_HAND] = hand[:, 0].to(board.dtype)
    board[:, OPPONENT_IN_HAND] = (-hand[:, 1]).to(board.dtype)
    return board


def split_checkers_in_hand(board: Sequence[int] | torch.Tensor) -> tuple[list[int], tuple[int, int]]:
    """``(the board without checkers in hand, (the player on roll's, the opponent's) checkers in hand)``:
    the first part is what a position ID holds."""
    values = board_to_list(board)
    hand = (values[MOVER_IN_HAND], -values[OPPONENT_IN_HAND])
    values[MOVER_IN_HAND] = values[OPPONENT_IN_HAND] = 0
    return values, hand


def _powers_of_two(exponents: np.ndarray) -> np.ndarray:
    """``2.0 ** exponents`` (float64, exact) for ``0 <= exponents <= 1023``, written as the bits of the
    float: shifts by a constant run many times faster in numpy than ``1 << exponents``, a shift by a
    column of amounts."""
    return ((exponents.astype(np.int64) + 1023) << 52).view(np.float64)


def _half_keys(runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(key int64[2, N], bits int64[2, N])``: the bits of each side's 25 places (``runs int8[2, 25, N]``):
    at most 15 1-bits and 25 0-bits, so 40 bits fit one integer.

    Place j closes with a 0-bit at ``z[j]`` (the running count of bits, less one), and every bit below the
    last one is a 1-bit but those: ``2**z[24] - 1 - sum(2**z[j], j < 24)``. Summed in float64, which holds
    every integer below 2**53 exactly; ``z`` is int8 (at most 39)."""
    zero_bit = np.full(runs.shape[::2], -1, dtype=np.int8)
    others = np.zeros(zero_bit.shape, dtype=np.float64)
    for place in range(PLACES_PER_SIDE - 1):
        zero_bit += runs[:, place] + 1
        others += _powers_of_two(zero_bit)
    zero_bit += runs[:, PLACES_PER_SIDE - 1] + 1
    key = _powers_of_two(zero_bit) - 1 - others
    return key.astype(np.int64), zero_bit.astype(np.int64) + 1


def encode_position_ids(boards: torch.Tensor) -> list[str]:
    """``encode_position_id`` of every row of ``int8[N, 28]`` at once (array operations, one Base64 call),
    for boards the engine produced: checkers in hand are left out (``split_checkers_in_hand``), nothing
    else is checked. Tested against the scalar encoder."""
    text = position_id_characters(boards).tobytes().decode("ascii")
    return [text[start : start + POSITION_ID_LENGTH] for start in range(0, len(text), POSITION_ID_LENGTH)]


def position_id_characters(boards: torch.Tensor) -> np.ndarray:
    """``uint8[N, 14]``: the ASCII characters of ``encode_position_ids(boards)``, for writing in bulk."""
    count = boards.shape[0]
    if count == 0:
        return np.zeros((0, POSITION_ID_LENGTH), dtype=np.uint8)
    values = np.ascontiguousarray(boards[:, :26].cpu().numpy().T)  # node-major: each place is one row
    # Key order: the opponent's places (its point q is the mover's 25 - q, its bar index 0), then the mover's.
    # max(x, 0) against an array of zeros: numpy runs it many times faster than against the number 0.
    zero = np.zeros((PLACES_PER_SIDE, count), dtype=np.int8)
    runs = np.empty((2, PLACES_PER_SIDE, count), dtype=np.int8)
    runs[0, :24] = np.maximum(-values[24:0:-1], zero[:24])
    runs[0, 24] = np.maximum(-values[OPPONENT_BAR], zero[0])
    runs[1] = np.maximum(values[1:26], zero)
    (opponent, mover), (shift, _) = _half_keys(runs)
    # The 80-bit key as its 64 low bits (wrapping, two's complement) and 16 high bits; shift <= 40.
    low = opponent + mover * (1 << shift)
    high = mover >> (64 - shift)
    # Two zero bytes per row make it 12 bytes, a whole number of Base64 groups: row i is then characters
    # 16i .. 16i + 13 of one encoding, the same as gnubg's 14 characters of the 10 bytes.
    key = np.zeros((count, POSITION_KEY_BYTES + 2), dtype=np.uint8)
    key[:, :8] = low.astype("<i8").view(np.uint8).reshape(count, 8)
    key[:, 8:10] = high.astype("<u2").view(np.uint8).reshape(count, 2)
    text = np.frombuffer(base64.b64encode(key.tobytes()), dtype=np.uint8)
    return text.reshape(count, 16)[:, :POSITION_ID_LENGTH]


_BASE64_CHARACTERS = re.compile(f"[{re.escape(BASE64_ALPHABET)}]*")


def decode_position_ids(texts: Sequence[str], rules: Rules = STANDARD) -> torch.Tensor:
    """``decode_position_id`` of every text at once: ``int8[N, 28]``.

    The checks are done on whole arrays; if any text fails one, the texts are decoded one by one by
    ``decode_position_id``, which raises the ``ValueError`` of the first bad one (so the messages are the
    scalar decoder's, and a check the arrays might miss cannot let a bad ID through unnoticed either way).
    Tested against the scalar decoder on valid and malformed IDs."""
    count = len(texts)
    if count == 0:
        return torch.zeros(0, BOARD_WIDTH, dtype=torch.int8)
    joined = "AA".join(texts) + "AA"  # 16 characters (12 bytes) a row when every text has 14
    if (
        len(joined) != 16 * count
        or any(len(text) != POSITION_ID_LENGTH for text in texts)
        or not _BASE64_CHARACTERS.fullmatch(joined)
    ):
        return _decode_one_by_one(texts, rules)
    key = np.frombuffer(base64.b64decode(joined), dtype=np.uint8).reshape(count, 12)
    bits = np.unpackbits(key[:, :POSITION_KEY_BYTES], axis=1, bitorder="little").astype(np.int64)
    zeros = 1 - bits
    place = np.cumsum(zeros, axis=1) - zeros  # the place each bit belongs to (0-bits close places)
    # The 1-bits of each place counted, the places past the 50th (which must hold none) as one.
    places = 2 * PLACES_PER_SIDE + 1
    slot = np.minimum(place, places - 1) + places * np.arange(count)[:, None]
    runs = np.bincount(slot.ravel(), weights=bits.ravel(), minlength=count * places)
    runs = runs.astype(np.int64).reshape(count, places)
    opponent, mover = runs[:, :PLACES_PER_SIDE], runs[:, PLACES_PER_SIDE : 2 * PLACES_PER_SIDE]
    opponent_points = opponent[:, 23::-1]  # the opponent's point 25 - p, at the mover's point p
    bad = (
        (key[:, POSITION_KEY_BYTES] != 0)  # bits of the last character past the 80-bit key
        | (zeros.sum(1) < 2 * PLACES_PER_SIDE)  # the key ends before the last place is closed
        | (runs[:, 2 * PLACES_PER_SIDE] != 0)  # 1-bits after the last place
        | (mover.sum(1) > rules.checkers_per_side)
        | (opponent.sum(1) > rules.checkers_per_side)
        | ((mover[:, :24] > 0) & (opponent_points > 0)).any(1)
    )
    if bad.any():
        return _decode_one_by_one(texts, rules)
    board = np.zeros((count, BOARD_WIDTH), dtype=np.int8)
    board[:, 1:25] = mover[:, :24] - opponent_points
    board[:, MOVER_BAR] = mover[:, 24]
    board[:, OPPONENT_BAR] = -opponent[:, 24]
    return torch.from_numpy(board)


def _decode_one_by_one(texts: Sequence[str], rules: Rules) -> torch.Tensor:
    return torch.stack([decode_position_id(text, rules) for text in texts])
