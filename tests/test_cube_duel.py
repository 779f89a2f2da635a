"""Cubeful benchmark play (``bgtrain.arena.cube_duel``): money games with the cube and matches with Crawford."""

from __future__ import annotations

import pytest
import torch
from helpers import FunctionValue

from bgtrain.arena.agents import GreedyValueAgent, PubevalAgent, RandomAgent
from bgtrain.arena.cube_duel import CubeDuelRecords, cube_probabilities, play_cube_duel
from bgtrain.arena.duel import play_duel
from bgtrain.matfile import DOUBLE, WIN, read_mat, replay_game, save_cubeful_games
from bgtrain.model.network import ValueNetwork
from engine.board import pip_counts
from engine.rules import STANDARD


def pip_race_outcomes(board: torch.Tensor) -> torch.Tensor:
    """A value function with firm opinions, so that the cube is turned: the side to move's winning
    chance from the pip counts, a fifth of the wins and losses gammons."""
    mover, opponent = pip_counts(board)
    win = torch.sigmoid((opponent - mover).to(torch.float32) / 12.0)
    return torch.stack([win, 0.2 * win, 0.01 * win, 0.2 * (1 - win), 0.01 * (1 - win)], 1)


class PipCubeAgent(PubevalAgent):
    """pubeval's checker play, cube decisions from ``pip_race_outcomes`` (the optional
    ``cube_probabilities`` method of an agent)."""

    def __init__(self, name: str) -> None:
        super().__init__(STANDARD)
        self.name = name

    def cube_probabilities(self, board: torch.Tensor) -> torch.Tensor:
        return pip_race_outcomes(board)


def greedy(name: str) -> GreedyValueAgent:
    return GreedyValueAgent(FunctionValue(pip_race_outcomes), name, STANDARD)


def test_probabilities_of_a_greedy_agent_are_for_the_side_to_move():
    board = STANDARD.start_board().clone()
    board[24] -= 1
    board[20] += 1  # the side to move has run a back checker 4 pips
    probabilities = cube_probabilities(greedy("pips"))(board.unsqueeze(0))
    assert torch.allclose(probabilities, pip_race_outcomes(board.unsqueeze(0)))
    assert float(probabilities[0, 0]) > 0.5
    network = ValueNetwork("tesauro198", [8], "sigmoid").eval()
    start = STANDARD.start_board().unsqueeze(0)
    from_network = cube_probabilities(GreedyValueAgent.from_network(network, "net", STANDARD))(start)
    assert torch.allclose(from_network, network.evaluate(start, STANDARD))
    assert cube_probabilities(PubevalAgent()) is None and cube_probabilities(RandomAgent()) is None


def test_money_self_play_is_exactly_even():
    # The same agent on both sides: each pair's twins are the same game with the seats swapped.
    result, raw = play_cube_duel(PipCubeAgent("a"), PipCubeAgent("b"), 16, seed=3)
    points = raw["points"]
    assert all(points[k] + points[k + 8] == 0 for k in range(8))
    assert result.points_per_game == 0.0
    assert result.doubles_per_game > 0.5 and result.drops_per_game > 0  # the cube was in play


def test_without_cube_decisions_cubeful_play_is_cubeless_play():
    # pubeval and random never double: the games are those of the cubeless harness.
    result, _ = play_cube_duel(PubevalAgent(), RandomAgent(2), 20, seed=4)
    cubeless = play_duel(PubevalAgent(), RandomAgent(2), 20, seed=4)
    assert result.doubles_per_game == 0.0
    assert result.points_per_game == pytest.approx(cubeless.points_per_game)


def test_matches_follow_the_crawford_rule_and_replay(tmp_path):
    records = CubeDuelRecords()
    result, raw = play_cube_duel(PipCubeAgent("a"), PipCubeAgent("b"), 8, seed=5, match_length=3,
                               records=records)
    assert sorted(raw["match_won"][k] + raw["match_won"][k + 4] for k in range(4)) == [1, 1, 1, 1]
    assert result.match_win == 0.5
    paths = save_cubeful_games(tmp_path, records, raw["a_seat"], 3, "a", "b", STANDARD)
    assert len(paths) == 8
    for path in paths:
        match = read_mat(path)
        assert match.length == 3
        score, crawford_seen = [0, 0], False
        for game in match.games:
            assert list(game.scores) == score
            crawford = not crawford_seen and 2 in score
            crawford_seen = crawford_seen or crawford
            if crawford:
                assert not any(action.kind == DOUBLE for action in game.actions)
            replayed = replay_game(game)
            score[replayed.winner] += replayed.points
            assert game.actions[-1].kind == WIN
        assert max(score) >= 3
    assert result.doubles_per_game > 0.5


def test_gnu_backgammon_imports_cubeful_matches(tmp_path):
    try:
        import gnubg
    except ImportError:
        pytest.skip("needs GNU Backgammon's bindings: pip install gnubg")
    if not hasattr(gnubg, "command"):
        pytest.skip("needs GNU Backgammon's bindings: pip install gnubg")
    records = CubeDuelRecords()
    _, raw = play_cube_duel(PipCubeAgent("a"), PipCubeAgent("b"), 4, seed=8, match_length=3, records=records)
    for path in save_cubeful_games(tmp_path, records, raw["a_seat"], 3, "a", "b", STANDARD):
        gnubg.command(f"import mat {path}")
        imported = gnubg.match()
        assert imported["match-info"]["match-length"] == 3
        ours = read_mat(path).games
        assert len(imported["games"]) == len(ours)
        for theirs, game in zip(imported["games"], ours):
            replayed = replay_game(game)
            assert theirs["info"]["winner"] == ("X" if replayed.winner == 0 else "O")
            assert theirs["info"]["points-won"] == replayed.points
            assert (theirs["info"]["score-X"], theirs["info"]["score-O"]) == game.scores
            doubles = sum(entry["action"] == "double" for entry in theirs["game"])
            assert doubles == sum(action.kind == DOUBLE for action in game.actions)
