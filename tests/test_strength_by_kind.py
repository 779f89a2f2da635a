"""Substituting one agent's plays in one kind of position (``bgtrain.arena.substitution``) and
``scripts/strength_by_kind.py``, which measures what that gains against an opponent on common dice."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from bgtrain.arena.agents import PubevalAgent
from bgtrain.arena.heuristic import HeuristicAgent
from bgtrain.arena.substitution import POSITION_GROUPS, SubstitutedAgent, positions_part
from bgtrain.distributed.duels import play_duel_chunked
from engine.movegen import legal_afterstates
from engine.position_kinds import PositionKind, position_phases
from engine.random_play import sample_positions
from engine.rules import STANDARD
from engine.state import State

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "strength_by_kind.py"


def load_script():
    spec = importlib.util.spec_from_file_location("strength_by_kind", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its worker processes find its functions by name
    spec.loader.exec_module(module)
    return module


def random_play_state(count: int, seed: int) -> State:
    """Positions of random play (every kind, from the opening to the bear-off), turns 0..9 in turn."""
    board, dice = sample_positions(count, seed=seed)
    zeros = torch.zeros(count, dtype=torch.int8)
    turn = (torch.arange(count) % 10).to(torch.int32)
    return State(board=board, dice=dice, seat=zeros, turn=turn, game_over=zeros.bool(), result=zeros)


def test_a_part_of_the_afterstates_is_chosen_from_as_the_whole_is():
    state = random_play_state(500, seed=5)
    afterstates = legal_afterstates(state.board, state.dice)
    index = torch.arange(0, 500, 3)
    part = positions_part(afterstates, index)
    assert torch.equal(part.counts, afterstates.counts[index])
    for position in (0, 17, len(index) - 1):
        whole_rows = slice(int(afterstates.offsets[index[position]]),
                           int(afterstates.offsets[index[position]] + afterstates.counts[index[position]]))
        part_rows = slice(int(part.offsets[position]), int(part.offsets[position] + part.counts[position]))
        assert torch.equal(part.boards[part_rows], afterstates.boards[whole_rows])
        assert bool((part.position[part_rows] == position).all())
    pubeval = PubevalAgent()
    assert torch.equal(pubeval.choose(state.select(index), part), pubeval.choose(state, afterstates)[index])


@pytest.mark.parametrize("group", ["race", "contact", "contact-opening", "contact-behind"])
def test_the_substitute_plays_exactly_its_kind_of_position(group):
    state = random_play_state(2000, seed=7)
    afterstates = legal_afterstates(state.board, state.dice)
    base, substitute = PubevalAgent(), HeuristicAgent(STANDARD)
    agent = SubstitutedAgent(base, substitute, group)
    choice = agent.choose(state, afterstates)
    handed = POSITION_GROUPS[group](state) & (afterstates.counts > 1)
    assert 0 < int(handed.sum()) < 2000
    assert agent.substituted == int(handed.sum())
    assert torch.equal(choice[handed], substitute.choose(state, afterstates)[handed])
    assert torch.equal(choice[~handed], base.choose(state, afterstates)[~handed])


def test_the_kinds_follow_their_rules():
    state = random_play_state(3000, seed=9)
    phases = position_phases(state.board)
    assert torch.equal(POSITION_GROUPS["race"](state), phases == int(PositionKind.RACE))
    contact = POSITION_GROUPS["contact"](state)
    parts = [POSITION_GROUPS[f"contact-{name}"](state) for name in ("ahead", "even", "behind")]
    assert torch.equal(parts[0] | parts[1] | parts[2], contact)  # the race standings split contact
    assert int((parts[0] & parts[1]).sum() + (parts[1] & parts[2]).sum() + (parts[0] & parts[2]).sum()) == 0
    assert torch.equal(POSITION_GROUPS["contact-opening"](state), contact & (state.turn < 6))


def test_the_script_measures_on_common_dice(tmp_path, capsys):
    script = load_script()
    out = tmp_path / "by-kind.json"
    report = script.main(["pubeval", "heuristic", "--kinds", "everywhere,race", "--games", "240", "--seed", "11",
                          "--chunk-pairs", "50", "--json", str(out)])
    assert json.loads(out.read_text()) == report
    runs = {row["kind"]: row for row in report["runs"]}
    # As it is, the games of `bgtrain bench pubeval heuristic --games 240 --seed 11`, in other chunks.
    duel = play_duel_chunked("pubeval", "heuristic", 240, seed=11, chunk_pairs=40)
    assert runs["as is"]["points_per_game"] == pytest.approx(duel.points_per_game)
    # The opponent's plays everywhere: the opponent against itself, each pair of mirrored games cancels.
    assert runs["everywhere"]["points_per_game"] == 0.0 and runs["everywhere"]["interval95"] == 0.0
    assert runs["everywhere"]["difference"] == pytest.approx(-duel.points_per_game)
    assert runs["race"]["substituted_per_game"] > 0 and 0 < runs["race"]["pairs_changed"] < 1
    assert "race" in capsys.readouterr().out


def test_the_script_runs_its_work_in_processes_alike():
    script = load_script()
    # A random opponent draws from each chunk's own stream: the harder case of the two kinds of agent.
    one = script.measure("pubeval", "random", ["contact"], 120, seed=3, chunk_pairs=20, workers=1)
    two = script.measure("pubeval", "random", ["contact"], 120, seed=3, chunk_pairs=20, workers=2)
    assert one["runs"] == two["runs"] and one["runs"][1]["pairs_changed"] > 0


def test_an_unknown_kind_is_one_line(capsys):
    script = load_script()
    with pytest.raises(SystemExit) as stop:
        script.main(["pubeval", "heuristic", "--kinds", "midgame", "--games", "20"])
    assert "unknown kind of position 'midgame'" in str(stop.value)
    assert "contact-opening" in str(stop.value)
