"""The post-game analysis of ``bgtrain play`` (luck, the equity graph's points, review), games from a
set position, the log kept across reopened tabs and the match score, through the session and its
WebSocket (no browser)."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("starlette")

from bgtrain.values.evaluator import Evaluator
from bgtrain.web.dice import ScriptedDice
from bgtrain.web.game import BOT, Session, Settings
from bgtrain.web.luck import luck_mark, roll_equities, roll_luck
from engine import kernels
from engine.dice import ALL_ROLLS, roll_weights
from engine.rules import STANDARD
from tests.test_web_game import Client, position, put

MODEL = "checkpoints/bgtrain-default.pt"
# A short race: the person (15 checkers on 1..3) and the bot (15 on its 1..3) bear off in a few turns.
RACE = "XGID=-CCC------------------ccc-:0:0:1:00:0:0:0:0:10"


@pytest.fixture(autouse=True, scope="module")
def op_by_op_kernels():
    previous = kernels.set_mode("never")
    yield
    kernels.set_mode(previous)


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator.from_path(MODEL, bearoff=False)


@pytest.fixture
def connect():
    clients = []

    def make(session: Session) -> Client:
        clients.append(Client(session))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def test_roll_luck_against_one_hint_per_roll(evaluator):
    # The batched 21-roll evaluation against the evaluator's own ranked plays, one roll at a time.
    start = STANDARD.start_board().tolist()
    middle = list(position({6: 4, 8: 2, 13: 4, 24: 2, 20: 1, 22: 2, 1: -2, 12: -4, 17: -3, 19: -4, 5: -2}))
    values = roll_equities(evaluator, torch.tensor([start, middle], dtype=torch.int8))
    for row, board in enumerate((start, middle)):
        for column, dice in enumerate(ALL_ROLLS):
            best = evaluator.hint(torch.tensor([board], dtype=torch.int8), torch.tensor([dice]), 0, 1)[0][0]
            assert values[row, column].item() == pytest.approx(best.equity, abs=1e-5)
    # Luck is zero on average over the rolls; 6-6 is a lucky first roll, 2-1 an unlucky one.
    lucks = roll_luck(evaluator, [start] * 21, ALL_ROLLS)
    assert float(torch.tensor(lucks) @ roll_weights()) == pytest.approx(0.0, abs=1e-5)
    assert lucks[ALL_ROLLS.index((6, 6))] > 0.2 and lucks[ALL_ROLLS.index((2, 1))] < 0
    assert luck_mark(0.65) == "very lucky" and luck_mark(-0.31) == "unlucky" and luck_mark(0.1) == ""


def play_out(client: Client, limit: int = 60) -> dict:
    """The person plays each roll's first offered moves until the game is over."""
    for _ in range(limit):
        state = client.state
        if state["phase"] in ("game_over", "match_over"):
            return state
        if state["phase"] in ("opening", "roll"):
            client("roll")
        elif state["phase"] == "doubled":
            client("take")
        elif state["can_confirm"]:
            client("confirm")
        else:
            source, options = next(iter(state["destinations"].items()))
            client("move", **{"from": int(source), "to": options[0]["target"]})
    raise AssertionError("the game did not end")


def test_a_game_from_an_xgid_has_luck_graph_and_review(evaluator, connect):
    session = Session(evaluator, Settings(clock_seconds=None, auto_play_forced=False), ScriptedDice(
        [6, 5, 2, 1, 4, 4, 3, 1, 6, 6, 5, 3, 2, 2, 6, 4, 1, 1, 5, 5] * 3))
    client = connect(session)
    answer = client("position", position=RACE)
    assert answer["state"]["setup"] == RACE and answer["state"]["phase"] == "roll"
    assert answer["state"]["board"]["points"][1:4] == [3, 3, 3]  # XG's bottom player is the person
    state = play_out(client)
    analysis = state["result"]["analysis"]
    timeline, review = analysis["timeline"], analysis["review"]
    moves = [p for p in timeline if p["kind"] == "move"]
    assert len(review) == len(moves) == len(session.events) - 1 - sum(e["kind"] != "move" for e in session.events[:-1])
    # Every roll of a set position has its luck (no opening roll); each side's totals add its rolls up.
    assert all(p["luck"] is not None for p in moves)
    for seat, side in enumerate(analysis["sides"]):
        mine = [p["luck"] for p in moves if p["seat"] == seat]
        assert side["luck"]["rolls"] == len(mine) and side["luck"]["total"] == pytest.approx(sum(mine))
    # Each listed mistake names its point of the timeline (the page opens its move in review).
    mistakes = [m for side in analysis["sides"] for m in side["mistakes"]]
    assert mistakes  # the person plays the first moves offered: some lose equity
    assert all(timeline[m["index"]]["text"] == m["text"] and timeline[m["index"]]["mark"] == m["mark"]
               for m in mistakes)
    assert sum(bool(p["mark"]) for p in timeline) == sum(sum(side["marks"].values()) for side in analysis["sides"])
    # The graph ends at the result: the winner's equity after the winning play is the points won.
    sign = 1 if state["result"]["winner"] == "you" else -1
    assert timeline[-1]["equity"] == pytest.approx(sign * state["result"]["points"])
    # Review: the board before the first play is the set position, the last one after is the final board.
    assert review[0]["before"]["points"][1:4] == [3, 3, 3] and review[0]["who"] == "you"
    assert review[-1]["after"] == state["board"]
    for step in review:
        assert (step["best"] == step["played"]) == step["best_is_played"] or step["loss"] == 0
        assert step["loss"] >= 0 and (step["best_is_played"] or step["best_after"] != step["after"])
    # The next game starts from the same position again (practice); the .mat refuses set positions.
    assert client("next_game")["state"]["board"]["points"][1:4] == [3, 3, 3]
    answer = client.test_client.get("/record.mat")
    assert answer.status_code == 409 and "started from" in answer.text


def test_position_ids_are_checked(evaluator, connect):
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([3, 1, 6, 4]))
    client = connect(session)
    for text, message in [("nonsense", "position ID 'nonsense'"), (7, "the position must be text"),
                          ("x" * 500, "a position ID or XGID is under 120 characters"), ("XGID=-:0:0:1:00:0:0:0:0:10", "XGID")]:
        answer = client("position", position=text)
        assert answer["type"] == "refused" and message in answer["message"], answer
    answer = client("position", position="4HPwATDgc/ABMA:cAkAAAAAAAAA")  # GNU's ID:match ID
    assert answer["state"]["setup"] == "4HPwATDgc/ABMA" and answer["state"]["turn"] == "you"
    # An empty position: games start from the opening again.
    assert client("position", position="")["state"]["phase"] == "opening" and session.setup is None


def test_the_log_is_kept_for_a_reopened_tab(evaluator, connect, tmp_path):
    save = tmp_path / "session.json"
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([3, 1, 6, 4, 5, 2] * 3), save_path=save)
    client = connect(session)
    client("roll")
    client("move", **{"from": 8, "to": 5})
    client("move", **{"from": 6, "to": 5})
    client("confirm")
    log = client.state["log"]
    assert log[:3] == ["opening roll: you 3, bgtrain 1", "you play 31: 8/5 6/5", "bgtrain rolls 6-4"]
    assert connect(session).state["log"] == log  # another tab
    resumed = Session.from_json(json.loads(save.read_text()), evaluator)
    assert connect(resumed).state["log"] == log  # a restarted server


def test_the_match_score_stops_at_the_match_length(evaluator, connect):
    # 2-0 in a 3-point match, the bot wins a gammon: 2-3, not 2-4 (the result still says 2 points).
    session = Session(evaluator, Settings(clock_seconds=None, match_length=3), ScriptedDice([6, 5] * 4))
    session.score = [0, 2]
    put(session, position({13: 3, 14: 3, 15: 3, 16: 3, 17: 3, 24: -1}), turn=BOT)
    session.crawford_done = True
    session._advance([])
    state = connect(session)("state")["state"]
    assert state["phase"] == "match_over" and state["result"]["points"] == 2
    assert state["score"] == {"you": 0, "bot": 3, "length": 3, "crawford": False}
