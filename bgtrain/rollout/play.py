"""Lock-step rollout trials: ``rollout(evaluator, boards, settings, seed=, first_trial=, trials=)``.

All trials of all positions are one batch of games stepped together, one ply a step, with no Python
loop over games: every step makes one ``legal_afterstates`` call and one move choice
(``Evaluator.choose`` at ``settings.ply``) for all live games, and games that end leave the batch. Since
every game starts at ply 0 and plays one ply a step, the side to move is the same in all of them: the
root side (the side to move in the rolled-out position) on even plies.

A trial stops when:

* the game ends: its exact result (1, 2 or 3 points, for the side that bore off);
* it reaches an exact leaf (``bgtrain.rollout.leaves``: the bear-off database): the leaf's value;
* it has played ``settings.truncate`` plies: the 0-ply value of the position, side to move before its roll;
* with the cube, a double is passed (``bgtrain.rollout.cubeful``).

Each trial's dice come from ``bgtrain.rollout.dice`` (a function of seed, stream, trial and ply), its
evaluation from blocks of fixed shape (``bgtrain.rollout.batching``), so trials ``[a, b)`` give the
same per-trial values whether rolled out alone or inside a larger range: shards merge exactly
(``RolloutResult.merge``). Luck (``bgtrain.rollout.variance``) is measured on the same games.

Cubeful rollouts (``settings.cube``): money play, cube decisions before every roll, the first included,
so the cubeful equity is that of the position with its side to move holding its cube options. The
cubeless outcomes of such a trial stop at the first exact leaf, truncation or pass (a pass takes the
0-ply value of the position there), the cubeful game plays on to its end (no cubeful leaves yet).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import torch

from bgtrain.cube import CubeState, MoneyGame
from bgtrain.outcomes import NUM_OUTCOMES, flip_outcomes, terminal_outcomes
from bgtrain.rollout import cubeful
from bgtrain.rollout.batching import batch_invariant
from bgtrain.rollout.dice import rollout_dice
from bgtrain.rollout.leaves import exact_leaf
from bgtrain.rollout.result import RolloutResult
from bgtrain.rollout.variance import check_pruned_luck, expand_rolls, flip_difference, luck
from bgtrain.values.evaluator import Evaluator, check_ply
from bgtrain.values.pruning import GNU_PRUNING
from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND, flip_board
from engine.dice import roll_index
from engine.game import winning_points
from engine.movegen import legal_afterstates

MAX_PLIES = 10_000  # no real game comes near; a bug that loops forever stops here with an error


@dataclass(frozen=True)
class RolloutSettings:
    """How each trial is played and scored.

    ``ply``: checker play at this search depth (``Evaluator.choose``). ``truncate``: stop after this
    many plies with the 0-ply value (None: play to the end). ``variance_reduction``: subtract each
    roll's luck. ``pruned_luck``: measure that luck on each roll's pruned best play (the model's pruning
    networks needed; ``bgtrain.rollout.variance``): the same games, still unbiased, at about half the cost.
    ``cube``: cubeful money play with cube decisions; ``jacoby``: gammons count only once the cube is
    turned. ``exact_leaves``: stop at exact leaves (the bear-off database).
    """

    ply: int = 0
    truncate: int | None = None
    variance_reduction: bool = True
    pruned_luck: bool = False
    cube: bool = False
    jacoby: bool = True
    exact_leaves: bool = True

    def __post_init__(self) -> None:
        check_ply(self.ply)
        if self.truncate is not None and (isinstance(self.truncate, bool) or not isinstance(self.truncate, int)
                                          or self.truncate < 1):
            raise ValueError(f"truncate must be a number of plies >= 1 (or None for whole games), "
                             f"not {self.truncate!r}")

    @property
    def game(self) -> MoneyGame:
        return MoneyGame(jacoby=self.jacoby)

    def describe(self) -> dict:
        """Plain data that ``RolloutSettings(**data)`` rebuilds. ``pruned_luck`` only when set: the work
        directories and shard signatures written before it existed describe the same settings."""
        data = asdict(self)
        if not self.pruned_luck:
            del data["pruned_luck"]
        return data


DEFAULT_SETTINGS = RolloutSettings()


@dataclass(frozen=True)
class _Games:
    """The live games, compacted, each seen from the side to move. ``ids`` index the output rows;
    ``luck``/``cubeful_luck`` the luck so far from the root side's view; cube owner codes from the root
    side (``bgtrain.rollout.cubeful``); ``cubeless_open``: the cubeless result is not yet recorded."""

    board: torch.Tensor
    ids: torch.Tensor
    stream: torch.Tensor
    trial: torch.Tensor
    luck: torch.Tensor
    cube_value: torch.Tensor
    cube_owner: torch.Tensor
    cubeful_luck: torch.Tensor
    cubeless_open: torch.Tensor

    def keep(self, mask: torch.Tensor) -> _Games:
        rows = mask.nonzero(as_tuple=True)[0]
        return _Games(*(getattr(self, field.name).index_select(0, rows) for field in fields(self)))

    @property
    def count(self) -> int:
        return self.ids.shape[0]


class _Outputs:
    """Per-trial results, written once per trial (cubeless and cubeful separately)."""

    def __init__(self, count: int, cube: bool, initial_value: torch.Tensor, device: torch.device) -> None:
        self.outcomes = torch.zeros(count, NUM_OUTCOMES, dtype=torch.float64, device=device)
        self.raw_outcomes = torch.zeros_like(self.outcomes)
        self.plies = torch.zeros(count, dtype=torch.int32, device=device)
        self.cubeful = torch.zeros(count, dtype=torch.float64, device=device) if cube else None
        self.raw_cubeful = torch.zeros_like(self.cubeful) if cube else None
        self.initial_value = initial_value.to(torch.float64)  # per output row

    def cubeless(self, games: _Games, mask: torch.Tensor, mover_probs: torch.Tensor, root_to_move: bool) -> None:
        """Record outcomes (``float[mask.sum(), 5]`` for the side to move) where the cubeless result is open."""
        open_rows = games.cubeless_open[mask]
        rows = mask.nonzero(as_tuple=True)[0][open_rows]
        probs = mover_probs[open_rows].to(torch.float64)
        root = probs if root_to_move else flip_outcomes(probs)
        ids = games.ids[rows]
        self.raw_outcomes[ids] = root
        self.outcomes[ids] = root - games.luck[rows]
        games.cubeless_open[rows] = False

    def cubeful_result(self, games: _Games, mask: torch.Tensor, mover_points: torch.Tensor, root_to_move: bool) -> None:
        """Record money points (``float64[mask.sum()]`` for the side to move), per initial cube."""
        rows = mask.nonzero(as_tuple=True)[0]
        ids = games.ids[rows]
        points = (mover_points if root_to_move else -mover_points) / self.initial_value[ids]
        self.raw_cubeful[ids] = points
        self.cubeful[ids] = points - games.cubeful_luck[rows]

    def ended(self, games: _Games, mask: torch.Tensor, plies: int) -> None:
        self.plies[games.ids[mask]] = plies


def _check_boards(boards: torch.Tensor) -> torch.Tensor:
    if boards.dim() != 2 or boards.shape[1] != 28:
        raise ValueError(f"boards must be int8[P, 28], not shape {tuple(boards.shape)}")
    boards = boards.to(torch.int8)
    mover_has_none = boards[:, 1 : MOVER_IN_HAND + 1].amax(1) <= 0
    if bool(mover_has_none.any()):
        raise ValueError("a position to roll out has no checkers left for its side to move (the game is over)")
    return boards


def _cubes(cubes, count: int) -> list[CubeState]:
    if cubes is None:
        return [CubeState()] * count
    if isinstance(cubes, CubeState):
        return [cubes] * count
    cubes = list(cubes)
    if len(cubes) != count:
        raise ValueError(f"{len(cubes)} cube states for {count} positions")
    return cubes


def rollout(
    evaluator: Evaluator,
    boards: torch.Tensor,
    settings: RolloutSettings = DEFAULT_SETTINGS,
    *,
    seed: int = 0,
    first_trial: int = 0,
    trials: int = 1296,
    streams: torch.Tensor | None = None,
    cubes: CubeState | list[CubeState] | None = None,
    leaf="evaluator",
) -> RolloutResult:
    """Roll out ``boards: int8[P, 28]`` (side to move before its roll), trials ``[first_trial,
    first_trial + trials)`` of each, all in one lock-step batch.

    ``streams: int64[P]``: each position's dice stream (default: its index; give positions the same
    stream for common dice). ``cubes``: the initial cube of each position (one ``CubeState`` or P), from
    its side to move, for cubeful rollouts. ``leaf``: an ``ExactLeaf`` or None; by default the
    evaluator's (``bgtrain.rollout.leaves.exact_leaf``).
    """
    boards = _check_boards(boards)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, not {trials!r}")
    if isinstance(first_trial, bool) or not isinstance(first_trial, int) or first_trial < 0:
        raise ValueError(f"first_trial must be a non-negative integer, not {first_trial!r}")
    rules = evaluator.rules
    if rules.acey_deucey:
        raise ValueError(f"rollouts do not model {rules.name}'s extra rolls")
    if settings.cube and not rules.cube:
        raise ValueError(f"{rules.name} is played without a doubling cube")
    if settings.variance_reduction and settings.pruned_luck:
        check_pruned_luck(evaluator)  # before any play, not at the first roll's expansion
    device = boards.device
    evaluator = batch_invariant(evaluator, device)
    if leaf == "evaluator":
        leaf = exact_leaf(evaluator) if settings.exact_leaves else None
    positions = boards.shape[0]
    streams = (torch.arange(positions, device=device) if streams is None
               else torch.as_tensor(streams, dtype=torch.int64, device=device))
    if streams.shape != (positions,):
        raise ValueError(f"streams must be int64[{positions}], not shape {tuple(streams.shape)}")
    cube_states = _cubes(cubes, positions)

    count = positions * trials
    ids = torch.arange(count, device=device)
    position = ids // trials
    initial_value = torch.tensor([cube.value for cube in cube_states], dtype=torch.int64, device=device)
    initial_owner = torch.tensor([cubeful.owner_code(cube) for cube in cube_states], dtype=torch.int8,
                                 device=device)
    outputs = _Outputs(count, settings.cube, initial_value[position], device)
    games = _Games(
        board=boards[position],
        ids=ids,
        stream=streams[position],
        trial=first_trial + ids % trials,
        luck=torch.zeros(count, NUM_OUTCOMES, dtype=torch.float64, device=device),
        cube_value=initial_value[position],
        cube_owner=initial_owner[position],
        cubeful_luck=torch.zeros(count, dtype=torch.float64, device=device),
        cubeless_open=torch.ones(count, dtype=torch.bool, device=device),
    )
    games = _finished_before_play(games, outputs, settings, rules)
    turn = 0
    while games.count:
        if turn >= MAX_PLIES:
            raise RuntimeError(f"rollout trials still running after {MAX_PLIES} plies")
        games = _step(evaluator, games, outputs, settings, leaf, seed, turn)
        turn += 1

    def per_position(tensor):
        return None if tensor is None else tensor.view(positions, trials, *tensor.shape[1:])

    return RolloutResult(
        boards=boards, first_trial=first_trial, outcomes=per_position(outputs.outcomes),
        raw_outcomes=per_position(outputs.raw_outcomes), plies=per_position(outputs.plies),
        cubeful=per_position(outputs.cubeful), raw_cubeful=per_position(outputs.raw_cubeful),
        settings=settings, seed=seed, streams=streams, rules=rules,
    )


def _finished_before_play(games: _Games, outputs: _Outputs, settings: RolloutSettings, rules) -> _Games:
    """Positions whose opponent has already borne off (e.g. after a candidate play that bore off the
    last checker): the side to move has lost, exactly."""
    board = games.board
    over = (board[:, OPPONENT_BAR:MOVER_BAR].amin(1) >= 0) & (board[:, OPPONENT_IN_HAND] == 0)
    if not bool(over.any()):
        return games
    mover_points = -winning_points(flip_board(board[over]), rules).to(torch.int64)
    outputs.cubeless(games, over, terminal_outcomes(mover_points, rules=rules), True)
    if settings.cube:
        owner = games.cube_owner[over]
        outputs.cubeful_result(games, over, cubeful.money_points(mover_points, games.cube_value[over], owner,
                                                                 settings.game), True)
    outputs.ended(games, over, 0)
    return games.keep(~over)


def _step(evaluator: Evaluator, games: _Games, outputs: _Outputs, settings: RolloutSettings, leaf, seed: int,
          turn: int) -> _Games:
    """One ply of every live game: leaves, truncation, the cube, the roll and its luck, the play."""
    rules, game = evaluator.rules, settings.game
    root_to_move = turn % 2 == 0

    if leaf is not None:
        covered = leaf.covers(games.board) & games.cubeless_open
        if bool(covered.any()):
            outputs.cubeless(games, covered, leaf.outcomes(games.board[covered]), root_to_move)
            if not settings.cube:  # with the cube the game plays on for its cubeful result
                outputs.ended(games, covered, turn)
                games = games.keep(~covered)
                if not games.count:
                    return games

    owner = cubeful.owner_seen_by_mover(games.cube_owner, root_to_move)
    if settings.truncate is not None and turn >= settings.truncate:
        everyone = torch.ones(games.count, dtype=torch.bool, device=games.board.device)
        probs = evaluator.probabilities(games.board, 0)
        outputs.cubeless(games, everyone, probs, root_to_move)
        if settings.cube:
            _, _, optimal = cubeful.decide(probs, games.board, games.cube_value, owner, game)
            outputs.cubeful_result(games, everyone, optimal, root_to_move)
        outputs.ended(games, everyone, turn)
        return games.keep(~everyone)

    if settings.cube:
        games, owner = _cube_actions(evaluator, games, outputs, owner, game, root_to_move, turn)
        if not games.count:
            return games

    dice = rollout_dice(seed, games.stream, games.trial, turn)
    if settings.variance_reduction:
        expansion = expand_rolls(evaluator, games.board, leaf, GNU_PRUNING if settings.pruned_luck else None)
        roll = roll_index(dice)
        roll_luck = luck(expansion.values, roll)
        roll_luck = roll_luck if root_to_move else flip_difference(roll_luck)
        games.luck.add_(roll_luck * games.cubeless_open.unsqueeze(1))
        if settings.cube:
            best = expansion.best_afterstates()
            repeat = expansion.values.shape[1]
            points = cubeful.after_roll_points(
                best, expansion.values.reshape(-1, NUM_OUTCOMES), games.cube_value.repeat_interleave(repeat),
                owner.repeat_interleave(repeat), game, rules)
            cube_luck = luck(points.view(games.count, repeat), roll)
            games.cubeful_luck.add_(cube_luck if root_to_move else -cube_luck)
    afterstates = legal_afterstates(games.board, dice, rules)
    chosen = afterstates.select(evaluator.choose(afterstates, settings.ply))

    points = winning_points(chosen, rules).to(torch.int64)
    ended = points != 0
    if bool(ended.any()):
        outputs.cubeless(games, ended, terminal_outcomes(points[ended], rules=rules), root_to_move)
        if settings.cube:
            money = cubeful.money_points(points[ended], games.cube_value[ended], owner[ended], game)
            outputs.cubeful_result(games, ended, money, root_to_move)
        outputs.ended(games, ended, turn + 1)
    games = replace(games, board=flip_board(chosen))
    return games.keep(~ended) if bool(ended.any()) else games


def _cube_actions(evaluator: Evaluator, games: _Games, outputs: _Outputs, owner: torch.Tensor, game: MoneyGame,
                  root_to_move: bool, turn: int) -> tuple[_Games, torch.Tensor]:
    """The side to move's cube decision in every game where it may double; passed doubles end there."""
    may_double = owner != cubeful.OTHER_OWNS
    if not bool(may_double.any()):
        return games, owner
    rows = may_double.nonzero(as_tuple=True)[0]
    probs = evaluator.probabilities(games.board[rows], 0)
    doubles, passes, _ = cubeful.decide(probs, games.board[rows], games.cube_value[rows], owner[rows], game)
    takes = rows[doubles & ~passes]
    if takes.numel():
        games.cube_value[takes] *= 2
        taker = cubeful.OTHER_OWNS if root_to_move else cubeful.ROOT_OWNS
        games.cube_owner[takes] = taker
        owner = owner.clone()
        owner[takes] = 2  # the opponent of the side to move now owns it
    if bool(passes.any()):
        passed = torch.zeros(games.count, dtype=torch.bool, device=games.board.device)
        passed[rows[passes]] = True
        outputs.cubeless(games, passed, probs[passes], root_to_move)
        outputs.cubeful_result(games, passed, games.cube_value[passed].to(torch.float64), root_to_move)
        outputs.ended(games, passed, turn)
        games, owner = games.keep(~passed), owner[~passed]
    return games, owner
