"""The batched analysis of many games at once: checker plays, cube decisions and luck.

Every turn of every file goes through the same few calls, a chunk of ``TURN_CHUNK`` turns at a time:
one ``legal_afterstates`` for all their rolls, one 0-ply evaluation of every legal play, one n-ply
evaluation of the move filter's survivors (and of the play made, so that the played and the best play
are always compared at the same ply, as GNU Backgammon does), one 1-ply evaluation of the positions
before the rolls for the luck. No forward pass runs for a single decision.

Equities (GNU Backgammon's scale): a play is valued by the mover's equity after it, normalised to the
cube, with ``cubeless=False`` (the default) cubeful: Janowski's 0-ply cubeful equity
(``bgtrain.cube.cubeful_equity``) of the position the opponent then rolls in, with the cube and the
score as they stand (EMG in a match), on the outcome probabilities searched at the chosen ply; with
``cubeless=True`` the cubeless money equity (what a cubeless money session is played for). A play's
loss is the best play's equity minus the played one's, a cube decision's the cost ``bgtrain.cube``
gives the wrong action.

Luck of a roll (cubeless, normalised to the cube): the 0-ply equity of the best play of the roll
minus the average of the same over the 21 rolls (the 1-ply value of the position before the roll,
``luck="rolls"``, what GNU Backgammon computes), or minus the 0-ply value of that position
(``luck="static"``: 20 times cheaper, biased by whatever the network's value and its roll average
disagree on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from bgtrain.analysis.games import CubePoint, Turn
from bgtrain.cube import (
    MatchGame,
    TakeAction,
    action_label,
    cube_decision,
    cubeful_equity,
    is_double,
    mwc_to_emg,
)
from bgtrain.cube.decision import CubeAction
from bgtrain.cube.efficiency import cube_efficiency
from bgtrain.outcomes import cubeless_equity, flip_outcomes
from bgtrain.values.evaluator import Evaluator
from bgtrain.values.static_value import model_device
from engine.batch_notation import batch_play_notations
from engine.board import flip_board
from engine.movegen import Afterstates, argmax_per_position, legal_afterstates
from engine.position_facts import mover_finished

TURN_CHUNK = 2048  # turns analysed together: their afterstates (about 30 each) in one evaluation
LUCK_METHODS = ("rolls", "static", "none")
# A cube decision that was not taken counts as a decision (GNU Backgammon's "close or actual") when
# the worse of doubling and not doubling costs less than this, or when it was an error.
CLOSE_CUBE = 0.16


@dataclass(frozen=True)
class TurnAnalysis:
    """Per turn (``T`` turns, in the order given): ``legal`` (the written play is a legal play of the
    roll), ``choices`` (distinct legal plays; 1: forced), ``played``/``best`` equities, ``loss`` (>= 0),
    ``best_play`` (notation), ``best_board``, ``luck`` (NaN when not computed), ``rolled`` (the 0-ply
    cubeless equity of the roll's best play, for the equity graph)."""

    legal: np.ndarray
    choices: np.ndarray
    played: np.ndarray
    best: np.ndarray
    loss: np.ndarray
    best_play: list[str]
    best_board: np.ndarray
    luck: np.ndarray
    rolled: np.ndarray


@dataclass(frozen=True)
class CubeAnalysis:
    """Per cube point (``K``): the proper action (``bgtrain.cube.CubeAction`` label), the three
    equities, ``error`` (``""``, ``"missed double"``, ``"wrong double"``, ``"wrong take"``,
    ``"wrong pass"``), ``loss`` and who made it (``error_player``), ``counted`` (a decision for the error
    rate: acted on, close, or an error), and ``take_counted`` (the answer to a double: a decision of the
    doubled side)."""

    action: list[str]
    proper_double: np.ndarray
    proper_take: np.ndarray
    no_double: np.ndarray
    double_take: np.ndarray
    double_pass: np.ndarray
    double_loss: np.ndarray  # what the doubling side's decision lost
    response_loss: np.ndarray  # what the doubled side's answer lost
    errors: list[list[str]]
    counted: np.ndarray


def analyse_turns(evaluator: Evaluator, turns: list[Turn], ply: int = 0, cubeless: bool = False,
                  luck: str = "rolls") -> TurnAnalysis:
    """The checker play and luck of every turn; see the module docstring."""
    if luck not in LUCK_METHODS:
        raise ValueError(f"luck must be one of {', '.join(LUCK_METHODS)}, not {luck!r}")
    parts = [_analyse_chunk(evaluator, turns[start:start + TURN_CHUNK], ply, cubeless, luck)
             for start in range(0, len(turns), TURN_CHUNK)]
    if not parts:
        empty = np.zeros(0)
        return TurnAnalysis(empty.astype(bool), empty.astype(int), empty, empty, empty, [],
                            np.zeros((0, 28), np.int8), empty, empty)
    fields = {}
    for name in TurnAnalysis.__dataclass_fields__:
        values = [getattr(part, name) for part in parts]
        fields[name] = [item for value in values for item in value] if isinstance(values[0], list) else np.concatenate(values)
    return TurnAnalysis(**fields)


def _analyse_chunk(evaluator: Evaluator, turns: list[Turn], ply: int, cubeless: bool, luck: str) -> TurnAnalysis:
    rules = evaluator.rules
    device = model_device(getattr(evaluator.value, "network", None))
    boards = torch.tensor([turn.board for turn in turns], dtype=torch.int8, device=device)
    dice = torch.tensor([turn.dice for turn in turns], dtype=torch.int8, device=device)
    written = torch.tensor([turn.after for turn in turns], dtype=torch.int8, device=device)
    afterstates = legal_afterstates(boards, dice, rules)
    position = afterstates.position
    count = len(turns)
    played_row = (afterstates.boards == written[position]).all(1)
    legal = torch.zeros(count, dtype=torch.long, device=device).index_add_(0, position, played_row.long()) > 0
    outcomes = evaluator.static.plays(afterstates)
    rolled = _best(cubeless_equity(outcomes, rules), afterstates)
    if ply:
        # The filter's survivors and the play made, searched at ``ply``; forced turns are not searched.
        searched = evaluator.filter_candidates(cubeless_equity(outcomes, rules), afterstates) | played_row
        searched &= afterstates.counts[position] > 1
        index = searched.nonzero(as_tuple=True)[0]
        outcomes = outcomes.clone()
        outcomes[index] = evaluator.afterstate_probabilities(afterstates.boards[index], ply)
        equity = _play_equities(outcomes, afterstates, turns, cubeless, rules)
        equity = torch.where(searched | (afterstates.counts[position] == 1), equity, float("-inf"))
    else:
        equity = _play_equities(outcomes, afterstates, turns, cubeless, rules)
    choice = argmax_per_position(equity, afterstates)
    best_rows = afterstates.offsets + choice
    best = equity[best_rows]
    played = torch.full((count,), math.nan, dtype=equity.dtype, device=device)
    rows = played_row.nonzero(as_tuple=True)[0]
    played[position[rows]] = equity[rows]
    loss = (best - played).clamp(min=0.0)
    chosen = Afterstates(afterstates.boards[best_rows], torch.arange(count, device=device),
                         torch.ones(count, dtype=torch.long, device=device), torch.arange(count, device=device),
                         afterstates.dice_used[best_rows], afterstates.extra_roll[best_rows])
    best_play = batch_play_notations(boards, dice, chosen, rules)
    if luck == "rolls":
        luck_values = rolled - cubeless_equity(evaluator.probabilities(boards, 1), rules)
    elif luck == "static":
        luck_values = rolled - cubeless_equity(evaluator.probabilities(boards, 0), rules)
    else:
        luck_values = torch.full((count,), math.nan, device=device)
    return TurnAnalysis(
        legal=legal.cpu().numpy(), choices=afterstates.counts.cpu().numpy(), played=played.cpu().double().numpy(),
        best=best.cpu().double().numpy(), loss=loss.cpu().double().numpy(), best_play=best_play,
        best_board=afterstates.boards[best_rows].cpu().numpy(), luck=luck_values.cpu().double().numpy(),
        rolled=rolled.cpu().double().numpy(),
    )


def _best(values: torch.Tensor, afterstates: Afterstates) -> torch.Tensor:
    best = torch.full((afterstates.counts.shape[0],), float("-inf"), dtype=values.dtype, device=values.device)
    return best.scatter_reduce(0, afterstates.position, values, "amax")


def _play_equities(outcomes: torch.Tensor, afterstates: Afterstates, turns: list[Turn], cubeless: bool,
                   rules) -> torch.Tensor:
    """The mover's equity after each play ``float64[N]``, normalised to the cube (module docstring)."""
    if cubeless:
        return cubeless_equity(outcomes, rules).double()
    equity = torch.empty(afterstates.total, dtype=torch.float64, device=outcomes.device)
    # One cubeful call per cube and score: a file holds few of them, so few calls for many rows.
    groups: dict[tuple, list[int]] = {}
    for index, turn in enumerate(turns):
        groups.setdefault((turn.cube, turn.rules), []).append(index)
    position = afterstates.position
    for (cube, game), indices in groups.items():
        member = torch.zeros(len(turns), dtype=torch.bool, device=outcomes.device)
        member[torch.tensor(indices, device=outcomes.device)] = True
        rows = member[position].nonzero(as_tuple=True)[0]
        opponent_board = flip_board(afterstates.boards[rows])
        opponent_game = game.flipped() if isinstance(game, MatchGame) else game
        efficiency = cube_efficiency(opponent_board.cpu()).to(outcomes.device)
        value = cubeful_equity(flip_outcomes(outcomes[rows]).double(), cube.flipped(), opponent_game, efficiency)
        equity[rows] = -value
    # A play that bears off the last checker ends the game: its value is the points, not a formula's.
    won = mover_finished(afterstates.boards)
    if bool(won.any()):
        equity[won] = _won_equities(outcomes[won], afterstates.position[won], turns, rules)
    return equity


def _won_equities(outcomes: torch.Tensor, positions: torch.Tensor, turns: list[Turn], rules) -> torch.Tensor:
    points = cubeless_equity(outcomes, rules).double().tolist()
    values = []
    for point, index in zip(points, positions.tolist()):
        turn = turns[index]
        game = turn.rules
        if isinstance(game, MatchGame):
            values.append(float(_emg_of_win(game, turn.cube.value, round(point))))
        elif game.jacoby and turn.cube.owner == "centred":
            values.append(1.0)  # Jacoby: no gammons with a cube never turned
        else:
            values.append(point)
    return torch.tensor(values, dtype=torch.float64, device=outcomes.device)


def _emg_of_win(game: MatchGame, cube_value: int, points: int) -> float:
    return float(mwc_to_emg(torch.tensor([game.mwc_after(points * cube_value)], dtype=torch.float64), game,
                            cube_value)[0])


def analyse_cube(evaluator: Evaluator, points: list[CubePoint], ply: int = 0) -> CubeAnalysis:
    """The cube decision at every cube point, at ``ply``, and the errors made there."""
    count = len(points)
    if not count:
        empty = np.zeros(0)
        return CubeAnalysis([], empty.astype(bool), empty.astype(bool), empty, empty, empty, empty, empty, [],
                            empty.astype(bool))
    boards = torch.tensor([point.board for point in points], dtype=torch.int8)
    device = model_device(getattr(evaluator.value, "network", None))
    probabilities = torch.cat([evaluator.probabilities(boards[start:start + TURN_CHUNK].to(device), ply).cpu()
                               for start in range(0, count, TURN_CHUNK)])
    decision = cube_decision(probabilities.double(), [point.cube for point in points],
                             [point.rules for point in points], cube_efficiency(boards)).numpy()
    actions = decision.action.astype(int)
    proper_double = np.array([is_double(action) for action in actions])
    proper_take = np.isin(decision.take, (int(TakeAction.TAKE), int(TakeAction.BEAVER)))
    labels = [action_label(action, point.cube) for action, point in zip(actions, points)]
    double_loss = np.zeros(count)
    response_loss = np.zeros(count)
    errors: list[list[str]] = [[] for _ in range(count)]
    counted = np.zeros(count, dtype=bool)
    available = ~np.isin(actions, (int(CubeAction.NOT_AVAILABLE), int(CubeAction.NO_DOUBLE_DEAD_CUBE)))

    def cost(values, index) -> float:
        value = float(values[index])
        return 0.0 if math.isnan(value) else max(value, 0.0)

    for index, point in enumerate(points):
        if point.doubled:
            double_loss[index] = cost(decision.cost_double, index)
            if double_loss[index] > 0:
                errors[index].append("wrong double")
            if point.response == "take" and not proper_take[index]:
                response_loss[index] = cost(decision.cost_take, index)
                errors[index].append("wrong take")
            elif point.response == "drop" and proper_take[index]:
                response_loss[index] = cost(decision.cost_pass, index)
                errors[index].append("wrong pass")
            counted[index] = True
        elif available[index]:
            double_loss[index] = cost(decision.cost_no_double, index)
            if double_loss[index] > 0:
                errors[index].append("missed double")
            worse = max(cost(decision.cost_no_double, index), cost(decision.cost_double, index))
            counted[index] = double_loss[index] > 0 or worse < CLOSE_CUBE
    return CubeAnalysis(labels, proper_double, proper_take, decision.no_double, decision.double_take,
                        decision.double_pass, double_loss, response_loss, errors, counted)
