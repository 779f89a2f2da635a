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

CENTRED = -1  # cube owner: no one; else the owning seat (0 or 1)


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
    from bgtrain.cube import MoneyGame, TakeAction, is_double
    from bgtrain.cube.met import default_met

    if not rules.cube:
        raise ValueError(f"{rules.name} is played without a doubling cube: leave out --cube and --match")
    device = torch.device(device)
    pairs = max(1, math.ceil(units / 2))
    slots = 2 * pairs
    met = default_met() if match_length else None
    if match_length and match_length > met.max_length:
        raise ValueError(f"--match {match_length}: the match equity table goes up to {met.max_length} points")
    money = MoneyGame(jacoby=False)
    dice = MirroredDice(seed, pairs, device)
    state = new_games(rules, slots, dice, device)
    a_seat = torch.cat([torch.zeros(pairs), torch.ones(pairs)]).to(device=device, dtype=torch.int8)
    a_seat_list = a_seat.tolist()
    probabilities = (cube_probabilities(agent_a), cube_probabilities(agent_b))

    cube_value = [1] * slots
    owner = [CENTRED] * slots
    score = [[0, 0] for _ in range(slots)]  # per seat
    crawford = [False] * slots
    crawford_used = [False] * slots
    game_number = [1] * slots
    games_played = 0
    a_points = [0] * slots  # money: per slot (one game); matches: summed over the match
    match_won = [0] * slots
    wins, gammons, doubles, drops = [0, 0], [0, 0], 0, 0  # by A (0) / B (1)
    ids = torch.arange(slots, device=device)
    live_dice = _LiveDice(dice, slots)

    def finish_game(slot: int, winner_seat: int, points: int, gammon: bool) -> bool:
        """Book a finished game; True when the slot is done (money game, or match over)."""
        nonlocal games_played
        games_played += 1
        winner_is_a = winner_seat == a_seat_list[slot]
        wins[0 if winner_is_a else 1] += 1
        if gammon:
            gammons[0 if winner_is_a else 1] += 1
        a_points[slot] += points if winner_is_a else -points
        if records is not None:
            records.add(slot, game_number[slot], ("win", winner_seat, points))
        if not match_length:
            return True
        score[slot][winner_seat] += points
        if score[slot][winner_seat] >= match_length:
            match_won[slot] = 1 if winner_is_a else 0
            return True
        leader_at_one = [s == match_length - 1 for s in score[slot]]
        crawford[slot] = not crawford_used[slot] and any(leader_at_one)
        crawford_used[slot] = crawford_used[slot] or crawford[slot]
        cube_value[slot], owner[slot] = 1, CENTRED
        game_number[slot] += 1
        return False

    def settle(state: State, ids: torch.Tensor, slot_list: list[int], ended: list[int], restart: list[int]):
        """After games end: rows whose slot goes on (the next game of a match) restart in place, rows
        whose slot is done leave the batch. Returns the new ``(state, ids)``."""
        if restart:
            state = _restart_rows(state, restart, [slot_list[row] for row in restart], dice, rules, slots)
        if ended:
            keep = torch.ones(ids.numel(), dtype=torch.bool, device=device)
            keep[torch.tensor(ended, device=device)] = False
            state, ids = state.select(keep), ids[keep]
        return state, ids

    while ids.numel():
        slot_list = ids.tolist()
        seats = state.seat.tolist()
        turns = state.turn.tolist()
        # --- cube phase ---------------------------------------------------------------------------
        ended: list[int] = []  # rows whose slot is done (a money game or a match ended on a pass)
        restart: list[int] = []  # rows whose match goes on with a new game after a pass
        may_double = [
            row for row, slot in enumerate(slot_list)
            if turns[row] > 0 and owner[slot] in (CENTRED, seats[row]) and not crawford[slot]
        ]
        for who in (0, 1):
            rows = [row for row in may_double if (seats[row] == a_seat_list[slot_list[row]]) == (who == 0)]
            if not rows or probabilities[who] is None:
                continue
            boards = state.board[torch.tensor(rows, device=device)]
            efficiency = cube_efficiency(boards).cpu()
            cubes, games = _cube_contexts(rows, slot_list, seats, cube_value, owner, score, crawford,
                                          match_length, met, money)
            probs = probabilities[who](boards).to(torch.float64).cpu()
            actions = _decide(probs, cubes, games, efficiency).action.tolist()
            offered = [k for k, action in enumerate(actions) if is_double(action)]
            if not offered:
                continue
            taker = probabilities[1 - who]
            if taker is None:
                passes = [False] * len(offered)
            else:
                subset = torch.tensor(offered)
                taker_probs = taker(boards[subset.to(device)]).to(torch.float64).cpu()
                answer = _decide(taker_probs, [cubes[k] for k in offered], [games[k] for k in offered],
                                 efficiency[subset])
                passes = [take == int(TakeAction.PASS) for take in answer.take.tolist()]
            for k, passed in zip(offered, passes):
                row = rows[k]
                slot, seat = slot_list[row], seats[row]
                doubles += 1
                if records is not None:
                    records.add(slot, game_number[slot], ("double", seat, 2 * cube_value[slot]))
                    records.add(slot, game_number[slot], ("drop" if passed else "take", 1 - seat, 0))
                if not passed:
                    cube_value[slot] *= 2
                    owner[slot] = 1 - seat
                    continue
                drops += 1
                (ended if finish_game(slot, seat, cube_value[slot], False) else restart).append(row)
        state, ids = settle(state, ids, slot_list, ended, restart)
        if not ids.numel():
            break
        # --- move phase, shared with bgtrain.arena.duel.play_pairs ---------------------------------
        state, ids, afterstates, choice = choose_moves(agent_a, agent_b, state, ids, a_seat, rules)
        chosen = afterstates.select(choice)
        if records is not None:
            for row, slot in enumerate(ids.tolist()):
                records.add(slot, game_number[slot], ("move", int(state.seat[row]), tuple(state.dice[row].tolist()),
                                                      tuple(state.board[row].tolist()), tuple(chosen[row].tolist())))
        live_dice.ids = ids
        state = play(state, chosen, rules, live_dice)
        over = state.game_over
        if bool(over.any()):
            slot_list = ids.tolist()
            ended, restart = [], []
            for row in over.nonzero(as_tuple=True)[0].tolist():
                slot, result = slot_list[row], int(state.result[row])
                done = finish_game(slot, 0 if result > 0 else 1, abs(result) * cube_value[slot], abs(result) >= 2)
                (ended if done else restart).append(row)
            state, ids = settle(state, ids, slot_list, ended, restart)

    points = torch.tensor(a_points, dtype=torch.float64)
    if match_length:
        outcome = torch.tensor(match_won, dtype=torch.float64)
    else:
        outcome = points
    pair_means = (outcome[:pairs] + outcome[pairs:]) / 2
    interval = 1.96 * float(pair_means.std()) / math.sqrt(pairs) if pairs > 1 else float("inf")
    total_games = max(games_played, 1)
    result = CubeDuelResult(
        agent_a=agent_a.name,
        agent_b=agent_b.name,
        match_length=match_length,
        units=slots,
        games=games_played,
        points_per_game=float(points.sum()) / total_games,
        interval95=interval,
        match_win=float(outcome.mean()) if match_length else float("nan"),
        a_win=wins[0] / total_games,
        b_win=wins[1] / total_games,
        a_gammon=gammons[0] / total_games,
        b_gammon=gammons[1] / total_games,
        doubles_per_game=doubles / total_games,
        drops_per_game=drops / total_games,
    )
    return result, {"a_seat": a_seat_list, "points": a_points, "match_won": match_won}


def _cube_contexts(rows, slot_list, seats, cube_value, owner, score, crawford, match_length, met, money):
    """The cube (seen from the mover) and the game rules of each row."""
    from bgtrain.cube import CubeState, MatchGame

    cubes, games = [], []
    for row in rows:
        slot, seat = slot_list[row], seats[row]
        holder = owner[slot]
        side = "centred" if holder == CENTRED else ("mover" if holder == seat else "opponent")
        cubes.append(CubeState(cube_value[slot], side))
        if match_length:
            games.append(MatchGame(match_length, (score[slot][seat], score[slot][1 - seat]), crawford[slot], met))
        else:
            games.append(money)
    return cubes, games


@dataclass(frozen=True)
class _Decision:
    action: torch.Tensor
    take: torch.Tensor


def _decide(probs: torch.Tensor, cubes, games, efficiency: torch.Tensor) -> _Decision:
    """``bgtrain.cube.cube_decision`` over rows grouped by (cube, game), one call per group, so the
    equity table of a ``MatchGame`` is never hashed per row."""
    from bgtrain.cube import cube_decision

    groups: dict = {}
    for row, (cube, game) in enumerate(zip(cubes, games)):
        key = (cube, ("match", game.length, game.score, game.crawford) if hasattr(game, "length") else "money")
        groups.setdefault(key, []).append(row)
    action = torch.empty(len(cubes), dtype=torch.long)
    take = torch.empty(len(cubes), dtype=torch.long)
    for (cube, _), rows in groups.items():
        index = torch.tensor(rows)
        decision = cube_decision(probs[index], cube, games[rows[0]], efficiency[index])
        action[index] = decision.action.reshape(-1).cpu()
        take[index] = decision.take.reshape(-1).cpu()
    return _Decision(action, take)


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


__all__ = ["CubeDuelRecords", "CubeDuelResult", "cube_probabilities", "play_cube_duel"]
