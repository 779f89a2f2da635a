"""The evaluator: outcome probabilities, equity, n-ply search and move hints for batches of positions.

An ``Evaluator`` wraps a value function (anything with ``evaluate(board) -> float[N, 5]`` for the side
to move and ``evaluate_flipped(afterstates) -> float[N, 5]`` for the side to move next, e.g.
``NetworkValue`` around a ``ValueNetwork``, or later an exported model), the rules, optional
bear-off databases (the one-sided ``bgtrain.values.bearoff`` and the two-sided ``bgtrain.values.bearoff_two_sided``)
and a move filter. Probabilities follow
``bgtrain.outcomes``: five cumulative probabilities for the SIDE TO MOVE, before its roll.

Definitions (GNU Backgammon's numbering)
----------------------------------------
``V_n(P)``, a position P with its side to move before the roll, evaluated at n-ply:

* A finished game (the opponent has borne off all its checkers) is exact at every ply.
* ``V_0(P)`` (``bgtrain.values.static_value``, shared with self-play and the greedy agents): when both sides
  are bearing off within the two-sided database (up to 6 checkers a side), its exact values
  (``bgtrain.values.bearoff_two_sided``: both sides playing to win); else within the one-sided database, its
  values (``bgtrain.values.bearoff``: exact for the play that minimises the expected number of rolls);
  otherwise the value function, then (``clamps=True``, the default) ``clamp_outcomes`` (no gammon loss once a
  checker is off, no backgammon that the position rules out, cumulative order).
* ``V_n(P)``, n >= 1: the average over the 21 rolls (weights 1/36 for doubles, 2/36 otherwise) of
  ``A_{n-1}(reply)``, where ``reply`` is the afterstate the side to move plays with that roll (below).
  Bear-off positions are searched too, with exact leaves, as GNU searches its one-sided positions.

``A_n(a)``, an afterstate a (the position just after the mover played, from the mover's side), at
n-ply, for the mover: exact when the play bore off the last checker (1, 2 or 3 points), otherwise
``flip_outcomes(V_n(flip_board(a)))``.

The reply to a roll inside ``V_n`` (``deep_replies``):

* ``deep_replies=False`` (the default, what GNU Backgammon does: ``eval.c`` ``EvaluatePositionFull``
  picks each roll's move with ``FindBestMoveInEval`` / ``FindBestMovePlied(..., 0 plies, ...)``): the
  afterstate with the best 0-ply equity ``A_0``. One reply per roll is then evaluated at (n-1)-ply.
* ``deep_replies=True``: the move choice at (n-1)-ply defined next, and ``A_{n-1}`` of it. This
  searches every filtered candidate of every roll, several times the work from 2-ply on; at 1-ply
  both are the same.

Move choice at n-ply (``best_moves``, ``choose``, ``hint``): every legal afterstate is scored by its
cubeless equity at 0-ply (``A_0``). For n = 0 the best wins. For n >= 1 a ``MoveFilter`` keeps at
most ``keep`` candidates (the best always), and only those within ``threshold`` equity of the best;
the survivors are evaluated with ``A_n`` and the best of them wins. Ties go to the lowest index.
The defaults, ``keep=8, threshold=0.16``, are the 0-ply stage of GNU Backgammon's "normal" filter
(``MOVEFILTER_NORMAL``: accept 0, extra 8, threshold 0.16), the one its 1- and 2-ply settings use;
for 3-ply and deeper GNU adds a second stage (2 within 0.04 at 2-ply), which this single-stage filter
leaves out. A position whose filter leaves one candidate plays it without searching, as GNU does
(``hint`` still evaluates it at n-ply).

So ``V_{n+1}(P)`` is the roll-average of the equity ``hint`` reports for the best move at n-ply
(exactly, with ``deep_replies=True``).

Pruning (``bgtrain.values.pruning``): with pruning networks (``pruning_networks``, a checkpoint's
``pruning`` entry, ``bgtrain.model.pruning``) and ``play_pruning`` set (the default), each roll's reply
inside ``V_n`` (``deep_replies=False``) is chosen among the pruning networks' ``keep`` best plays where
the roll has more than ``more_than``, as GNU Backgammon prunes. ``play_pruning=None`` (``bgtrain eval
--no-pruning``) is the exact search above, the reference; the root's move filter and ``deep_replies``
are never pruned.

Batching: all positions x 21 rolls go through one ``legal_afterstates`` call and each layer of the
tree through one value-function call per chunk (``SEARCH_CHUNK`` positions, to bound memory); no
Python loop runs over positions except to format hints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from bgtrain.model.loading import load_model
from bgtrain.outcomes import NUM_OUTCOMES, cubeless_equity, flip_outcomes
from bgtrain.values.bearoff import BearoffDatabase, load_bearoff_database
from bgtrain.values.bearoff_two_sided import TwoSidedBearoffDatabase, load_two_sided_database
from bgtrain.values.bearoff_two_sided import applies_to as databases_apply
from bgtrain.values.pruning import GNU_PRUNING, PlayPruning, pruned_best_plays
from bgtrain.values.static_value import NetworkValue, StaticValue, ValueFunction, model_device, once_each
from engine.board import flip_board
from engine.dice import ALL_ROLLS, roll_tensor, roll_weights
from engine.movegen import Afterstates, argmax_per_position, legal_afterstates, rank_per_position
from engine.notation import play_notations
from engine.position_facts import mover_finished, opponent_finished
from engine.rules import STANDARD, Rules
from engine.state import State

ROLL_COUNT = len(ALL_ROLLS)  # 21
SEARCH_CHUNK = 1024  # positions whose 21 rolls are expanded at once inside a search


@dataclass(frozen=True)
class MoveFilter:
    """Which 0-ply candidates are searched deeper: at most ``keep`` (the best always), and only those
    within ``threshold`` cubeless equity of the best. Defaults: GNU Backgammon's "normal" filter."""

    keep: int = 8
    threshold: float = 0.16

    def __post_init__(self) -> None:
        if self.keep < 1:
            raise ValueError(f"move filter: keep must be >= 1, not {self.keep}")
        if not self.threshold >= 0.0:
            raise ValueError(f"move filter: threshold must be >= 0, not {self.threshold}")


@dataclass(frozen=True)
class HintMove:
    """One ranked legal play: its afterstate (28 ints, mover's side), notation, the mover's cubeless
    equity and outcome probabilities after it (as at ``ply``), and ``difference`` = equity - best's.
    ``extra_roll``: the play earns another roll (acey-deucey; one position can be reached with and
    without it)."""

    board: tuple[int, ...]
    play: str
    equity: float
    difference: float
    probabilities: tuple[float, ...]
    ply: int
    extra_roll: bool = False


class Evaluator:
    """Batched evaluation and search on a value function; see the module docstring for definitions."""

    def __init__(
        self,
        value: ValueFunction,
        rules: Rules = STANDARD,
        bearoff: BearoffDatabase | None = None,
        move_filter: MoveFilter = MoveFilter(),
        deep_replies: bool = False,
        two_sided: TwoSidedBearoffDatabase | None = None,
        clamps: bool = True,
        pruning_networks: ValueFunction | None = None,
        play_pruning: PlayPruning | None = GNU_PRUNING,
    ) -> None:
        self.value = value
        self.rules = rules
        self.bearoff = bearoff
        self.two_sided = two_sided
        self.move_filter = move_filter
        self.deep_replies = deep_replies
        self.static = StaticValue(value, rules, bearoff, clamps, two_sided)
        # The cheap stage of the pruned replies (``bgtrain.values.pruning``); no networks: no pruning.
        self.play_pruning = play_pruning if pruning_networks is not None else None
        self.pruning_networks = pruning_networks

    @classmethod
    def from_network(cls, network, rules: Rules = STANDARD, bearoff: BearoffDatabase | str | Path | bool | None = True,
                     two_sided: TwoSidedBearoffDatabase | str | Path | bool | None = None,
                     pruning=None, **settings) -> Evaluator:
        """An evaluator on a model with ``evaluate(board, rules)`` and ``evaluate_flipped(board, rules)``
        (a ``ValueNetwork``, or an exported model). ``bearoff``: True for the cached one-sided database
        (built on first use), a path, a database, or False/None for none. ``two_sided``: likewise for
        the two-sided database; None (the default) means the cached one when ``bearoff`` is True,
        none otherwise. ``pruning``: the model's pruning networks (``LoadedModel.pruning``), or None.
        ``settings``: ``move_filter``, ``deep_replies``, ``clamps``, ``play_pruning``."""
        device = model_device(network)
        if two_sided is None:
            two_sided = bearoff is True
        if not databases_apply(rules):
            # Both databases value racing to be first off, paid by standard scoring: not play-to-lose, whose
            # first side off loses, nor acey-deucey's checkers-left pay and extra rolls.
            bearoff, two_sided = None, None
        pruning_networks = NetworkValue(pruning, rules) if pruning is not None else None
        return cls(NetworkValue(network, rules), rules, _bearoff(bearoff, device),
                   two_sided=_two_sided(two_sided, device), pruning_networks=pruning_networks, **settings)

    @classmethod
    def from_path(cls, path: str | Path, device: torch.device | str = "cpu",
                  bearoff: BearoffDatabase | str | Path | bool | None = True, rules: Rules | None = None,
                  two_sided: TwoSidedBearoffDatabase | str | Path | bool | None = None, **settings) -> Evaluator:
        """An evaluator on the network of a checkpoint file (``bgtrain.model.checkpoint``) or of an ONNX
        export (``.onnx``, through onnxruntime), for the variant it was trained on (``rules``, when
        given, must be that one). ``bearoff`` and ``two_sided`` as for ``from_network``; the checkpoint's
        pruning networks, when it has them, prune the search unless ``play_pruning=None``."""
        loaded = load_model(path, rules, device)
        return cls.from_network(loaded.model, loaded.rules, bearoff, two_sided, loaded.pruning, **settings)

    def check_ply(self, ply: int) -> int:
        """``check_ply`` for this evaluator's rules."""
        return check_ply(ply, self.rules)

    # --- public API -----------------------------------------------------------------------------

    def probabilities(self, board: torch.Tensor, ply: int = 0) -> torch.Tensor:
        """``V_ply``: ``int8[B, 28]`` positions before the roll -> ``float32[B, 5]`` for the side to move."""
        return self._position_outcomes(_check_board(board), self.check_ply(ply))

    def equity(self, board: torch.Tensor, ply: int = 0) -> torch.Tensor:
        """Cubeless equity of ``probabilities``: ``float32[B]``."""
        return cubeless_equity(self.probabilities(board, ply), self.rules)

    def afterstate_probabilities(self, afterstates: torch.Tensor, ply: int = 0) -> torch.Tensor:
        """``A_ply``: ``int8[N, 28]`` afterstates -> ``float32[N, 5]`` for the side that just moved."""
        return self._afterstate_outcomes(_check_board(afterstates), self.check_ply(ply))

    def best_moves(self, board: torch.Tensor, dice: torch.Tensor, ply: int = 0) -> torch.Tensor:
        """The move choice at ``ply``: an index into each position's ``legal_afterstates``, ``int64[B]``."""
        board = _check_board(board)
        dice = torch.as_tensor(dice, device=board.device).reshape(-1, 2)
        return self.choose(legal_afterstates(board, dice, self.rules), ply)

    def choose(self, afterstates: Afterstates, ply: int = 0) -> torch.Tensor:
        """``best_moves`` on afterstates already generated: ``int64[B]``."""
        choice, _ = self._select(afterstates, self.check_ply(ply), need_values=False)
        return choice

    def hint(self, board: torch.Tensor, dice: torch.Tensor, ply: int = 0, limit: int | None = None,
             notation: bool = True) -> list[list[HintMove]]:
        """Per position, its legal plays ranked best first: those searched at ``ply`` (by equity), then
        those the filter left at 0-ply (by equity), at most ``limit`` of them. Notation as
        ``engine.notation.play_notation`` writes it; ``notation=False`` leaves ``play`` empty and skips
        the reference walk that writes it (slow for acey-deucey's 1-2 and big doubles)."""
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be >= 1 or None, not {limit}")
        board = _check_board(board)
        dice = torch.as_tensor(dice, device=board.device).reshape(-1, 2)
        afterstates = legal_afterstates(board, dice, self.rules)
        outcomes, plies = self._candidates(afterstates, self.check_ply(ply))
        # The same float32 equities as the move choice, so that both rank (and break ties) alike.
        equity = cubeless_equity(outcomes, self.rules).tolist()
        outcomes, plies = outcomes.tolist(), plies.tolist()
        boards, extra_rolls = afterstates.boards.tolist(), afterstates.extra_roll.tolist()
        befores, rolls = board.tolist(), dice.tolist()
        hints = []
        for index, (start, count) in enumerate(zip(afterstates.offsets.tolist(), afterstates.counts.tolist())):
            rows = sorted(range(start, start + count), key=lambda row: (-plies[row], -equity[row], row))
            rows = rows[:limit] if limit is not None else rows
            roll = (int(rolls[index][0]), int(rolls[index][1]))
            notations = play_notations(befores[index], roll, self.rules) if notation else {}
            best = equity[rows[0]]
            hints.append([
                HintMove(
                    board=tuple(boards[row]),
                    play=notations.get(tuple(boards[row]), ""),
                    equity=equity[row],
                    difference=equity[row] - best,
                    probabilities=tuple(outcomes[row]),
                    ply=plies[row],
                    extra_roll=extra_rolls[row],
                )
                for row in rows
            ])
        return hints

    def filter_candidates(self, equity: torch.Tensor, afterstates: Afterstates) -> torch.Tensor:
        """The move filter on 0-ply equities ``float[N]`` of ``afterstates``: ``bool[N]``, the candidates an
        n-ply move choice searches (see ``MoveFilter``)."""
        position, batch = afterstates.position, afterstates.counts.shape[0]
        best = torch.full((batch,), float("-inf"), dtype=equity.dtype, device=equity.device)
        best = best.scatter_reduce(0, position, equity, "amax")
        close = equity >= best[position] - self.move_filter.threshold
        return close & (rank_per_position(equity, afterstates) < self.move_filter.keep)

    def agent(self, ply: int = 0, name: str | None = None) -> SearchAgent:
        """An ``bgtrain.arena.agents.Agent`` that plays this evaluator's move choice at ``ply``."""
        return SearchAgent(self, ply, name)

    # --- search ----------------------------------------------------------------------------------

    def _position_outcomes(self, board: torch.Tensor, ply: int) -> torch.Tensor:
        """``V_ply`` of positions: ``float32[B, 5]``."""
        if ply == 0:
            return self.static.positions(board)
        probs = torch.empty(board.shape[0], NUM_OUTCOMES, dtype=torch.float32, device=board.device)
        over = opponent_finished(board)
        if bool(over.any()):
            probs[over] = self.static.finished(board[over])
        live = (~over).nonzero(as_tuple=True)[0]
        for chunk in live.split(SEARCH_CHUNK):
            probs[chunk] = self._average_over_rolls(board[chunk], ply)
        return probs

    def _afterstate_outcomes(self, afterstates: torch.Tensor, ply: int) -> torch.Tensor:
        """``A_ply`` of afterstates, for the mover: ``float32[N, 5]``."""
        if ply == 0:
            return self.static.afterstates(afterstates)
        won = mover_finished(afterstates)
        probs = torch.empty(afterstates.shape[0], NUM_OUTCOMES, dtype=torch.float32, device=afterstates.device)
        if bool(won.any()):
            probs[won] = self.static.won(afterstates[won])
        going_on = (~won).nonzero(as_tuple=True)[0]
        if going_on.numel():
            next_side = self._position_outcomes(flip_board(afterstates[going_on]), ply)
            probs[going_on] = flip_outcomes(next_side)
        return probs

    def _average_over_rolls(self, board: torch.Tensor, ply: int) -> torch.Tensor:
        """``V_ply``, ply >= 1, of live positions: each roll's reply valued at ply - 1, averaged."""
        batch = board.shape[0]
        rolls, weights = roll_tensor(board.device), roll_weights(device=board.device)
        afterstates = legal_afterstates(board.repeat_interleave(ROLL_COUNT, 0), rolls.repeat(batch, 1), self.rules)
        if self.deep_replies:
            _, values = self._select(afterstates, ply - 1, need_values=True)
        elif self.play_pruning is not None:
            choice, chosen = pruned_best_plays(afterstates, self.static, self.pruning_networks, self.play_pruning,
                                               self.rules)
            values = chosen if ply == 1 else self._afterstate_outcomes(afterstates.select(choice), ply - 1)
        else:
            # The replies of different plays and rolls often coincide: each distinct one is valued once.
            # (Only here, at the search's leaves: a 0-ply call values exactly what an agent's does.)
            pre = once_each(self.static.afterstates, afterstates.boards)
            choice = argmax_per_position(cubeless_equity(pre, self.rules), afterstates)
            if ply == 1:
                values = pre[afterstates.offsets + choice]
            else:
                values = self._afterstate_outcomes(afterstates.select(choice), ply - 1)
        return (values.view(batch, ROLL_COUNT, NUM_OUTCOMES) * weights.view(1, ROLL_COUNT, 1)).sum(1)

    def _candidates(self, afterstates: Afterstates, ply: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every afterstate's outcomes for the mover (``float32[N, 5]``) and the ply it was evaluated at
        (``int64[N]``): ``ply`` for the filter's survivors, 0 for the rest."""
        pre = self.static.plays(afterstates)
        plies = torch.zeros(afterstates.total, dtype=torch.int64, device=pre.device)
        if ply == 0:
            return pre, plies
        searched = self.filter_candidates(cubeless_equity(pre, self.rules), afterstates)
        index = searched.nonzero(as_tuple=True)[0]
        outcomes = pre.clone()
        outcomes[index] = self._afterstate_outcomes(afterstates.boards[index], ply)
        plies[index] = ply
        return outcomes, plies

    def _select(self, afterstates: Afterstates, ply: int, need_values: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """The move choice at ``ply`` (``int64[B]``) and the chosen afterstates' outcomes (``float32[B, 5]``;
        at ``ply`` when ``need_values``, else possibly at 0-ply where the filter left no choice)."""
        pre = self.static.plays(afterstates)
        equity = cubeless_equity(pre, self.rules)
        if ply == 0:
            choice = argmax_per_position(equity, afterstates)
            return choice, pre[afterstates.offsets + choice]
        searched = self.filter_candidates(equity, afterstates)
        if not need_values:
            # A position with one survivor plays it: no need to search it.
            survivors = torch.zeros_like(afterstates.counts).index_add_(0, afterstates.position, searched.long())
            searched &= survivors[afterstates.position] > 1
        index = searched.nonzero(as_tuple=True)[0]
        outcomes = pre.clone()
        outcomes[index] = self._afterstate_outcomes(afterstates.boards[index], ply)
        # Where a position was searched, only its searched candidates compete, on their deep equity.
        has_search = torch.zeros_like(afterstates.counts, dtype=torch.bool)
        has_search[afterstates.position[index]] = True
        score = torch.where(searched, cubeless_equity(outcomes, self.rules), float("-inf"))
        score = torch.where(has_search[afterstates.position], score, equity)
        choice = argmax_per_position(score, afterstates)
        return choice, outcomes[afterstates.offsets + choice]


class SearchAgent:
    """An ``Agent`` (``bgtrain.arena.agents``) that plays an evaluator's move choice at a fixed ply."""

    def __init__(self, evaluator: Evaluator, ply: int, name: str | None = None) -> None:
        self.evaluator = evaluator
        self.ply = evaluator.check_ply(ply)
        self.name = name or f"{ply}-ply"

    def choose(self, state: State, afterstates: Afterstates) -> torch.Tensor:
        return self.evaluator.choose(afterstates, self.ply)


def _check_board(board: torch.Tensor) -> torch.Tensor:
    if board.dim() != 2 or board.shape[1] != 28:
        raise ValueError(f"boards must be int8[B, 28], not shape {tuple(board.shape)}")
    return board.to(torch.int8)


# The deepest search offered: each ply costs about 20 times the one before, and 4-ply already takes
# tens of seconds a position; deeper searches would run for hours with memory growing all along.
MAX_PLY = 4


def check_ply(ply: int, rules: Rules | None = None) -> int:
    """``ply`` when the evaluator can search that deep (0 to ``MAX_PLY``; each ply costs about 20 times
    the one before), for ``rules`` when given; else a ValueError saying why. The one check of a depth,
    made before anything is loaded by the commands, agents and labellers."""
    if isinstance(ply, bool) or not isinstance(ply, int) or ply < 0:
        raise ValueError(f"ply must be a non-negative integer, not {ply!r}")
    if ply > MAX_PLY:
        raise ValueError(f"{ply}-ply is deeper than the evaluator searches: at most {MAX_PLY} (a depth of 0 to "
                         f"{MAX_PLY}; each ply costs about 20 times the one before)")
    if ply and rules is not None and rules.acey_deucey:
        # The search averages over the opponent's rolls after every play; an acey-deucey play that
        # earns an extra roll is followed by the same side's roll instead.
        raise ValueError(f"multi-ply search does not model {rules.name}'s extra rolls; use ply 0")
    return ply


def _database(kind, load_cached, given, device):
    """A database from what a caller gave: None/False for none, an instance, True for the cached one
    (built on first use), or a path."""
    if given is None or given is False:
        return None
    if isinstance(given, kind):
        return given.to(device)
    if given is True:
        return load_cached(device=device)
    return kind.load(given, device)


def _two_sided(two_sided, device) -> TwoSidedBearoffDatabase | None:
    return _database(TwoSidedBearoffDatabase, load_two_sided_database, two_sided, device)


def _bearoff(bearoff, device) -> BearoffDatabase | None:
    return _database(BearoffDatabase, load_bearoff_database, bearoff, device)
