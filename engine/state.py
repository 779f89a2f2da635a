"""The batched game state: an immutable bundle of tensors, always seen from the side to move."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from engine.board import flip_board


@dataclass(frozen=True)
class State:
    """B games at once; every field has a leading batch dimension.

    ``board: int8[B, 28]``   the position from the side to move (layout in ``engine.board``).
    ``dice: int8[B, 2]``     the roll the side to move plays now, larger die first.
    ``seat: int8[B]``        which seat (0 or 1) is to move; the opening roll decides which seat starts.
    ``turn: int32[B]``       turns played so far in the game (0 before the first move).
    ``game_over: bool[B]``   the game has ended; its fields no longer change.
    ``result: int8[B]``      points won by seat 0 (negative when seat 1 won) once over, else 0.
    """

    board: torch.Tensor
    dice: torch.Tensor
    seat: torch.Tensor
    turn: torch.Tensor
    game_over: torch.Tensor
    result: torch.Tensor

    @property
    def batch_size(self) -> int:
        return self.board.shape[0]

    @property
    def device(self) -> torch.device:
        return self.board.device

    def to(self, device: torch.device | str) -> State:
        return State(*(getattr(self, name).to(device) for name in _FIELDS))

    def select(self, index: torch.Tensor) -> State:
        """The games at ``index`` (a long index or bool mask over the batch)."""
        return State(*(getattr(self, name)[index] for name in _FIELDS))

    def where(self, mask: torch.Tensor, other: State) -> State:
        """Per game: ``other``'s fields where ``mask: bool[B]`` is true, else this state's."""
        fields = []
        for name in _FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            m = mask.view(-1, *([1] * (mine.dim() - 1)))
            fields.append(torch.where(m, theirs, mine))
        return State(*fields)


_FIELDS = ("board", "dice", "seat", "turn", "game_over", "result")


def flip(state: State) -> State:
    """The same games seen from the other side: board flipped and the seat to move swapped.

    Dice are left as they are: they belong to whoever is to move next, which the caller sets.
    """
    return replace(state, board=flip_board(state.board), seat=1 - state.seat)
