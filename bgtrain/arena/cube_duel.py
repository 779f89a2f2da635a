"""Cubeful benchmark play: money games with the doubling cube, and matches with the Crawford rule.

Same harness as ``bgtrain.arena.duel`` (seat-swapped pairs on mirrored dice, lock-step batches, each
agent choosing for its whole sub-batch, finished slots dropped), plus a cube phase before each roll:

1. The side to move may double when it has access to the cube (centred or its own), the game is past
   the opening roll, and (in a match) this is not the Crawford game.
2. Its agent's outcome probabilities for the position (``cube_probabilities``, below) go to
   ``bgtrain.cube.cube_decision`` (0-ply Janowski, GNU Backgammon's formulas, cube efficiency by
   position kind): it doubles when the action is a double (optional doubles included).
3. The other side answers from ITS agent's probabilities of the same position: ``cube_decision``'s
   ``take`` (a beaver is played as a take). Pass: the doubler wins the cube's value. Take: the cube
   doubles and the taker owns it.

Agents that cannot estimate probabilities (``pubeval``, ``random``) never double and always take.
Probabilities come from: a checkpoint or ONNX model at 0-ply (its network), an N-ply agent (its
evaluator at N-ply), gnubg (its own evaluation at the agent's ply).

Money play: no Jacoby rule, no beavers, no cube limit; a game's points are the cube value times 1, 2
or 3. Matches (``match_length``): each slot plays games until a side reaches the length; the first
game after a side reaches length - 1 is the Crawford game (no doubling). Twins of a pair start on the
same dice; once their games end at different turns, their later dice differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from bgtrain.arena.agents import Agent
from bgtrain.arena.duel import MirroredDice, _LiveDice, choose_moves
from bgtrain.cube.efficiency import cube_efficiency
from engine.game import new_games, play
from engine.rules import STANDARD, Rules
from engine.state import State


def cube_probabilities(agent: Agent):
    """``f(board int8[B, 28]) -> float[B, 5]``, the agent's outcome probabilities for the side to move
    before its roll, or None for agents that have none (they never double and always take)."""
    if hasattr(agent, "cube_probabilities"):
        return agent.cube_probabilities
    evaluator = getattr(agent, "evaluator", None)
    if evaluator is not None and hasattr(evaluator, "probabilities"):
        return lambda board: evaluator.probabilities(board, agent.ply)
    return None


@dataclass
class CubeDuelRecords:
    """Per-slot history for match files: cube actions and moves in order, per game."""

    games: dict = field(default_factory=dict)  # (slot, game number) -> list of events

    def add(self, slot: int, game: int, event: tuple) -> None:
        self.games.setdefault((slot, game), []).append(event)


@dataclass(frozen=True)
class CubeDuelResult:
    """A's results: money (``match_length`` 0) points per game with the cube, or matches won."""

    agent_a: str
    agent_b: str
    match_length: int
    units: int  # games (money) or matches
    games: int  # games played
    points_per_game: float  # A's points per game, cube included (both modes)
    interval95: float  # on points_per_game (money) or on match_win (matches)
    match_win: float  # matches: fraction A won; money: NaN
    a_win: float  # fraction of games A won (drops included)
    b_win: float
    a_gammon: float  # games A won with a gammon or backgammon on the board
    b_gammon: float
    doubles_per_game: float
    drops_per_game: float

    def as_dict(self) -> dict:
        return {name: (None if isinstance(value, float) and math.isnan(value) else value)
                for name, value in self.__dict__.items()}

    def summary(self) -> str:
        if self.match_length:
            return (f"{self.agent_a} vs {self.agent_b}: A wins {self.match_win:.1%} ± {self.interval95:.1%} of "
                    f"{self.units:,} {self.match_length}-point matches ({self.games:,} games, "
                    f"{self.points_per_game:+.3f} points per game for A)")
        return (f"{self.agent_a} vs {self.agent_b}: {self.points_per_game:+.3f} ± {self.interval95:.3f} points/game "
                f"with the cube over {self.games:,} money games")


@dataclass
class SlotCube:
    """One slot's cube and match: the cube's value and holder (a seat, 0 or 1; None while centred),
    the score by seat, the Crawford state, the game number and A's running totals."""

    value: int = 1
    holder: int | None = None
    score: list[int] = field(default_factory=lambda: [0, 0])
    crawford: bool = False  # this game is the Crawford game
    crawford_used: bool = False
    game_number: int = 1
    a_points: int = 0  # money: the one game; matches: summed over the match
    match_won: int = 0

    def may_double(self, seat: int, turn: int) -> bool:
        """The side in ``seat`` may double: past the opening roll, with access to the cube, not Crawford."""
        return turn > 0 and self.holder in (None, seat) and not self.crawford

    def cube_for(self, seat: int):
        """The cube as the side in ``seat`` sees it (``bgtrain.cube.CubeState``)."""
        from bgtrain.cube import CubeState, owner_seen_by

        return CubeState(self.value, owner_seen_by(self.holder, seat))

    def game_for(self, seat: int, match_length: int, met, money):
        """The game the side in ``seat`` plays: ``money`` (a ``MoneyGame``) or its match game."""
        if not match_length:
            return money
        from bgtrain.cube import MatchGame

        return MatchGame(match_length, (self.score[seat], self.score[1 - seat]), self.crawford, met)

    def take(self, taker: int) -> None:
        self.value *= 2
        self.holder = taker

    def end_game(self, winner: int, points: int, winner_is_a: bool, match_length: int) -> bool:
        """Book a game ``winner`` (a seat) won for ``points``; True when the slot is done (a money
        game, or the match is over), else the next game of the match is set up."""
        self.a_points += points if winner_is_a else -points
        if not match_length:
            return True
        self.score[winner] += points
        if self.score[winner] >= match_length:
            self.match_won = 1 if winner_is_a else 0
            return True
        self.crawford = not self.crawford_used and match_length - 1 in self.score
        self.crawford_used = self.crawford_used or self.crawford
        self.value, self.holder = 1, None
        self.game_number += 1
        return False


@dataclass
class _Tally:
    """Counts over all slots, by A (0) and B (1)."""

    games: int = 0
    wins: list[int] = field(default_factory=lambda: [0, 0])
    gammons: list[int] = field(default_factory=lambda: [0, 0])
    doubles: int = 0
    drops: int = 0


class _CubeDuel:
    """The running benchmark: slots, agents' probabilities, tallies, records (see ``play_cube_duel``)."""

    def __init__(self, agent_a: Agent, agent_b: Agent, pairs: int, rules: Rules, device: torch.device,
                 match_length: int, records: CubeDuelRecords | None, dice: MirroredDice) -> None:
        from bgtrain.cube import MoneyGame
        from bgtrain.cube.met import default_met

        self.slots = [SlotCube() for _ in range(2 * pairs)]
        self.a_seat = [0] * pairs + [1] * pairs
        self.probabilities = (cube_probabilities(agent_a), cube_probabilities(agent_b))
        self.rules, self.device, self.match_length, self.records, self.dice = rules, device, match_length, records, dice
        self.met = default_met() if match_length else None
        if match_length and match_length > self.met.max_length:
            raise ValueError(f"--match {match_length}: the match equity table goes up to {self.met.max_length} points")
        self.money = MoneyGame(jacoby=False)
        self.tally = _Tally()

    def record(self, slot: int, event: tuple) -> None:
        if self.records is not None:
            self.records.add(slot, self.slots[slot].game_number, event)

    def end_game(self, slot: int, winner: int, points: int, gammon: bool) -> bool:
        """Book a finished game; True when the slot is done (money game, or match over)."""
        self.tally.games += 1
        winner_is_a = winner == self.a_seat[slot]
        self.tally.wins[0 if winner_is_a else 1] += 1
        if gammon:
            self.tally.gammons[0 if winner_is_a else 1] += 1
        self.record(slot, ("win", winner, points))
        return self.slots[slot].end_game(winner, points, winner_is_a, self.match_length)

    def settle(self, state: State, ids: torch.Tensor, slot_list: list[int], ended: list[int], restart: list[int]):
        """After games end: rows whose slot goes on (the next game of a match) restart in place, rows
        whose slot is done leave the batch. Returns the new ``(state, ids)``."""
        if restart:
            state = _restart_rows(state, restart, [slot_list[row] for row in restart], self.dice, self.rules,
                                  len(self.slots))
        if ended:
            keep = torch.ones(ids.numel(), dtype=torch.bool, device=self.device)
            keep[torch.tensor(ended, device=self.device)] = False
            state, ids = state.select(keep), ids[keep]
        return state, ids

    def cube_phase(self, state: State, ids: torch.Tensor):
        """Every side to move that may double decides, its opponent answers; passes end games.
        Returns the new ``(state, ids)``."""
        from bgtrain.cube import TakeAction, cube_decision, is_double

        slot_list, seats, turns = ids.tolist(), state.seat.tolist(), state.turn.tolist()
        ended: list[int] = []  # rows whose slot is done (a money game or a match ended on a pass)
        restart: list[int] = []  # rows whose match goes on with a new game after a pass
        may_double = [row for row, slot in enumerate(slot_list) if self.slots[slot].may_double(seats[row], turns[row])]
        for who in (0, 1):
            rows = [row for row in may_double if (seats[row] == self.a_seat[slot_list[row]]) == (who == 0)]
            if not rows or self.probabilities[who] is None:
                continue
            boards = state.board[torch.tensor(rows, device=self.device)]
            efficiency = cube_efficiency(boards).cpu()
            slots = [self.slots[slot_list[row]] for row in rows]
            cubes = [slot.cube_for(seats[row]) for slot, row in zip(slots, rows)]
            games = [slot.game_for(seats[row], self.match_length, self.met, self.money) for slot, row in zip(slots, rows)]
            probs = self.probabilities[who](boards).to(torch.float64).cpu()
            actions = cube_decision(probs, cubes, games, efficiency).action.tolist()
            offered = [k for k, action in enumerate(actions) if is_double(action)]
            if not offered:
                continue
            taker = self.probabilities[1 - who]
            if taker is None:
                passes = [False] * len(offered)
            else:
                subset = torch.tensor(offered)
                taker_probs = taker(boards[subset.to(self.device)]).to(torch.float64).cpu()
                answer = cube_decision(taker_probs, [cubes[k] for k in offered], [games[k] for k in offered],
                                       efficiency[subset])
                passes = [take == int(TakeAction.PASS) for take in answer.take.tolist()]
            for k, passed in zip(offered, passes):
                row = rows[k]
                slot, seat = slot_list[row], seats[row]
                self.tally.doubles += 1
                self.record(slot, ("double", seat, 2 * self.slots[slot].value))
                self.record(slot, ("drop" if passed else "take", 1 - seat, 0))
                if not passed:
                    self.slots[slot].take(1 - seat)
                    continue
                self.tally.drops += 1
                (ended if self.end_game(slot, seat, self.slots[slot].value, False) else restart).append(row)
        return self.settle(state, ids, slot_list, ended, restart)

    def game_ends(self, state: State, ids: torch.Tensor):
        """Book the games the last move ended. Returns the new ``(state, ids)``."""
        slot_list = ids.tolist()
        ended, restart = [], []
        for row in state.game_over.nonzero(as_tuple=True)[0].tolist():
            slot, result = slot_list[row], int(state.result[row])
            done = self.end_game(slot, 0 if result > 0 else 1, abs(result) * self.slots[slot].value, abs(result) >= 2)
            (ended if done else restart).append(row)
        return self.settle(state, ids, slot_list, ended, restart)


def play_cube_duel(
    agent_a: Agent,
    agent_b: Agent,
    units: int,
    seed: int = 0,
    rules: Rules = STANDARD,
    device: torch.device | str = "cpu",
    match_length: int = 0,
    records: CubeDuelRecords | None = None,
) -> tuple[CubeDuelResult, dict]:
    """``units`` (rounded up to even) money games (``match_length`` 0) or matches, in seat-swapped
    pairs; returns the result and raw per-slot figures (``a_seat``, ``points``, ``match_won``)."""
    if not rules.cube:
        raise ValueError(f"{rules.name} is played without a doubling cube: leave out --cube and --match")
    device = torch.device(device)
    pairs = max(1, math.ceil(units / 2))
    dice = MirroredDice(seed, pairs, device)
    duel = _CubeDuel(agent_a, agent_b, pairs, rules, device, match_length, records, dice)
    state = new_games(rules, 2 * pairs, dice, device)
    a_seat = torch.tensor(duel.a_seat, device=device, dtype=torch.int8)
    ids = torch.arange(2 * pairs, device=device)
    live_dice = _LiveDice(dice, 2 * pairs)
    while ids.numel():
        state, ids = duel.cube_phase(state, ids)
        if not ids.numel():
            break
        # The move phase, shared with bgtrain.arena.duel.
        state, ids, afterstates, choice = choose_moves(agent_a, agent_b, state, ids, a_seat, rules)
        chosen = afterstates.select(choice)
        if records is not None:
            for row, slot in enumerate(ids.tolist()):
                duel.record(slot, ("move", int(state.seat[row]), tuple(state.dice[row].tolist()),
                                   tuple(state.board[row].tolist()), tuple(chosen[row].tolist())))
        live_dice.ids = ids
        state = play(state, chosen, rules, live_dice)
        if bool(state.game_over.any()):
            state, ids = duel.game_ends(state, ids)
    return _result(agent_a, agent_b, duel, pairs), {
        "a_seat": duel.a_seat,
        "points": [slot.a_points for slot in duel.slots],
        "match_won": [slot.match_won for slot in duel.slots],
    }


def _result(agent_a: Agent, agent_b: Agent, duel: _CubeDuel, pairs: int) -> CubeDuelResult:
    points = torch.tensor([slot.a_points for slot in duel.slots], dtype=torch.float64)
    if duel.match_length:
        outcome = torch.tensor([slot.match_won for slot in duel.slots], dtype=torch.float64)
    else:
        outcome = points
    pair_means = (outcome[:pairs] + outcome[pairs:]) / 2
    interval = 1.96 * float(pair_means.std()) / math.sqrt(pairs) if pairs > 1 else float("inf")
    tally = duel.tally
    total_games = max(tally.games, 1)
    return CubeDuelResult(
        agent_a=agent_a.name,
        agent_b=agent_b.name,
        match_length=duel.match_length,
        units=len(duel.slots),
        games=tally.games,
        points_per_game=float(points.sum()) / total_games,
        interval95=interval,
        match_win=float(outcome.mean()) if duel.match_length else float("nan"),
        a_win=tally.wins[0] / total_games,
        b_win=tally.wins[1] / total_games,
        a_gammon=tally.gammons[0] / total_games,
        b_gammon=tally.gammons[1] / total_games,
        doubles_per_game=tally.doubles / total_games,
        drops_per_game=tally.drops / total_games,
    )


def _restart_rows(state: State, rows: list[int], slots_of_rows: list[int], dice: MirroredDice, rules: Rules,
                  slots: int) -> State:
    """``state`` with new games in ``rows`` (their matches go on): the start position and an opening
    roll from the mirrored stream (drawn for every slot, so twins that restart together match)."""
    fresh = new_games(rules, slots, dice, state.device)
    source = torch.tensor(slots_of_rows, device=state.device)
    target = torch.tensor(rows, device=state.device)
    fields = {}
    for name in ("board", "dice", "seat", "turn", "game_over", "result"):
        values = getattr(state, name).clone()
        values[target] = getattr(fresh, name)[source]
        fields[name] = values
    return State(**fields)


__all__ = ["CubeDuelRecords", "CubeDuelResult", "SlotCube", "cube_probabilities", "play_cube_duel"]
