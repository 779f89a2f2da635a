"""The evaluator: 0-ply contract, exact endings, the n-ply definitions, batching and hints."""

from __future__ import annotations

import pytest
import torch
from helpers import bearoff_board, random_boards, roll_weight

from bgtrain.arena.duel import play_duel
from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.network import ValueNetwork
from bgtrain.outcomes import (
    LOSE_GAMMON,
    WIN,
    WIN_GAMMON,
    clamp_outcomes,
    cubeless_equity,
    flip_outcomes,
    terminal_outcomes,
)
from bgtrain.training.config import Config
from bgtrain.values.bearoff import build_bearoff_database
from bgtrain.values.evaluator import Evaluator, MoveFilter, NetworkValue
from engine.board import flip_board, pip_counts
from engine.dice import ALL_ROLLS
from engine.game import winning_points
from engine.movegen import legal_afterstates
from engine.notation import parse_play
from engine.position_id import decode_position_id
from engine.random_play import sample_positions
from engine.rules import STANDARD

START = "4HPwATDgc/ABMA"


def weight(roll) -> float:
    return float(roll_weight(roll))



@pytest.fixture(scope="module")
def network() -> ValueNetwork:
    torch.manual_seed(1234)
    return ValueNetwork("tesauro198", (40,)).eval()


@pytest.fixture(scope="module")
def database():
    return build_bearoff_database(3)


@pytest.fixture(scope="module")
def evaluator(network, database) -> Evaluator:
    return Evaluator.from_network(network, STANDARD, bearoff=database)


@pytest.fixture(scope="module")
def positions():
    boards, dice = sample_positions(200, seed=7)
    return boards, dice


class PipValue:
    """A value function that is not a network (as an exported model would not be): the side ahead in
    the race is favoured. Only ``evaluate`` and ``evaluate_flipped`` are needed."""

    def evaluate(self, board: torch.Tensor) -> torch.Tensor:
        mover, opponent = pip_counts(board)
        win = torch.sigmoid((opponent - mover).float() / 15.0)
        return torch.stack([win, 0.3 * win, 0.02 * win, 0.3 * (1 - win), 0.02 * (1 - win)], 1)

    def evaluate_flipped(self, afterstates: torch.Tensor) -> torch.Tensor:
        return self.evaluate(flip_board(afterstates))


# --- 0-ply ----------------------------------------------------------------------------------------


def test_zero_ply_is_the_network_with_clamps(network, positions):
    boards, _ = positions
    evaluator = Evaluator.from_network(network, bearoff=None)
    expected = clamp_outcomes(network.evaluate(boards), boards, STANDARD)
    assert torch.allclose(evaluator.probabilities(boards), expected, atol=1e-6)
    assert torch.allclose(evaluator.equity(boards), cubeless_equity(expected), atol=1e-5)


def test_afterstates_at_zero_ply(network, positions):
    boards, dice = positions
    evaluator = Evaluator.from_network(network, bearoff=None)
    afterstates = legal_afterstates(boards, dice).boards
    ours = evaluator.afterstate_probabilities(afterstates)
    next_side = flip_board(afterstates)
    expected = flip_outcomes(clamp_outcomes(network.evaluate(next_side), next_side, STANDARD))
    points = winning_points(afterstates, STANDARD)
    won = points > 0
    expected[won] = terminal_outcomes(points[won])
    assert torch.allclose(ours, expected, atol=1e-6)


def test_a_finished_game_is_exact_at_every_ply(evaluator):
    # The opponent has borne off all its checkers; the mover, with none off and a checker still in the
    # opponent's home board, has lost a backgammon.
    board = torch.zeros(1, 28, dtype=torch.int8)
    board[0, 24] = 1
    board[0, 6] = 14
    for ply in (0, 1):
        assert torch.equal(evaluator.probabilities(board, ply), terminal_outcomes(torch.tensor([-3])))


def test_bearoff_positions_are_exact(evaluator):
    # The mover's checkers on its 6- and 5-points, the opponent's last checker on its 1-point: the mover
    # wins only by bearing off both now, with 6-5, 6-6, 5-5, 4-4 or 3-3 (6/36). At 0-ply the database
    # says so; at 1 and 2 plies the search reaches the same from exact leaves (terminal wins and the
    # database).
    board = bearoff_board((6, 5), (1,)).unsqueeze(0)
    for ply in (0, 1, 2):
        probs = evaluator.probabilities(board, ply)[0]
        assert float(probs[WIN]) == pytest.approx(6 / 36, abs=1e-6), ply
        assert float(probs[1:].abs().max()) == 0.0


def test_any_value_function_plugs_in(positions):
    boards, _ = positions
    evaluator = Evaluator(PipValue())
    probs = evaluator.probabilities(boards[:20], 1)
    assert probs.shape == (20, 5) and bool(((probs >= 0) & (probs <= 1)).all())


# --- n-ply ------------------------------------------------------------------------------------------


def roll_average(function) -> torch.Tensor:
    return sum(weight(roll) * function(roll) for roll in ALL_ROLLS)


def best_zero_ply(evaluator: Evaluator, board: torch.Tensor, roll) -> torch.Tensor:
    """The afterstate of ``board: int8[28]`` with the best 0-ply equity for ``roll``: ``int8[1, 28]``."""
    afterstates = legal_afterstates(board.unsqueeze(0), torch.tensor([roll])).boards
    equity = cubeless_equity(evaluator.afterstate_probabilities(afterstates, 0))
    return afterstates[int(equity.argmax())].unsqueeze(0)


@pytest.mark.parametrize("value", ["network", "pips"])
def test_one_ply_averages_the_best_zero_ply_reply(value, network, database, positions):
    boards, _ = positions
    function = NetworkValue(network) if value == "network" else PipValue()
    evaluator = Evaluator(function, STANDARD, database)
    some = boards[:5]
    batched = evaluator.probabilities(some, 1)
    for index, board in enumerate(some):
        expected = roll_average(
            lambda roll, board=board: evaluator.afterstate_probabilities(best_zero_ply(evaluator, board, roll))[0]
        )
        assert torch.allclose(batched[index], expected, atol=1e-5), index


def test_two_ply_definitions(network, database):
    board = decode_position_id("4HPwATDgc/ABMA")
    # GNU's definition: each roll's reply is the best at 0-ply, valued at 1-ply.
    gnu = Evaluator.from_network(network, STANDARD, bearoff=database)
    expected = roll_average(lambda roll: gnu.afterstate_probabilities(best_zero_ply(gnu, board, roll), 1)[0])
    assert torch.allclose(gnu.probabilities(board.unsqueeze(0), 2)[0], expected, atol=1e-5)
    # Deep replies: each roll's reply is the 1-ply move choice, valued at 1-ply, i.e. the top of
    # the 1-ply hint.
    deep = Evaluator.from_network(network, STANDARD, bearoff=database, deep_replies=True)
    boards = board.unsqueeze(0).expand(len(ALL_ROLLS), 28)
    hints = deep.hint(boards, torch.tensor(ALL_ROLLS), ply=1, limit=1)
    expected = sum(weight(roll) * torch.tensor(hint[0].probabilities) for roll, hint in zip(ALL_ROLLS, hints))
    assert torch.allclose(deep.probabilities(board.unsqueeze(0), 2)[0], expected, atol=1e-5)


def test_batched_equals_one_at_a_time(evaluator, positions):
    boards, dice = positions
    boards, dice = boards[:6], dice[:6]
    batched = evaluator.probabilities(boards, 1)
    choices = evaluator.best_moves(boards, dice, 1)
    for index in range(boards.shape[0]):
        alone = evaluator.probabilities(boards[index : index + 1], 1)[0]
        assert torch.allclose(batched[index], alone, atol=1e-6)
        assert int(evaluator.best_moves(boards[index : index + 1], dice[index : index + 1], 1)[0]) == int(choices[index])
    # The move choice is the top of the hint.
    chosen = legal_afterstates(boards, dice).select(choices)
    hints = evaluator.hint(boards, dice, 1, limit=1)
    assert [hint[0].board for hint in hints] == [tuple(row) for row in chosen.tolist()]


def test_hint_is_ranked_with_correct_notation(evaluator):
    board = decode_position_id(START)
    roll = (3, 1)
    moves = evaluator.hint(board.unsqueeze(0), torch.tensor([roll]), ply=1)[0]
    afterstates = legal_afterstates(board.unsqueeze(0), torch.tensor([roll]))
    assert len(moves) == int(afterstates.counts[0]) == 16
    assert {move.board for move in moves} == {tuple(row) for row in afterstates.boards.tolist()}
    plies = [move.ply for move in moves]
    assert plies == sorted(plies, reverse=True) and plies[0] == 1 and 0 < plies.count(1) <= 8
    for ply in (0, 1):
        equities = [move.equity for move in moves if move.ply == ply]
        assert equities == sorted(equities, reverse=True)
    for move in moves:
        assert move.difference == pytest.approx(move.equity - moves[0].equity)
        assert move.equity == pytest.approx(float(cubeless_equity(torch.tensor(move.probabilities))), abs=1e-5)
        assert parse_play(board.tolist(), move.play, dice=roll) == move.board
    assert "8/5 6/5" in {move.play for move in moves}
    assert len(evaluator.hint(board.unsqueeze(0), torch.tensor([roll]), ply=1, limit=3)[0]) == 3


def test_move_filter_limits_the_search(network, database):
    board = decode_position_id(START).unsqueeze(0)
    narrow = Evaluator.from_network(network, STANDARD, bearoff=database, move_filter=MoveFilter(keep=2))
    zero = narrow.hint(board, torch.tensor([[3, 1]]), ply=0)[0]
    one = narrow.hint(board, torch.tensor([[3, 1]]), ply=1)[0]
    searched = [move.board for move in one if move.ply == 1]
    assert len(searched) == 2 and set(searched) == {move.board for move in zero[:2]}
    # A zero threshold keeps only the best (and exact ties).
    single = Evaluator.from_network(network, STANDARD, bearoff=database, move_filter=MoveFilter(threshold=0.0))
    assert [move.ply for move in single.hint(board, torch.tensor([[3, 1]]), ply=1)[0]].count(1) == 1
    with pytest.raises(ValueError):
        MoveFilter(keep=0)
    with pytest.raises(ValueError):
        MoveFilter(threshold=-0.1)
    with pytest.raises(ValueError):
        narrow.probabilities(board, -1)


def test_gammon_fields_follow_the_clamps(evaluator, positions):
    boards, _ = positions
    probs = evaluator.probabilities(boards, 1)
    assert bool((probs[:, WIN_GAMMON] <= probs[:, WIN] + 1e-6).all())
    assert bool((probs[:, LOSE_GAMMON] <= 1 - probs[:, WIN] + 1e-6).all())


def test_search_agent_plays_a_match():
    evaluator = Evaluator(PipValue())  # racing play: short games
    result = play_duel(evaluator.agent(1), evaluator.agent(0), games=2, seed=3)
    assert result.games == 2 and result.agent_a == "1-ply" and result.agent_b == "0-ply"


def test_from_path(tmp_path, network, positions):
    boards, _ = positions
    path = tmp_path / "model.pt"
    save_checkpoint(path, checkpoint_payload(network, Config()))
    loaded = Evaluator.from_path(path, bearoff=False)
    direct = Evaluator.from_network(network, bearoff=False)
    assert torch.allclose(loaded.probabilities(boards), direct.probabilities(boards))
    with pytest.raises(FileNotFoundError):
        Evaluator.from_path(tmp_path / "missing.pt", bearoff=False)


@pytest.mark.parametrize("options", [{"bearoff": False, "clamps": False}, {"bearoff": True, "clamps": True}])
def test_greedy_agent_plays_as_the_evaluator_at_0ply(network, database, options):
    """One valuation of plays (``bgtrain.values.static_value``): the greedy agent that ``bgtrain bench PATH.pt``
    plays and ``Evaluator.agent(0)`` choose the same plays given the same options, bear-offs included."""
    from bgtrain.arena.agents import GreedyValueAgent
    from engine.rules import Rules
    from engine.state import State

    bearoff = database if options["bearoff"] else None
    evaluator = Evaluator.from_network(network, bearoff=bearoff or False, clamps=options["clamps"])
    agent = GreedyValueAgent.from_network(network, "net", bearoff=bearoff, clamps=options["clamps"])
    boards, dice = sample_positions(400, 3)
    # Races of three checkers a side: many inside the (3-checker) database.
    three = Rules(name="three", start_points=((24, 1), (23, 1), (22, 1)))
    race = torch.cat((boards, random_boards(200, seed=4, rules=three, race=True)))
    dice = torch.cat((dice, torch.randint(1, 7, (200, 2), generator=torch.Generator().manual_seed(1))))
    state = State(board=race, dice=dice.to(torch.int8), seat=torch.zeros(600, dtype=torch.int8),
                  turn=torch.ones(600, dtype=torch.int32), game_over=torch.zeros(600, dtype=torch.bool),
                  result=torch.zeros(600, dtype=torch.int8))
    afterstates = legal_afterstates(state.board, state.dice)
    assert torch.equal(agent.choose(state, afterstates), evaluator.agent(0).choose(state, afterstates))
    if bearoff is not None:
        assert int(database.covers(afterstates.boards).sum()) > 50  # the database decides many plays
    assert torch.equal(agent.cube_probabilities(race), evaluator.probabilities(race))


def test_each_distinct_position_is_valued_once_and_spread_back():
    """``once_each`` values the distinct rows only (a search reaches the same position many times) and gives
    every row its own row's value; rows that share a hash but differ are valued as they are."""
    from bgtrain.values import static_value
    from engine.random_play import sample_positions

    boards, _ = sample_positions(300, seed=3)
    repeated = torch.cat([boards, boards[:200], boards[50:100]])[torch.randperm(550, generator=torch.Generator().manual_seed(1))]
    seen = []

    def value(rows):
        seen.append(rows.shape[0])
        return rows.to(torch.float32).sum(1, keepdim=True) * torch.arange(1, 4)

    assert torch.equal(static_value.once_each(value, repeated), value(repeated))
    assert seen[0] == torch.unique(repeated, dim=0).shape[0] < 550
    # A hash that maps every row to one key: the check sees the rows differ and values them all.
    original = static_value.board_hash
    try:
        static_value.board_hash = lambda rows: torch.zeros(rows.shape[0], dtype=torch.int64)
        seen.clear()
        assert torch.equal(static_value.once_each(value, repeated), value(repeated))
        assert seen[0] == 550
    finally:
        static_value.board_hash = original
