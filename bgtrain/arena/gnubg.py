"""GNU Backgammon as an opponent, through its Python bindings from PyPI: ``pip install gnubg-nn``
(import name ``gnubg_nn``; used when present) or the bindings of the whole program, ``pip install gnubg``.

``GnubgAgent(ply)`` plays GNU Backgammon's best move at 0, 1 or 2 ply (gnubg's numbering: 0-ply is
the neural net alone, plus its bear-off databases) for every game of a batch, one ``best_move``
call per game whose roll leaves a choice. The bindings evaluate cubeless money play.

The bindings' board is ``[opponent, player_on_roll]``, two lists of 25 counts, each seen from its
own side: index ``i`` is that side's point ``i + 1`` and index 24 its bar. (Pinned in
``tests/test_gnubg_agent.py``: gnubg's ``position_id`` of the converted board equals
``engine.position_id.encode_position_id`` of ours, from both sides, and the side it moves is the
second list.) A chosen move comes back as up to four ``(from, to)`` steps in the mover's
numbering, 25 for the bar and 0 for off; the adapter plays them on our board and looks the result
up among the engine's legal afterstates, so a conversion bug cannot slip an illegal or misread
move into a match: it stops with an error naming the position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from engine.board import MOVER_BAR, OPPONENT_BAR, flip_board
from engine.game import winning_points
from engine.movegen import Afterstates, legal_afterstates
from engine.position_id import encode_position_id
from engine.reference import BORNE_OFF, move_checker
from engine.rules import STANDARD, Rules
from engine.state import State

INSTALL_HINT = "gnubg opponents need `pip install gnubg-nn` (or `pip install 'bgtrain[gnubg]'`)"
PLIES = (0, 1, 2)
GNUBG_BAR = 24  # index of the bar in each side's 25 counts
GNUBG_BAR_POINT = 25  # the bar as a move's source
GNUBG_OFF_POINT = 0  # off the board as a move's destination


class NeuralNetBindings:
    """``gnubg-nn`` (import name ``gnubg_nn``): GNU Backgammon's evaluation as a small extension."""

    package = "gnubg-nn"

    def __init__(self, module: Any) -> None:
        self.module = module

    def best_move(self, board: list[list[int]], die1: int, die2: int, ply: int) -> tuple:
        return tuple(self.module.best_move(board, die1, die2, n=ply))

    def probabilities(self, board: list[list[int]], ply: int) -> tuple[float, ...]:
        return tuple(self.module.probabilities(board, ply))

    def position_id(self, board: list[list[int]]) -> str:
        return self.module.position_id(board)


class FullBindings:
    """``gnubg`` (import name ``gnubg``): the bindings of the whole program; evaluated cubeless
    (``evalcontext(cubeful=0, plies, deterministic=1)``), money cube, its default move filters."""

    package = "gnubg"

    def __init__(self, module: Any) -> None:
        self.module = module
        self.cube = module.cubeinfo()
        self.contexts: dict[int, Any] = {}

    def _context(self, ply: int) -> Any:
        if ply not in self.contexts:
            self.contexts[ply] = self.module.evalcontext(0, ply, 1, 0, 0.0)
        return self.contexts[ply]

    def best_move(self, board: list[list[int]], die1: int, die2: int, ply: int) -> tuple | None:
        """The steps of the best play, or None when the bindings cut them short: they write the
        play as a flat tuple that ends at the first checker borne off (its 0 and every step after it
        are lost), so an odd length means a bear-off hid the rest."""
        flat = self.module.findbestmove(board, self.cube, self._context(ply), (die1, die2))
        if len(flat) % 2:
            return None
        return tuple(zip(flat[0::2], flat[1::2]))

    def equity(self, board: list[list[int]], ply: int) -> float:
        """Cubeless equity of the player on roll."""
        return float(self.module.evaluate(board, self.cube, self._context(ply))[5])

    def probabilities(self, board: list[list[int]], ply: int) -> tuple[float, ...]:
        return tuple(self.module.evaluate(board, self.cube, self._context(ply))[:5])

    def position_id(self, board: list[list[int]]) -> str:
        return self.module.positionid(board)


def load_bindings() -> NeuralNetBindings | FullBindings:
    """GNU Backgammon's Python bindings: ``gnubg-nn`` when installed, else ``gnubg``; a ValueError with
    the install command when neither is."""
    try:
        import gnubg_nn
    except ImportError:
        pass
    else:
        return NeuralNetBindings(gnubg_nn)
    try:
        import gnubg
    except ImportError:
        raise ValueError(INSTALL_HINT) from None
    if not hasattr(gnubg, "findbestmove"):
        raise ValueError(f"the installed 'gnubg' module is not GNU Backgammon's bindings; {INSTALL_HINT}")
    return FullBindings(gnubg)


def to_gnubg_board(board: Sequence[int]) -> list[list[int]]:
    """Our board (28 ints, from the side to move) -> gnubg's ``[opponent[25], player_on_roll[25]]``.

    The opponent's own point q is our point 25 - q; its bar is our index 0 (a count <= 0).
    """
    opponent = [max(0, -int(board[25 - q])) for q in range(1, 25)] + [-int(board[OPPONENT_BAR])]
    mover = [max(0, int(board[p])) for p in range(1, 25)] + [int(board[MOVER_BAR])]
    return [opponent, mover]


def from_gnubg_board(board: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """gnubg's ``[opponent[25], player_on_roll[25]]`` -> our board (28 ints, from the side on roll)."""
    opponent, mover = board
    row = [0] * 28
    for point in range(1, 25):
        row[point] = int(mover[point - 1]) - int(opponent[25 - point - 1])
    row[MOVER_BAR] = int(mover[GNUBG_BAR])
    row[OPPONENT_BAR] = -int(opponent[GNUBG_BAR])
    return tuple(row)


def gnubg_probabilities(bindings: NeuralNetBindings | FullBindings, boards: torch.Tensor, ply: int,
                        dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """GNU Backgammon's outcome probabilities at ``ply`` for the side to move, before its roll, of
    unfinished positions: ``int8[B, 28]`` -> ``float[B, 5]`` on the boards' device, in the order of
    ``bgtrain.outcomes`` (gnubg's own). One call a position: the bindings have no batched entry point
    (a 1-ply evaluation is about 1.7 ms of C, the conversion a few microseconds of Python)."""
    rows = [bindings.probabilities(to_gnubg_board(board), ply) for board in boards.tolist()]
    return torch.tensor(rows, dtype=dtype, device=boards.device).reshape(-1, 5)


def apply_gnubg_move(board: Sequence[int], steps: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Play gnubg's ``((from, to), ...)`` steps (mover's numbering, 25 = bar, 0 = off) on our board.

    A step onto a single opposing checker hits it (to the opponent's bar, index 0). Only what is
    needed to replay a legal move is checked; legality is checked by the afterstate lookup.
    """
    row = [int(count) for count in board]
    for source, target in steps:
        origin = MOVER_BAR if source == GNUBG_BAR_POINT else source
        if not 1 <= origin <= MOVER_BAR or row[origin] <= 0:
            raise ValueError(f"gnubg move {tuple(steps)}: no checker of the mover on {source}")
        move_checker(row, origin, BORNE_OFF if target <= GNUBG_OFF_POINT else target)
    return tuple(row)


def locate_afterstates(chosen: torch.Tensor, afterstates: Afterstates, positions: torch.Tensor) -> torch.Tensor:
    """Where each ``chosen`` board lies among its position's afterstates: ``int64[K]`` indices within
    each position (as ``Agent.choose`` returns them), ``-1`` where it is not one of them.

    ``chosen: int8[K, 28]`` boards for the positions ``positions: int64[K]`` of ``afterstates``.
    """
    device = afterstates.boards.device
    positions = positions.to(device)
    counts, offsets = afterstates.counts[positions], afterstates.offsets[positions]
    owner = torch.repeat_interleave(torch.arange(positions.numel(), device=device), counts)
    starts = torch.cumsum(counts, 0) - counts
    within = torch.arange(int(counts.sum()), device=device) - starts[owner]
    same = (afterstates.boards[offsets[owner] + within] == chosen.to(device)[owner]).all(1)
    found = torch.full((positions.numel(),), -1, dtype=torch.int64, device=device)
    return found.scatter_reduce(0, owner[same], within[same], "amax")


class GnubgAgent:
    """GNU Backgammon's checker play at ``ply`` (0, 1 or 2), cubeless money."""

    def __init__(self, ply: int = 0, rules: Rules = STANDARD) -> None:
        if ply not in PLIES:
            raise ValueError(f"gnubg plays at {', '.join(f'{p}ply' for p in PLIES)}, not {ply}ply")
        if rules != STANDARD and rules.name != "nackgammon":
            # gnubg-nn has no variant setting: its nets play any 15-checker board under standard rules,
            # as GNU Backgammon itself plays nackgammon, but hypergammon's databases are not in it.
            raise ValueError(f"gnubg opponents play backgammon and nackgammon only, not {rules.name!r}")
        self.bindings = load_bindings()
        self.ply = ply
        self.rules = rules
        self.name = f"gnubg:{ply}ply"

    def best_boards(self, boards: torch.Tensor, dice: torch.Tensor) -> torch.Tensor:
        """gnubg's chosen afterstate of each position: ``int8[B, 28]`` boards and ``int[B, 2]`` dice."""
        chosen = []
        for board, (die1, die2) in zip(boards.tolist(), dice.tolist()):
            steps = self.bindings.best_move(to_gnubg_board(board), int(die1), int(die2), self.ply)
            if steps is None:
                chosen.append(self._best_by_evaluation(board, (int(die1), int(die2))))
            else:
                chosen.append(apply_gnubg_move(board, steps))
        return torch.tensor(chosen, dtype=torch.int8).reshape(-1, 28)

    def _best_by_evaluation(self, board: list[int], dice: tuple[int, int]) -> tuple[int, ...]:
        """The legal afterstate of highest cubeless equity for the mover under gnubg's evaluation at
        this ply (a finished game is worth its points): what gnubg plays, used where the ``gnubg``
        bindings cannot say which play they chose (see ``FullBindings.best_move``)."""
        afterstates = legal_afterstates(torch.tensor([board], dtype=torch.int8), torch.tensor([dice]), self.rules)
        points = winning_points(afterstates.boards, self.rules).tolist()
        best, best_equity = None, float("-inf")
        for row, won in zip(afterstates.boards.tolist(), points):
            if won:
                equity = float(won)
            else:
                opponent_view = flip_board(torch.tensor(row, dtype=torch.int8)).tolist()
                equity = -self.bindings.equity(to_gnubg_board(opponent_view), self.ply)
            if equity > best_equity:
                best, best_equity = tuple(row), equity
        return best

    def cube_probabilities(self, boards: torch.Tensor) -> torch.Tensor:
        """gnubg's outcome probabilities at this agent's ply for the side to move, before its roll:
        ``int8[B, 28]`` -> ``float32[B, 5]`` in the order of ``bgtrain.outcomes`` (gnubg's own order)."""
        return gnubg_probabilities(self.bindings, boards, self.ply)

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        choice = torch.zeros_like(afterstates.counts)
        # A forced move (one afterstate) needs no call into gnubg.
        open_choice = (afterstates.counts > 1).nonzero(as_tuple=True)[0]
        if open_choice.numel() == 0:
            return choice
        boards, dice = state.board[open_choice].cpu(), state.dice[open_choice].cpu()
        chosen = self.best_boards(boards, dice)
        found = locate_afterstates(chosen, afterstates, open_choice)
        missing = (found < 0).nonzero(as_tuple=True)[0]
        if missing.numel():
            index = int(missing[0])
            roll = dice[index].tolist()
            raise RuntimeError(
                f"gnubg's play in position {encode_position_id(boards[index])} with {roll[0]}-{roll[1]} is not "
                f"a legal afterstate of the engine (its resulting board: {chosen[index].tolist()}); the "
                "board conversion is wrong"
            )
        choice[open_choice] = found
        return choice
