"""Game loop pieces: start games, play a chosen afterstate per game, detect the end and score it."""

from __future__ import annotations

import torch

from engine.board import HOME_POINTS, OPPONENT_BAR, borne_off, flip_board
from engine.dice import DiceSource
from engine.rules import Rules
from engine.state import State


def new_games(rules: Rules, batch: int, dice: DiceSource, device: torch.device | str = "cpu") -> State:
    """``batch`` games at the start position, after the opening roll: the seat that won it is to
    move, with the two opening dice as its roll."""
    device = torch.device(device)
    opening, first_seat = dice.opening(batch)
    return State(
        board=rules.start_board(device).expand(batch, -1).clone(),
        dice=opening.to(device),
        seat=first_seat.to(device),
        turn=torch.zeros(batch, dtype=torch.int32, device=device),
        game_over=torch.zeros(batch, dtype=torch.bool, device=device),
        result=torch.zeros(batch, dtype=torch.int8, device=device),
    )


def winning_points(afterstate: torch.Tensor, rules: Rules) -> torch.Tensor:
    """Points the mover wins with this afterstate: 0 while the game goes on, else 1, 2 or 3.

    ``afterstate: int8[N, 28]`` from the mover's side. Scoring: a single game is 1 point; a gammon
    (2) when the loser has borne off none; a backgammon (3) when the loser has borne off none and
    still has a checker on the bar or in the winner's home board.
    """
    # The mover has won when none of its checkers is left on the row (cheap: most rows are not won,
    # and the full scoring below runs only on those that are).
    won = ~(afterstate[:, 1:27] > 0).any(1)
    points = won.to(torch.int8)
    if afterstate.device.type == "cpu" and not bool(won.any()):
        return points
    _, opponent_off = borne_off(afterstate, rules.checkers_per_side)
    gammon = won & (opponent_off == 0) & rules.gammons
    opponent_behind = (afterstate[:, OPPONENT_BAR] < 0) | (afterstate[:, HOME_POINTS] < 0).any(1)
    backgammon = gammon & opponent_behind & rules.backgammons
    return points + gammon.to(torch.int8) + backgammon.to(torch.int8)


def play(state: State, afterstate: torch.Tensor, rules: Rules, dice: DiceSource) -> State:
    """Each game moves to its chosen afterstate (``int8[B, 28]``, from the mover's side); a game the
    move wins ends with its score, the others pass to the other side with a fresh roll.
    Games already over are left as they are."""
    live = ~state.game_over
    points = winning_points(afterstate, rules)
    won = live & (points > 0)
    goes_on = live & ~won
    sign = 1 - 2 * state.seat.to(torch.int8)  # seat 0 scores +, seat 1 scores -
    next_dice = dice.roll(state.batch_size).to(state.device)
    rows = live.unsqueeze(1)
    on = goes_on.unsqueeze(1)
    board = torch.where(on, flip_board(afterstate), torch.where(rows, afterstate, state.board))
    return State(
        board=board,
        dice=torch.where(on, next_dice, state.dice),
        seat=torch.where(goes_on, 1 - state.seat, state.seat),
        turn=state.turn + live.to(torch.int32),
        game_over=state.game_over | won,
        result=torch.where(won, points * sign, state.result),
    )


def restart_finished(state: State, rules: Rules, dice: DiceSource) -> State:
    """Finished games replaced in their slots by new games (fresh opening rolls); the rest kept.
    Opening dice are drawn for every slot so the dice stream does not depend on which games ended."""
    fresh = new_games(rules, state.batch_size, dice, state.device)
    return state.where(state.game_over, fresh)
