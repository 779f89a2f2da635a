"""Game loop pieces: start games, play a chosen afterstate per game, detect the end and score it."""

from __future__ import annotations

import torch

from engine.board import borne_off, flip_board
from engine.dice import DiceSource
from engine.position_facts import checkers_back, has_borne_off, mover_finished
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
    """Points the mover wins with this afterstate (``int8[N]``): 0 while the game goes on, else the
    game's value, negative when bearing off the last checker loses.

    ``afterstate: int8[N, 28]`` from the mover's side. The game ends when the mover has borne off
    every checker. Scoring (``Rules.scoring``), "standard": a single game is 1 point; a gammon (2)
    when the loser has borne off none; a backgammon (3) when the loser has borne off none and still
    has a checker on the bar, in hand or in the winner's home board. "checkers_left" (acey-deucey): one
    point per checker the loser has not borne off. Play to lose (``Rules.first_off_loses``): the
    side that bears off all its checkers first loses the game's value.
    """
    # The mover has finished when none of its checkers is left on the row. That is cheap to test
    # (``amax`` over int8 rows), and most rows have not, so the scoring below runs only on the
    # rows that have: on the CPU their indices are known; on a GPU, scoring every row avoids a sync.
    finished = mover_finished(afterstate)
    points = finished.to(torch.int8)
    if afterstate.device.type == "cpu":
        rows = finished.nonzero().squeeze(1)
        if rows.numel():
            points.index_copy_(0, rows, _finished_points(afterstate.index_select(0, rows), rules))
    else:
        points = torch.where(finished, _finished_points(afterstate, rules), 0).to(torch.int8)
    return -points if rules.first_off_loses else points


def _finished_points(afterstate: torch.Tensor, rules: Rules) -> torch.Tensor:
    """The game's value for rows where the mover has borne off every checker: ``int8[N]``."""
    if rules.scoring == "checkers_left":
        _, opponent_off = borne_off(afterstate, rules.checkers_per_side)
        return (rules.checkers_per_side - opponent_off).to(torch.int8)
    _, opponent_has_off = has_borne_off(afterstate, rules.checkers_per_side)
    gammon = ~opponent_has_off & rules.gammons
    _, opponent_back = checkers_back(afterstate)
    backgammon = gammon & opponent_back & rules.backgammons
    return (1 + gammon.to(torch.int8) + backgammon.to(torch.int8)).to(torch.int8)


def play(
    state: State,
    afterstate: torch.Tensor,
    rules: Rules,
    dice: DiceSource,
    extra_roll: torch.Tensor | None = None,
) -> State:
    """Each game moves to its chosen afterstate (``int8[B, 28]``, from the mover's side); a game the
    move ends is scored, the others pass to the other side with a fresh roll, or, where
    ``extra_roll: bool[B]`` is set (acey-deucey, ``Afterstates.select_extra_roll``), stay with the
    same side, which rolls again. Games already over are left as they are."""
    if extra_roll is None:
        if rules.acey_deucey:
            raise ValueError(
                f"rules {rules.name!r} give extra rolls: pass the chosen afterstates' extra_roll to play()"
            )
        extra_roll = torch.zeros_like(state.game_over)
    live = ~state.game_over
    points = winning_points(afterstate, rules)
    ends = live & (points != 0)
    goes_on = live & ~ends
    passes = goes_on & ~extra_roll
    sign = 1 - 2 * state.seat.to(torch.int8)  # seat 0 scores +, seat 1 scores -
    next_dice = dice.roll(state.batch_size).to(state.device)
    stays = torch.where(live.unsqueeze(1), afterstate, state.board)
    board = torch.where(passes.unsqueeze(1), flip_board(afterstate), stays)
    return State(
        board=board,
        dice=torch.where(goes_on.unsqueeze(1), next_dice, state.dice),
        seat=torch.where(passes, 1 - state.seat, state.seat),
        turn=state.turn + live.to(torch.int32),
        game_over=state.game_over | ends,
        result=torch.where(ends, points * sign, state.result),
    )


def restart_finished(state: State, rules: Rules, dice: DiceSource) -> State:
    """Finished games replaced in their slots by new games (fresh opening rolls); the rest kept.
    Opening dice are drawn for every slot so the dice stream does not depend on which games ended."""
    fresh = new_games(rules, state.batch_size, dice, state.device)
    return state.where(state.game_over, fresh)
