"""Seat-fair, low-variance matches between two agents, batched across games.

Every dice sequence is played twice with the seats swapped: games come in pairs whose dice are the
same roll for roll (opening roll included), agent A in seat 0 in one game and in seat 1 in the
other. The pair's mean is one sample for the 95% interval, which removes most of the luck.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch

from bgtrain.arena.agents import Agent
from engine.dice import Mirrored, RandomDice
from engine.game import new_games, play
from engine.movegen import Afterstates, legal_afterstates
from engine.rules import STANDARD, Rules
from engine.state import State


class MirroredDice(Mirrored):
    """Dice for ``2 * pairs`` games from one seeded generator: game i and game i + pairs get the same
    rolls, turn for turn."""

    def __init__(self, seed: int, pairs: int, device: torch.device | str = "cpu") -> None:
        super().__init__(RandomDice(seed, device), pairs)


@dataclass(frozen=True)
class DuelResult:
    """Agent A against agent B over ``games`` cubeless money games (gammons count)."""

    agent_a: str
    agent_b: str
    games: int
    points_per_game: float  # for A
    interval95: float  # half-width of the 95% interval on points_per_game
    a_win: float  # fractions of games: A wins, A wins a gammon (or backgammon), A wins a backgammon
    a_gammon: float
    a_backgammon: float
    b_win: float
    b_gammon: float
    b_backgammon: float

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        return (
            f"{self.agent_a} vs {self.agent_b}: {self.points_per_game:+.3f} ± {self.interval95:.3f} points/game "
            f"over {self.games} games (A wins {self.a_win:.1%}, gammons {self.a_gammon:.1%}, "
            f"backgammons {self.a_backgammon:.1%}; B wins {self.b_win:.1%}, gammons {self.b_gammon:.1%}, "
            f"backgammons {self.b_backgammon:.1%})"
        )


@dataclass(frozen=True)
class GameRecord:
    """One finished game of a match, turn by turn, for writing match files (``bgtrain.matfile``).

    ``pair``: the global index of its dice sequence; its twin (same dice, seats swapped) has the same
    ``pair`` and the other ``a_seat``. ``turns``: ``(seat, dice, before, after)`` per move in order,
    ``dice`` larger die first, ``before``/``after`` 28-int boards from the mover's side
    (``engine.board``). ``points``: what A won (negative when B won).
    """

    pair: int
    a_seat: int
    first_seat: int
    turns: tuple[tuple[int, tuple[int, int], tuple[int, ...], tuple[int, ...]], ...]
    points: int


class _LiveDice:
    """The mirrored dice of every game, handed out to the games still running (``ids``), so that a
    compacted batch draws exactly the rolls the full batch would."""

    def __init__(self, dice: MirroredDice, games: int) -> None:
        self.dice = dice
        self.games = games
        self.ids: torch.Tensor | None = None

    def roll(self, batch: int) -> torch.Tensor:
        return self.dice.roll(self.games)[self.ids]

    def opening(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError("games are started by new_games on the full batch")


_PER_POSITION = frozenset({"counts", "offsets"})  # Afterstates fields indexed by position; the rest by row


def _part(afterstates: Afterstates, positions: slice, rows: slice) -> Afterstates:
    """The afterstates of a contiguous run of positions (``rows`` are theirs), renumbered from 0."""
    parts = {}
    for field in fields(afterstates):
        values = getattr(afterstates, field.name)
        parts[field.name] = values[positions] if field.name in _PER_POSITION else values[rows]
    parts["position"] = parts["position"] - positions.start
    parts["offsets"] = parts["offsets"] - rows.start
    return Afterstates(**parts)


def choose_moves(agent_a: Agent, agent_b: Agent, state: State, ids: torch.Tensor, a_seat: torch.Tensor,
                 rules: Rules):
    """One lock-step move phase: the games are reordered so that A's movers come first, move
    generation runs once for all of them, and each agent chooses for its own contiguous share.

    ``ids: int64[B]`` are the games' slots (``a_seat[ids]`` is A's seat). Returns the reordered
    ``(state, ids)``, the afterstates and ``choice: int64[B]``.
    """
    a_to_move = state.seat == a_seat[ids]
    order = torch.argsort((~a_to_move).to(torch.int8), stable=True)
    state, ids = state.select(order), ids[order]
    count, count_a = ids.numel(), int(a_to_move.sum())
    afterstates = legal_afterstates(state.board, state.dice, rules)
    split = int(afterstates.offsets[count_a]) if count_a < count else afterstates.total
    choice = torch.empty(count, dtype=torch.int64, device=state.device)
    for agent, positions, rows in (
        (agent_a, slice(0, count_a), slice(0, split)),
        (agent_b, slice(count_a, count), slice(split, afterstates.total)),
    ):
        if positions.stop > positions.start:
            choice[positions] = agent.choose(state.select(positions), _part(afterstates, positions, rows))
    return state, ids, afterstates, choice


def play_pairs(
    agent_a: Agent,
    agent_b: Agent,
    pairs: int,
    seed: int,
    rules: Rules,
    device,
    history: list[GameRecord] | None = None,
    first_pair: int = 0,
    dice=None,
) -> torch.Tensor:
    """Points won by A in each game: ``int64[2 * pairs]``; game i and i + pairs share their dice.

    Performance: each turn makes ONE ``legal_afterstates`` call for every running game, with A's
    games ordered first so that each agent's share is a contiguous slice of it; finished games are
    dropped from the batch, so the long tail of a few slow games costs little. The dice still come
    from the full mirrored stream (``_LiveDice``), so results do not depend on the compaction.
    With ``history`` (a list), a ``GameRecord`` per game is appended to it (slower: every turn is
    copied to the host); ``first_pair`` numbers their pairs. ``dice``: a mirrored dice source for
    the ``2 * pairs`` games instead of ``MirroredDice(seed, pairs)``, e.g.
    ``engine.keyed_dice.KeyedMirroredDice``, whose pair i's dice depend on ``(seed, first_pair + i)``
    alone, so that chunks of pairs played anywhere give the games of one long run.
    """
    games = 2 * pairs
    dice = MirroredDice(seed, pairs, device) if dice is None else dice
    state = new_games(rules, games, dice, device)
    a_seat = torch.cat([torch.zeros(pairs), torch.ones(pairs)]).to(device=device, dtype=torch.int8)
    first_seat = state.seat.clone()
    points = torch.zeros(games, dtype=torch.int64, device=device)
    ids = torch.arange(games, device=device)
    live_dice = _LiveDice(dice, games)
    turns: list[tuple[torch.Tensor, ...]] = []
    while ids.numel():
        state, ids, afterstates, choice = choose_moves(agent_a, agent_b, state, ids, a_seat, rules)
        chosen = afterstates.select(choice)
        extra_roll = afterstates.select_extra_roll(choice)
        if history is not None:
            turns.append(tuple(t.cpu() for t in (ids, state.seat, state.dice, state.board, chosen)))
        live_dice.ids = ids
        state = play(state, chosen, rules, live_dice, extra_roll)
        over = state.game_over
        if bool(over.any()):
            points[ids[over]] = state.result[over].to(torch.int64)
            going_on = ~over
            state, ids = state.select(going_on), ids[going_on]
    sign = 1 - 2 * a_seat.to(torch.int64)
    points = points * sign
    if history is not None:
        history.extend(_game_records(turns, a_seat.cpu(), first_seat.cpu(), points.cpu(), first_pair))
    return points


def _game_records(turns, a_seat, first_seat, points, first_pair: int) -> list[GameRecord]:
    """Per-turn host copies ``(ids, seat, dice, before, after)`` regrouped into one record per game."""
    games = a_seat.numel()
    pairs = games // 2
    by_game: list[list] = [[] for _ in range(games)]
    for ids, seat, dice, before, after in turns:
        for game, mover, roll, board_before, board_after in zip(
            ids.tolist(), seat.tolist(), dice.tolist(), before.tolist(), after.tolist()
        ):
            by_game[game].append((mover, (roll[0], roll[1]), tuple(board_before), tuple(board_after)))
    return [
        GameRecord(
            pair=first_pair + game % pairs,
            a_seat=int(a_seat[game]),
            first_seat=int(first_seat[game]),
            turns=tuple(by_game[game]),
            points=int(points[game]),
        )
        for game in range(games)
    ]


def play_duel(
    agent_a: Agent,
    agent_b: Agent,
    games: int,
    seed: int = 0,
    rules: Rules = STANDARD,
    device: torch.device | str = "cpu",
    batch_pairs: int = 16384,
    history: list[GameRecord] | None = None,
) -> DuelResult:
    """``games`` (rounded up to even) seat-swapped games, ``batch_pairs`` pairs in lock-step at a time.

    With ``history`` (a list), every game's ``GameRecord`` is appended to it (see ``play_pairs``).
    """
    pairs = max(1, math.ceil(games / 2))
    first, second = [], []
    done = 0
    while done < pairs:
        chunk = min(batch_pairs, pairs - done)
        points = play_pairs(agent_a, agent_b, chunk, seed + done, rules, device, history, done).cpu()
        first.append(points[:chunk])
        second.append(points[chunk:])
        done += chunk
    a_first, a_second = torch.cat(first), torch.cat(second)
    return summarise(agent_a.name, agent_b.name, a_first, a_second)


def summarise(name_a: str, name_b: str, a_first: torch.Tensor, a_second: torch.Tensor) -> DuelResult:
    """Points for A in each game of each pair -> a ``DuelResult`` with a paired 95% interval."""
    pair_means = (a_first + a_second).to(torch.float64) / 2
    pairs = pair_means.numel()
    interval = 1.96 * float(pair_means.std()) / math.sqrt(pairs) if pairs > 1 else float("inf")
    points = torch.cat([a_first, a_second])
    games = points.numel()

    def rate(mask: torch.Tensor) -> float:
        return float(mask.sum()) / games

    return DuelResult(
        agent_a=name_a,
        agent_b=name_b,
        games=games,
        points_per_game=float(points.to(torch.float64).mean()),
        interval95=interval,
        a_win=rate(points > 0),
        a_gammon=rate(points >= 2),
        a_backgammon=rate(points >= 3),
        b_win=rate(points < 0),
        b_gammon=rate(points <= -2),
        b_backgammon=rate(points <= -3),
    )
