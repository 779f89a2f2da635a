"""The person's turn tree (``bgtrain.web.turn``) against the engine, and whole games of every variant
through the session with a person who clicks at random.

The tree must offer exactly the engine's legal plays: every node where the turn may end is one of
``legal_afterstates``' plays, every legal play is reachable, and the first moves offered are exactly
the first moves of the reference generator's move sequences.
"""

from __future__ import annotations

import random

import pytest
import torch

from bgtrain.model.network import ValueNetwork
from bgtrain.values.evaluator import Evaluator
from bgtrain.web.dice import ScriptedDice, SeededDice
from bgtrain.web.game import Session, Settings
from bgtrain.web.turn import TurnTree
from bgtrain.web.view import session_view
from engine import kernels
from engine.dice import RandomDice
from engine.game import new_games, play
from engine.movegen import legal_afterstates
from engine.random_play import random_choice
from engine.reference import reference_plays
from engine.variants import get_rules

VARIANTS = ("backgammon", "nackgammon", "hypergammon", "dutch", "acey-deucey", "play-to-lose")
ROLLS = [(a, b) for a in range(1, 7) for b in range(1, a + 1)]


@pytest.fixture(autouse=True, scope="module")
def op_by_op_kernels():
    """Op by op, as ``bgtrain play`` runs: a compile would cost seconds here, not save them."""
    previous = kernels.set_mode("never")
    yield
    kernels.set_mode(previous)


def random_positions(rules, count: int, seed: int) -> list[tuple[int, ...]]:
    """Positions met in random games of ``rules`` (a few per turn number, so every phase appears)."""
    dice = RandomDice(seed)
    state = new_games(rules, 8, dice)
    choose = torch.Generator().manual_seed(seed)
    positions = []
    for _ in range(200):
        if bool(state.game_over.all()):
            break
        positions += [tuple(row) for row, over in zip(state.board.tolist(), state.game_over.tolist()) if not over]
        afterstates = legal_afterstates(state.board, state.dice, rules)
        choice = random_choice(afterstates, choose)
        state = play(state, afterstates.select(choice), rules, dice, afterstates.select_extra_roll(choice))
    return random.Random(seed).sample(positions, min(count, len(positions)))


def reachable_plays(tree: TurnTree) -> set:
    """Every (board, extra roll) where the tree lets the turn end, walking all its nodes."""
    seen, ends, stack = set(), set(), [tree.root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if tree.ends_turn(node):
            ends.add((node.board, node.stage == "chosen" and not node.dice_left))
        stack += [child for _, child in tree.children(node)]
        stack += [tree.choose_double(node, die) for die in tree.double_choices(node)]
    return ends


def check_tree_against_engine(variant: str, positions: int, rolls: int) -> None:
    rules = get_rules(variant)
    generator = random.Random(1)
    for board in random_positions(rules, positions, seed=VARIANTS.index(variant)):
        for dice in generator.sample(ROLLS, rolls):
            tree = TurnTree(board, dice, rules)
            assert reachable_plays(tree) == tree.plays, (board, dice)
            if tree.acey_deucey_roll and positions < 20:
                continue  # the reference walks every sequence of the 1-2 and its doubles: slow
            first_moves = {(step.source, step.target) for step, _ in tree.children(tree.root)}
            sequences = [seq for seqs in reference_plays(board, dice, rules).values() for seq in seqs if seq]
            expected = {(source, target) for (source, target, _), *_ in sequences}
            assert first_moves == expected, (board, dice)


@pytest.mark.parametrize("variant", VARIANTS)
def test_tree_offers_exactly_the_engines_plays(variant):
    check_tree_against_engine(variant, positions=3 if variant == "acey-deucey" else 6, rolls=3)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_tree_offers_exactly_the_engines_plays_many_positions(variant):
    check_tree_against_engine(variant, positions=40, rolls=21)


def test_destinations_single_and_combined():
    # The start position with 6-5: from the 24-point 24/18 (the 6) and 24/18/13 (both dice); 24/19
    # is the opponent's 6-point (x x x x x), closed. From the 13-point: 13/7, 13/8 and 13/2.
    rules = get_rules("backgammon")
    board = tuple(rules.start_board().tolist())
    tree = TurnTree(board, (6, 5), rules)
    options = tree.destinations(tree.root)
    assert {o["target"]: o["kind"] for o in options[24]} == {18: "single", 13: "combined"}
    assert {o["target"]: o["kind"] for o in options[13]} == {7: "single", 8: "single", 2: "combined"}


def tiny_evaluator(variant: str) -> Evaluator:
    torch.manual_seed(0)
    return Evaluator.from_network(ValueNetwork("tesauro198", (8,)), get_rules(variant), bearoff=False)


# Long games (15 checkers from the hand) and slow move generation run in the slow set.
LONG_GAMES = ("nackgammon", "dutch", "acey-deucey")


@pytest.mark.parametrize("variant", [
    pytest.param(v, marks=pytest.mark.slow) if v in LONG_GAMES else v for v in VARIANTS
])
def test_random_person_plays_whole_games(variant):
    evaluator = tiny_evaluator(variant)
    session = Session(evaluator, Settings(clock_seconds=None, auto_play_forced=False), SeededDice(7))
    clicks = random.Random(3)
    for _ in range(3000):
        view = session_view(session)
        phase = view["phase"]
        if phase == "game_over":
            break
        if phase == "doubled":
            session.take()
        elif phase in ("opening", "roll"):
            session.double() if view["cube"]["can_double"] and clicks.random() < 0.05 else session.roll()
        elif view["double_choices"]:
            session.choose_double(clicks.choice(view["double_choices"]))
        elif view["destinations"] and (not view["can_confirm"] or clicks.random() < 0.7):
            source = clicks.choice(sorted(view["destinations"]))
            session.move(int(source), clicks.choice(view["destinations"][source])["target"])
        else:
            assert view["can_confirm"]
            session.confirm()
    assert session.phase == "game_over", variant
    assert session.result["points"] >= 1 and sum(session.score) == session.result["points"]
    moves = [event for event in session.events if event["kind"] == "move"]
    for move in moves:  # every play recorded is one of the engine's legal plays
        afterstates = legal_afterstates(torch.tensor([move["before"]], dtype=torch.int8),
                                        torch.tensor([move["dice"]]), evaluator.rules)
        assert move["after"] in afterstates.boards.tolist()
    analysis = session.result["analysis"]
    assert [side["name"] for side in analysis["sides"]] == ["you", "bgtrain"]


def test_acey_deucey_one_two_then_a_chosen_double_and_another_roll():
    # The opening roll: the person 2, the bot 1, so the person plays 2-1, an acey-deucey roll: the 1
    # and the 2 (checkers entering from the hand), then a double of their choice, then rolls again.
    session = Session(tiny_evaluator("acey-deucey"), Settings(clock_seconds=None, auto_play_forced=False),
                      ScriptedDice([2, 1, 5, 3, 6, 4, 2, 2]))
    session.roll()
    view = session_view(session)
    assert view["dice"] == [2, 1] and view["double_choices"] == [] and not view["can_confirm"]
    assert {o["target"] for o in view["destinations"]["26"]} == {24, 23, 22}
    session.move(26, 24)
    session.move(26, 23)
    view = session_view(session)
    assert view["double_choices"] == [1, 2, 3, 4, 5, 6] and not view["can_confirm"]
    session.choose_double(6)
    for _ in range(4):
        view = session_view(session)
        single = next(o for o in view["destinations"]["26"] if o["kind"] == "single")
        session.move(26, single["target"])  # bar/19, one six at a time
    assert session_view(session)["can_confirm"]
    session.confirm()
    assert session.events[0]["extra_roll"] and session.events[0]["dice"] == [2, 1]
    view = session_view(session)
    assert view["turn"] == "you" and view["phase"] == "move" and view["dice"] == [5, 3]
    assert not view["cube"]["used"]
