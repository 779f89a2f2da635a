"""Rolling out the candidate plays of one roll with common dice.

The candidates are the evaluator's (``Evaluator.hint`` at the rollout's ply): the plays its move filter
keeps (``MoveFilter``: the best ``keep`` within ``threshold`` of the best at 0-ply), at most ``top`` of
them, best first. Each candidate's afterstate is rolled out from the opponent's side, every candidate
on the SAME dice stream, so trial t of every candidate sees the same rolls: the trials' results are
strongly correlated and the difference between two plays, averaged trial by trial, has a much smaller
standard error than either equity (GNU Backgammon rolls out its move candidates the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bgtrain.cube import CubeState
from bgtrain.outcomes import cubeless_equity, flip_outcomes
from bgtrain.rollout.chunks import rollout_in_chunks
from bgtrain.rollout.play import DEFAULT_SETTINGS, RolloutSettings
from bgtrain.rollout.result import RolloutResult, mean_and_error
from bgtrain.values.evaluator import Evaluator
from engine.board import flip_board


@dataclass(frozen=True)
class PlaysRollout:
    """Candidate plays of one roll and the rollout of the position after each (``result``: positions
    from the opponent's side, to move). Everything below is from the side that plays the roll."""

    plays: tuple[str, ...]
    afterstates: torch.Tensor  # int8[C, 28], the mover's side
    evaluator_equities: tuple[float, ...]  # the evaluator's equity of each play at the rollout's ply
    result: RolloutResult

    def outcomes_per_trial(self) -> torch.Tensor:
        """``float64[C, T, 5]`` for the mover."""
        return flip_outcomes(self.result.outcomes)

    def equity_per_trial(self) -> torch.Tensor:
        """The mover's headline equity of each trial (cubeful with the cube, else cubeless): ``float64[C, T]``."""
        if self.result.cubeful is not None:
            return -self.result.cubeful
        return cubeless_equity(self.outcomes_per_trial(), self.result.rules)

    def probabilities(self) -> tuple[torch.Tensor, torch.Tensor]:
        return mean_and_error(self.outcomes_per_trial())

    def equities(self) -> tuple[torch.Tensor, torch.Tensor]:
        return mean_and_error(self.equity_per_trial())

    def best(self) -> int:
        return int(self.equities()[0].argmax())

    def differences(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Each play's equity minus the best's, and the standard error of that difference, from the
        trial-by-trial differences (common dice): ``float64[C]`` each (0 and 0 for the best)."""
        per_trial = self.equity_per_trial()
        difference = per_trial - per_trial[self.best()]
        mean, error = mean_and_error(difference)
        return mean, torch.where(difference.abs().amax(1) == 0, torch.zeros_like(error), error)


def candidate_plays(evaluator: Evaluator, board: torch.Tensor, dice: tuple[int, int], ply: int, top: int):
    """The move filter's candidates of ``board: int8[28]`` with ``dice``, best first, at most ``top``."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be a positive number of plays, not {top!r}")
    roll = torch.tensor([dice], dtype=torch.int8, device=board.device)
    hints = evaluator.hint(board.unsqueeze(0), roll, ply)[0]
    if ply:
        kept = [move for move in hints if move.ply == ply]
    else:
        settings = evaluator.move_filter
        kept = [move for move in hints[: settings.keep] if move.equity >= hints[0].equity - settings.threshold]
    return kept[:top]


def rollout_plays(
    evaluator: Evaluator,
    board: torch.Tensor,
    dice: tuple[int, int],
    settings: RolloutSettings = DEFAULT_SETTINGS,
    *,
    top: int = 5,
    cube: CubeState | None = None,
    **chunking,
) -> PlaysRollout:
    """Roll out the candidate plays of ``dice`` in ``board: int8[28]`` (side to move) with common dice.

    ``cube``: the cube before the play, from the mover's side. ``chunking``: ``seed``, ``trials``,
    ``chunk``, ``target_error``, ``progress`` (``rollout_in_chunks``).
    """
    candidates, boards, streams, cubes = candidate_rollout(evaluator, board, dice, settings.ply, top, cube)
    result = rollout_in_chunks(evaluator, boards, settings, streams=streams, cubes=cubes, sign=-1.0,
                               description=f"plays of {dice[0]}{dice[1]}", **chunking)
    return plays_rollout(candidates, boards, result)


def candidate_rollout(evaluator: Evaluator, board: torch.Tensor, dice: tuple[int, int], ply: int, top: int,
                      cube: CubeState | None = None):
    """The candidates of ``dice`` (``candidate_plays``) and what their rollout starts from: the
    afterstates from the opponent's side (``int8[C, 28]``), one common dice stream for all
    (``int64[C]`` zeros) and the cube from the opponent's side."""
    candidates = candidate_plays(evaluator, board, dice, ply, top)
    afterstates = torch.tensor([move.board for move in candidates], dtype=torch.int8, device=board.device)
    streams = torch.zeros(len(candidates), dtype=torch.int64, device=board.device)  # common dice
    return candidates, flip_board(afterstates), streams, (cube or CubeState()).flipped()


def plays_rollout(candidates, boards: torch.Tensor, result: RolloutResult) -> PlaysRollout:
    """The ``PlaysRollout`` of ``candidates`` from the rollout ``result`` of ``boards`` (their
    afterstates from the opponent's side, as ``candidate_rollout`` gives them)."""
    return PlaysRollout(tuple(move.play for move in candidates), flip_board(boards),
                        tuple(move.equity for move in candidates), result)
