"""Shared test helpers: boards from drawings and from checker lists, random valid positions built
batched, the weight of a roll, tiny checkpoints, whether GNU Backgammon's bindings are installed, the
engine's compile mode for a block, value functions from plain functions."""

from __future__ import annotations

import textwrap
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import pytest
import torch

from engine import kernels
from engine.board import BOARD_WIDTH, MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND, flip_board
from engine.rules import STANDARD, Rules

# --- boards -------------------------------------------------------------------------------------


def board_from_drawing(drawing: str) -> tuple[int, ...]:
    """A 28-int board row from a drawing: the point labels 13..24 above a row of cells, a row of cells
    above the labels 12..1 (a cell is ``.``, ``X<n>`` for the mover's n checkers or ``O<n>`` for the
    opponent's), then optional lines ``bar X<n> O<m>`` and ``hand X<n> O<m>``::

         13  14  15  16  17  18 | 19  20  21  22  23  24
         X5   .   .   .  O3   . | O5   .   .   .   .  X2
         O5   .   .   .  X3   . | X5   .   .   .   .  O2
         12  11  10   9   8   7 |  6   5   4   3   2   1
    """
    lines = [line.split() for line in textwrap.dedent(drawing).strip().splitlines()]
    top_labels, top_cells, bottom_cells, bottom_labels, *extra = lines
    board = [0] * BOARD_WIDTH
    for labels, cells in ((top_labels, top_cells), (bottom_labels, bottom_cells)):
        labels = [label for label in labels if label != "|"]
        cells = [cell for cell in cells if cell != "|"]
        assert len(labels) == len(cells) == 12, drawing
        for label, cell in zip(labels, cells):
            if cell != ".":
                assert cell[0] in "XO", cell
                board[int(label)] = int(cell[1:]) * (1 if cell[0] == "X" else -1)
    for line in extra:
        where, mover, opponent = line
        assert mover[0] == "X" and opponent[0] == "O", line
        mover_index, opponent_index = {
            "bar": (MOVER_BAR, OPPONENT_BAR),
            "hand": (MOVER_IN_HAND, OPPONENT_IN_HAND),
        }[where]
        board[mover_index] = int(mover[1:])
        board[opponent_index] = -int(opponent[1:])
    return tuple(board)


def board_from_counts(counts: dict[int, int], mover_bar: int = 0, opponent_bar: int = 0) -> torch.Tensor:
    """``int8[28]`` from ``{index: signed count}`` in the board layout (``engine.board``: 1..24 the
    points from the mover's side, > 0 the mover's) and the two bars; every other checker is borne off."""
    board = torch.zeros(BOARD_WIDTH, dtype=torch.int8)
    for index, count in counts.items():
        board[index] = count
    board[MOVER_BAR] += mover_bar
    board[OPPONENT_BAR] -= opponent_bar
    return board


def bearoff_board(mover: tuple[int, ...], opponent: tuple[int, ...]) -> torch.Tensor:
    """``int8[28]``: one of the mover's checkers on each of its points ``mover`` and one of the opponent's on
    each of ITS points ``opponent`` (its point k is the mover's 25 - k); repeat a point for more."""
    board = torch.zeros(BOARD_WIDTH, dtype=torch.int8)
    for point in mover:
        board[point] += 1
    for point in opponent:
        board[25 - point] -= 1
    return board


def roll_weight(roll: tuple[int, int]) -> Fraction:
    """The chance of a roll: 1/36 for a double, 2/36 for the others (either die first)."""
    return Fraction(1 if roll[0] == roll[1] else 2, 36)


def _place(generator: torch.Generator, weights: torch.Tensor, checkers: int) -> torch.Tensor:
    """Counts per location after dropping ``checkers`` checkers independently with ``weights: float[B, L]``."""
    picks = torch.multinomial(weights, checkers, replacement=True, generator=generator)
    counts = torch.zeros_like(weights, dtype=torch.long)
    return counts.scatter_add_(1, picks, torch.ones_like(picks))


def random_boards(
    count: int, seed: int = 0, rules: Rules = STANDARD, in_hand: bool = False, race: bool = False
) -> torch.Tensor:
    """``int8[count, 28]`` valid positions: ``rules.checkers_per_side`` checkers a side, no point holding both
    colours, some checkers on the bar and some borne off (and in hand when ``in_hand``), the mover's
    checkers spread more or less towards home from row to row so that bear-offs occur too.
    With ``race`` every position is a race: each side only on its own points 1..12, none on the bar.
    """
    generator = torch.Generator().manual_seed(seed)
    checkers = rules.checkers_per_side

    def side_weights(occupied: torch.Tensor | None) -> torch.Tensor:
        # locations: 0 borne off, 1..24 the side's own points, 25 bar, 26 in hand
        weights = torch.zeros(count, 27)
        skew = torch.rand(count, 1, generator=generator) * 3.0  # > 0 leans towards the side's home
        points = torch.arange(1, 25, dtype=torch.float32)
        weights[:, 1:25] = torch.exp(-skew * points / 24.0) * (
            torch.rand(count, 24, generator=generator) < 0.6
        )
        weights[:, 0] = torch.rand(count, generator=generator) * (
            torch.rand(count, generator=generator) < 0.4
        )
        weights[:, 25] = 0.15 * (torch.rand(count, generator=generator) < 0.3)
        if in_hand:
            weights[:, 26] = 0.5 * (torch.rand(count, generator=generator) < 0.3)
        if race:
            weights[:, 13:] = 0.0
        if occupied is not None:
            weights[:, 1:25] *= ~occupied
        weights[:, 1] += 1e-3 * (weights.sum(-1) == 0)
        return weights

    mover = _place(generator, side_weights(None), checkers)
    # The opponent's point j is the mover's point 25 - j.
    occupied_by_mover = (mover[:, 1:25] > 0).flip(-1)
    opponent = _place(generator, side_weights(occupied_by_mover), checkers)

    board = torch.zeros(count, 28, dtype=torch.long)
    board[:, 1:25] = mover[:, 1:25] - opponent[:, 1:25].flip(-1)
    board[:, MOVER_BAR] = mover[:, 25]
    board[:, OPPONENT_BAR] = -opponent[:, 25]
    board[:, MOVER_IN_HAND] = mover[:, 26]
    board[:, OPPONENT_IN_HAND] = -opponent[:, 26]
    return board.to(torch.int8)


@contextmanager
def compile_mode(mode: str):
    """Run the block with ``engine.kernels`` in ``mode`` ("always" compiles every large call, "never"
    runs op by op), so a test can check both paths whatever the environment says."""
    previous = kernels.set_mode(mode)
    try:
        yield
    finally:
        kernels.set_mode(previous)
    if mode == "always" and kernels.compile_failed():
        # Without a working compiler the "compiled" results were op by op: nothing was checked.
        pytest.skip("torch.compile does not work here, so the compiled kernels cannot be tested")


class FunctionValue:
    """A ``bgtrain.values.static_value.ValueFunction`` from ``evaluate(board int8[N, 28]) -> float[N, 5]``
    (for the side to move) alone."""

    def __init__(self, evaluate) -> None:
        self.evaluate = evaluate

    def evaluate_flipped(self, afterstates: torch.Tensor) -> torch.Tensor:
        return self.evaluate(flip_board(afterstates))


# --- files and optional programs -------------------------------------------------------------------


def tiny_checkpoint(path: Path, seed: int = 5, hidden=(8,), encoder: str = "tesauro198", **payload) -> Path:
    """A loadable checkpoint of a small seeded network at ``path``; ``payload`` adds or replaces entries."""
    from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
    from bgtrain.model.network import ValueNetwork
    from bgtrain.training.config import Config

    torch.manual_seed(seed)
    network = ValueNetwork(encoder, list(hidden), "sigmoid")
    return save_checkpoint(path, {**checkpoint_payload(network, Config()), **payload})


def tiny_evaluator(seed: int):
    """An evaluator on a small seeded 198-8-5 network, without bear-off databases: a teacher whose labels
    cost nothing, for dataset tests."""
    from bgtrain.model.network import ValueNetwork
    from bgtrain.values.evaluator import Evaluator

    torch.manual_seed(seed)
    return Evaluator.from_network(ValueNetwork("tesauro198", (8,)).eval(), bearoff=False)


def tiny_dataset(directory: Path, evaluator, settings, ply: int = 0, **options) -> dict:
    """``generate_dataset`` into ``directory`` by ``evaluator``'s self-play, labelled by it at ``ply``
    (the labeller's model named ``"tiny"``); returns the manifest."""
    from bgtrain.datasets import PlyLabeller
    from bgtrain.datasets.generate import generate_dataset

    return generate_dataset(directory, evaluator, PlyLabeller(evaluator, ply, "tiny"), settings, "tiny",
                            progress=False, **options)


def tiny_plays(directory: Path) -> tuple[Path, Path]:
    """(source, plays): 40 self-play positions of ``tiny_evaluator(1)`` in ``directory/source``, and every play of
    their rolls labelled by its 0-ply in ``directory/plays`` (a plays dataset: its rows keep their groups)."""
    from bgtrain.datasets import PlyLabeller
    from bgtrain.datasets.generate import GenerationSettings
    from bgtrain.datasets.plays import PlaySelection
    from bgtrain.datasets.relabel import relabel_dataset

    teacher = tiny_evaluator(1)
    source, plays = directory / "source", directory / "plays"
    tiny_dataset(source, teacher, GenerationSettings(positions=40, shard_size=20, seed=5, games_in_parallel=24,
                                                     burn_in_turns=10, sample_rate=0.5, select_ply=0))
    relabel_dataset(plays, source, PlyLabeller(teacher, 0, "teacher"), plays=PlaySelection(top=1000, others=0, seed=3),
                    progress=False)
    return source, plays


def has_gnubg() -> bool:
    """Whether GNU Backgammon's neural-net bindings (``pip install gnubg-nn``) can be imported."""
    try:
        import gnubg_nn  # noqa: F401
    except ImportError:
        return False
    return True
