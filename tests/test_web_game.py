"""The play server's protocol and rules, without a browser: Starlette's TestClient drives the
WebSocket in process, the dice are scripted and the clock is a fake one.

Boards below are drawn from the person's side (``o`` the person, ``x`` the bot); ``position(...)`` takes
the person's points (> 0 the person's checkers, < 0 the bot's).
"""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from bgtrain.matfile import read_mat
from bgtrain.values.evaluator import Evaluator
from bgtrain.web.dice import ScriptedDice
from bgtrain.web.game import BOT, YOU, Session, Settings
from bgtrain.web.record import flip
from bgtrain.web.server import create_app
from engine import kernels
from engine.notation import parse_play
from engine.reference import reference_plays
from engine.rules import STANDARD

MODEL = "checkpoints/bgtrain-default.pt"
BASE_URL = "http://127.0.0.1:8765"  # the server's own address: other hosts are refused
SOCKET_URL = "ws://127.0.0.1:8765/ws"


@pytest.fixture(autouse=True, scope="module")
def op_by_op_kernels():
    """Op by op, as ``bgtrain play`` runs: a compile would cost seconds here, not save them."""
    previous = kernels.set_mode("never")
    yield
    kernels.set_mode(previous)


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator.from_path(MODEL, bearoff=False)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def position(points: dict[int, int], bar_you: int = 0, bar_bot: int = 0) -> tuple[int, ...]:
    board = [0] * 28
    for point, count in points.items():
        board[point] = count
    board[25], board[0] = bar_you, -bar_bot
    return tuple(board)


def put(session: Session, board, turn: int = YOU, cube=(1, None)) -> None:
    """Set up a game in progress: ``board`` from the person's side, ``turn`` before its roll."""
    session.board = board if turn == YOU else flip(board)
    session.turn, session.phase = turn, "roll"
    session.cube_value, session.cube_owner = cube


class Client:
    """One page: sends requests on the WebSocket and reads the answers."""

    def __init__(self, session: Session) -> None:
        self.test_client = TestClient(create_app(session, "test", clock_task=False), base_url=BASE_URL)
        self.test_client.__enter__()
        self.socket = self.test_client.websocket_connect(SOCKET_URL).__enter__()
        self.state = self.socket.receive_json()["state"]

    def __call__(self, action: str, **fields) -> dict:
        self.socket.send_json({"action": action, **fields})
        answer = self.socket.receive_json()
        if answer["type"] == "update":
            self.state = answer["state"]
        return answer

    def close(self) -> None:
        self.socket.__exit__(None, None, None)
        self.test_client.__exit__(None, None, None)


@pytest.fixture
def connect():
    clients = []

    def make(session: Session) -> Client:
        clients.append(Client(session))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def event_types(answer: dict) -> list[str]:
    return [event["type"] for event in answer["events"]]


def test_scripted_game_opening_move_and_bot_reply(evaluator, connect):
    # Opening roll: the person rolls 3, the bot 1, so the person plays 3-1; then the bot rolls 6-4.
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([3, 1, 6, 4, 2, 2]))
    client = connect(session)
    assert client.state["phase"] == "opening"
    answer = client("roll")
    assert answer["events"][0] == {"type": "opening", "you": 3, "bot": 1, "log": "opening roll: you 3, bgtrain 1"}
    state = answer["state"]
    assert state["phase"] == "move" and state["dice"] == [3, 1]
    # From the 8-point: 8/5 with the 3, 8/7 with the 1, 8/4 with both.
    options = {o["target"]: o["kind"] for o in state["destinations"]["8"]}
    assert options == {5: "single", 7: "single", 4: "combined"}
    assert client("move", **{"from": 8, "to": 5})["state"]["dice_left"] == [1]
    assert not client.state["can_confirm"]
    client("move", **{"from": 6, "to": 5})
    assert client.state["can_confirm"] and client.state["can_undo"]
    answer = client("confirm")
    assert "played" in event_types(answer) and answer["events"][-1]["type"] in ("played", "roll")
    bot_steps = [e for e in answer["events"] if e["type"] == "step" and e["who"] == "bot"]
    assert len(bot_steps) == 2  # the bot's 6-4, shown one checker move at a time
    state = answer["state"]
    assert state["phase"] == "roll" and state["turn"] == "you"
    record = state["record"]
    assert record[0]["text"] == "31: 8/5 6/5"
    assert record[0]["position_id"] == "4HPwATDgc/ABMA" and len(record[0]["match_id"]) == 12
    assert record[1]["who"] == "bgtrain"
    # The bot's play is a legal 6-4 from the position after 8/5 6/5, from its side.
    move = session.events[1]
    assert tuple(move["after"]) in reference_plays(move["before"], (6, 4))


def test_forced_move_is_played_for_the_person(evaluator, connect):
    #  bot's home (person's 19..24): x x x x x on 20..24, 19 open; the person is on the bar with 6-5.
    #  Entering needs the 6 (bar/19); the 5 then moves that checker 19/14: one legal play.
    session = Session(evaluator, Settings(clock_seconds=None, auto_play_forced=True), ScriptedDice([6, 5, 1, 2]))
    put(session, position({1: 7, 2: 7, 12: -5, 20: -2, 21: -2, 22: -2, 23: -2, 24: -2}, bar_you=1))
    client = connect(session)
    answer = client("roll")
    texts = [e.get("text", "") for e in answer["events"]]
    assert "your only legal play was made for you" in texts
    assert session.events[0]["play"] == "bar/14" and session.events[0]["forced"]


def test_larger_die_rule(evaluator, connect):
    #  The person's last outside checker is on 13; the bot holds the 4-point (x x).
    #  6-3: 13/7 or 13/10 can be played, never both (7/4 and 10/4 land on the closed 4-point), so the
    #  6 must be played: only 7 is offered, 13/10 is refused.
    session = Session(evaluator, Settings(clock_seconds=None, auto_play_forced=False), ScriptedDice([6, 3, 2, 1]))
    put(session, position({13: 1, 1: 14, 4: -2, 24: -13}))
    client = connect(session)
    state = client("roll")["state"]
    assert state["destinations"] == {"13": [{"target": 7, "kind": "single",
                                             "steps": [{"source": 13, "target": 7, "die": 6, "hit": False}]}]}
    refused = client("move", **{"from": 13, "to": 10})
    assert refused["type"] == "refused" and "no legal move from point 13 to point 10" in refused["message"]
    client("move", **{"from": 13, "to": 7})
    assert client.state["can_confirm"]
    client("confirm")
    assert session.events[0]["play"] == "13/7"


def test_dance_from_the_bar(evaluator, connect):
    # On the bar against a 5-point board (20..24 closed), 5-5 cannot enter: the turn passes.
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([5, 5, 3, 1, 4, 2]))
    put(session, position({1: 7, 2: 7, 12: -5, 20: -2, 21: -2, 22: -2, 23: -2, 24: -2}, bar_you=1))
    client = connect(session)
    answer = client("roll")
    assert "you cannot move 5-5" in [e.get("text") for e in answer["events"]]
    assert session.events[0]["play"] == "(no move)" and session.events[0]["mat_play"] == ""
    assert session.events[1]["seat"] == BOT  # the bot then rolled 3-1 and played


def race_bot_far_ahead() -> tuple[int, ...]:
    # The bot has 15 checkers home (19..21 of the person's numbering), the person 15 on 7..11.
    return position({7: 3, 8: 3, 9: 3, 10: 3, 11: 3, 19: -5, 20: -5, 21: -5})


def test_the_bot_doubles_and_the_person_takes_or_passes(evaluator, connect):
    for answer_action in ("take", "pass"):
        session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([6, 5, 4, 4, 3, 3, 2, 2] * 4))
        put(session, race_bot_far_ahead(), turn=BOT)
        session._advance([])  # the bot's turn: it doubles
        client = connect(session)
        assert client.state["phase"] == "doubled" and client.state["cube"]["value"] == 1
        hint = client("hint")["hint"]
        assert hint["kind"] == "take" and hint["action"] == "Pass"
        answer = client(answer_action)
        if answer_action == "take":
            # The bot then rolled and played; the person, owning the cube, may redouble.
            assert answer["state"]["cube"] == {"value": 2, "owner": "you", "used": True, "can_double": True}
            assert session.events[1] == {"kind": "take", "seat": YOU}
        else:
            assert answer["state"]["phase"] == "game_over"
            assert answer["state"]["result"]["winner"] == "bot" and session.score == [0, 1]


def test_the_person_doubles_and_the_bot_takes_or_passes(evaluator, connect):
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([3, 1, 6, 4, 6, 5, 2, 1] * 3))
    client = connect(session)
    client("roll")
    client("move", **{"from": 8, "to": 5})
    client("move", **{"from": 6, "to": 5})
    client("confirm")
    answer = client("double")  # an early double: the bot takes
    assert [e["type"] for e in answer["events"]][:2] == ["double", "take"]
    assert answer["state"]["cube"]["value"] == 2 and answer["state"]["cube"]["owner"] == "bot"
    # The person far ahead in a race (the bot's mirror image): the bot passes.
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([6, 5]))
    put(session, flip(race_bot_far_ahead()))
    client = connect(session)
    answer = client("double")
    assert answer["events"][1]["type"] == "pass" and answer["state"]["result"]["points"] == 1


def test_crawford_game(evaluator, connect):
    # A 3-point match: two single-game resignations take the bot to 2, one away: the next game is
    # the Crawford game, where no one may double.
    session = Session(evaluator, Settings(clock_seconds=None, match_length=3), ScriptedDice([3, 1] * 10))
    client = connect(session)
    for _ in range(2):
        client("roll")
        assert client("resign", level="single")["state"]["phase"] == "game_over"
        state = client("next_game")["state"]
    assert state["score"] == {"you": 0, "bot": 2, "length": 3, "crawford": True}
    client("roll")
    client("move", **{"from": 8, "to": 5})
    client("move", **{"from": 6, "to": 5})
    client("confirm")
    assert client.state["phase"] == "move" and not client.state["cube"]["can_double"]
    assert session.decisions[-2]["kind"] == "move"  # the bot did not consider the cube
    assert client("undo")["type"] == "refused"
    client("resign", level="single")
    assert client.state["phase"] == "match_over" and client.state["result"]["match_over"]
    assert client("next_game")["state"]["score"] == {"you": 0, "bot": 0, "length": 3, "crawford": False}


def test_double_refused_in_the_crawford_game(evaluator, connect):
    session = Session(evaluator, Settings(clock_seconds=None, match_length=3), ScriptedDice([1, 2, 3, 4]))
    session.score, session.crawford = [2, 0], True
    put(session, position({6: 5, 8: 3, 13: 5, 24: 2, 1: -2, 12: -5, 17: -3, 19: -5}))
    answer = connect(session)("double")
    assert answer == {"type": "refused", "message": "no doubling in the Crawford game"}


def test_clock_expiry_plays_the_best_move_or_loses(evaluator, connect):
    clock = FakeClock()
    session = Session(evaluator, Settings(clock_seconds=30), ScriptedDice([3, 1, 6, 4, 5, 2]), clock)
    client = connect(session)
    state = client("roll")["state"]
    assert state["clock"]["seconds_left"] == 30 and state["clock"]["action"] == "play_best"
    client("move", **{"from": 24, "to": 23})  # a partial move is discarded at zero
    clock.now += 29.5
    assert client("state")["events"] == []
    clock.now += 1.0
    answer = client("state")
    assert answer["events"][0]["text"] == "time is up"
    best = evaluator.hint(torch.tensor([session.events[0]["before"]], dtype=torch.int8), torch.tensor([[3, 1]]))[0][0]
    assert session.events[0]["play"] == best.play and answer["state"]["turn"] == "you"
    # The other setting: at zero the game is lost.
    clock = FakeClock()
    session = Session(evaluator, Settings(clock_seconds=5, clock_action="lose"), ScriptedDice([3, 1]), clock)
    client = connect(session)
    client("roll")
    clock.now += 6
    answer = client("move", **{"from": 8, "to": 5})
    assert answer["type"] == "refused" and "the game is over" in answer["message"]
    assert answer["update"]["state"]["result"] == {**answer["update"]["state"]["result"], "winner": "bot",
                                                   "how": "time", "points": 1}


def test_illegal_requests_are_refused_and_change_nothing(evaluator, connect):
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([3, 1, 6, 4]))
    client = connect(session)
    before = json.dumps(session.to_json(), sort_keys=True)
    cases = [
        ({"action": "move", "from": 8, "to": 5}, "cannot move now: roll to start the game"),
        ({"action": "take"}, "cannot take now: roll to start the game"),
        ({"action": "fly"}, "unknown action 'fly'"),
    ]
    for request, message in cases:
        assert client(request.pop("action"), **request) == {"type": "refused", "message": message}
    assert json.dumps(session.to_json(), sort_keys=True) == before
    client("roll")
    before = json.dumps(session.to_json(), sort_keys=True)
    for request in ({"action": "move", "from": 8, "to": 4.5}, {"action": "move", "from": 13, "to": 12},
                    {"action": "confirm"}, {"action": "double"}, {"action": "undo"}, {"action": "next_game"}):
        assert client(request.pop("action"), **request)["type"] == "refused"
    client.socket.send_text("not json")
    assert client.socket.receive_json()["type"] == "refused"
    assert json.dumps(session.to_json(), sort_keys=True) == before
    # The cube owned by the bot: the person may not double.
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([6, 5]))
    put(session, position({6: 5, 8: 3, 13: 5, 24: 2, 1: -2, 12: -5, 17: -3, 19: -5}), cube=(2, BOT))
    assert connect(session)("double")["message"] == "you cannot double: the cube is not yours"


def test_save_resume_and_mat_record(evaluator, connect, tmp_path):
    save = tmp_path / "session.json"
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([3, 1, 6, 4, 5, 2] * 3), save_path=save)
    client = connect(session)
    client("roll")
    client("move", **{"from": 8, "to": 5})
    client("move", **{"from": 6, "to": 5})
    client("confirm")
    # A new server (the tab and the process closed) resumes from the file.
    resumed = Session.from_json(json.loads(save.read_text()), evaluator, save_path=save)
    second = connect(resumed)
    assert second.state["record"] == client.state["record"] and second.state["phase"] == client.state["phase"]
    second("resign", level="single")
    text = second.test_client.get("/record.mat").text
    (tmp_path / "game.mat").write_text(text)
    match = read_mat(tmp_path / "game.mat")
    assert match.length == 0 and len(match.games) == 1
    # Every play written replays legally from the start (replay_game does not read resignations).
    board = tuple(STANDARD.start_board().tolist())
    moves = [action for action in match.games[0].actions if action.kind == "move"]
    assert [action.player for action in moves] == [0, 1]
    for action in moves:
        board = flip(parse_play(board, action.play, dice=action.dice))
    assert board == flip(tuple(session.events[1]["after"]))
    assert text.splitlines()[-1].strip() == "Wins 1 point"


def test_hints_and_tutor(evaluator, connect):
    session = Session(evaluator, Settings(clock_seconds=None, tutor=True, tutor_threshold=0.04),
                      ScriptedDice([3, 1, 6, 4, 5, 2]))
    client = connect(session)
    client("roll")
    hint = client("hint")["hint"]
    assert hint["kind"] == "plays" and hint["plays"][0]["play"] == "8/5 6/5"
    columns = {"win", "win_gammon", "win_backgammon", "lose", "lose_gammon", "lose_backgammon", "equity",
               "difference"}
    assert columns <= set(hint["plays"][0]) and hint["plays"][1]["difference"] < 0
    # A poor play (24/20): the tutor holds it back; with force it is played.
    client("move", **{"from": 24, "to": 20})
    answer = client("confirm")
    assert answer["events"][0]["type"] == "tutor" and client.state["phase"] == "move"
    answer = client("confirm", force=True)
    assert client.state["phase"] == "roll"
    hint = client("hint")["hint"]
    assert hint["kind"] == "cube" and hint["action"].startswith("No double")


def test_automatic_double_on_a_tied_opening_roll(evaluator, connect):
    # Money play with one automatic double: the tied 3-3 doubles the centred cube, then 4-2 starts.
    session = Session(evaluator, Settings(clock_seconds=None, automatic_doubles=1), ScriptedDice([3, 3, 4, 2]))
    answer = connect(session)("roll")
    assert [e["type"] for e in answer["events"]][:3] == ["opening", "opening", "message"]
    assert answer["state"]["cube"]["value"] == 2 and answer["state"]["cube"]["owner"] == "centred"
    assert answer["state"]["dice"] == [4, 2]


def test_resignations_accepted_or_declined(evaluator, connect):
    #  The person's 15 checkers are still on 18..22, the bot has 11 off and 4 left on its 1- and
    #  2-points (the person's 24 and 23): the bot wins a gammon nearly always, a backgammon often. The
    #  cube is turned (2, the person's), so gammons count: a single game and a gammon are declined, a
    #  backgammon (3 points times the cube) accepted.
    board = position({18: 3, 19: 3, 20: 3, 21: 3, 22: 3, 23: -2, 24: -2})
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([6, 5]))
    put(session, board, cube=(2, YOU))
    client = connect(session)
    for level in ("single", "gammon"):
        answer = client("resign", level=level)
        assert answer["events"][-1]["text"] == "bgtrain declines the resignation; play on"
        assert answer["state"]["phase"] == "roll" and answer["state"]["result"] is None
    answer = client("resign", level="backgammon")
    result = answer["state"]["result"]
    assert (result["winner"], result["points"], result["how"]) == ("bot", 6, "resign")


def test_the_final_board_after_the_winning_play_is_kept(evaluator, connect, tmp_path):
    # The person's last checker is on the 1-point: any roll bears it off (a forced play, made for
    # them). The page's board and the saved session then hold the position after that play.
    save = tmp_path / "session.json"
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([6, 5]), save_path=save)
    put(session, position({1: 1, 19: -5, 20: -5, 21: -5}))
    board = connect(session)("roll")["state"]["board"]
    assert session.phase == "game_over" and session.result["winner"] == "you"
    assert board["off"] == {"you": 15, "bot": 0} and board["pips"]["you"] == 0
    assert json.loads(save.read_text())["board"][1] == 0
    # The bot's winning bear-off: its last checker (on the person's 24-point) goes off.
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([6, 5]))
    put(session, position({24: -1, 7: 5, 8: 5, 9: 5}), turn=BOT, cube=(2, YOU))  # no double: the cube is yours
    session._advance([])
    board = connect(session)("state")["state"]["board"]
    assert session.result["winner"] == "bot"
    assert board["off"]["bot"] == 15 and board["points"][24] == 0 and board["pips"]["bot"] == 0


def test_other_origins_and_hosts_are_refused(evaluator):
    from starlette.websockets import WebSocketDisconnect

    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([3, 1]))
    with TestClient(create_app(session, "test", clock_task=False), base_url=BASE_URL) as client:
        with pytest.raises(WebSocketDisconnect) as refused, \
                client.websocket_connect(SOCKET_URL, headers={"origin": "http://example.com"}):
            pass
        assert refused.value.code == 1008 and "http://example.com" in refused.value.reason
        with client.websocket_connect(SOCKET_URL, headers={"origin": "http://127.0.0.1:8765"}) as socket:
            assert socket.receive_json()["state"]["phase"] == "opening"
        # DNS rebinding: another name for 127.0.0.1 in Host.
        answer = client.get("/session.json", headers={"host": "evil.example:8765"})
        assert answer.status_code == 403 and "evil.example" in answer.text
        assert client.get("/session.json", headers={"host": "127.0.0.1:9999"}).status_code == 403
        assert client.get("/session.json").status_code == 200
        assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_settings_are_bounded_by_type_and_range(evaluator, connect):
    session = Session(evaluator, Settings(clock_seconds=30), ScriptedDice([3, 1, 6, 4]))
    client = connect(session)
    before = session.settings
    cases = [
        ('{"action": "settings", "changes": {"clock_seconds": 1e999}}',
         "clock_seconds must be a number of seconds (or null for no clock) from 1 to 3600, not inf"),
        ('{"action": "settings", "changes": {"clock_seconds": "abc"}}', "clock_seconds must be a number"),
        ('{"action": "settings", "changes": {"clock_seconds": 0}}', "clock_seconds must be a number"),
        ('{"action": "settings", "changes": {"tutor_threshold": "abc"}}',
         "tutor_threshold must be an equity from 0 to 1, not 'abc'"),
        ('{"action": "settings", "changes": {"tutor_threshold": -0.5}}', "tutor_threshold must be an equity"),
        ('{"action": "settings", "changes": {"tutor": "yes"}}', "tutor must be true or false, not 'yes'"),
        ('{"action": "settings", "changes": {"clock_cube": 1}}', "clock_cube must be true or false"),
        ('{"action": "settings", "changes": {"clock_action": ["lose"]}}', "clock_action must be one of"),
        ('{"action": "settings", "changes": {"clock_seconds": NaN}}', "a request must be a JSON object"),
        ('{"action": "settings", "changes": {"ply": 3}}', "cannot change ply during play"),
    ]
    for text, message in cases:
        client.socket.send_text(text)
        answer = client.socket.receive_json()
        assert answer["type"] == "refused" and answer["message"].startswith(message), (text, answer)
        assert "<=" not in answer["message"] and "Traceback" not in answer["message"]
    assert session.settings == before
    assert client.test_client.get("/session.json").status_code == 200
    answer = client("settings", changes={"clock_seconds": 20, "clock_cube": True, "tutor_threshold": 0.08})
    assert answer["state"]["settings"]["clock_seconds"] == 20 and session.settings.clock_cube


def test_hostile_frames_get_plain_refusals_and_the_connection_stays(evaluator, connect):
    session = Session(evaluator, Settings(clock_seconds=None), ScriptedDice([3, 1, 6, 4]))
    client = connect(session)
    frames = [
        ("[" * 200_000, "a request is at most 4,096 characters, not 200,000"),
        ("[" * 4000, "a request is a flat JSON object; this one is nested too deeply to read"),
        ('{"action": "move", "from": ' + "9" * 30 + ', "to": 1}', "'from' must be a whole number"),
        ('{"action": "move", "from": "' + "9" * 5000 + '", "to": 1}', "a request is at most 4,096"),
    ]
    for text, message in frames:
        client.socket.send_text(text)
        answer = client.socket.receive_json()
        assert answer["type"] == "refused" and answer["message"].startswith(message), answer
        assert len(answer["message"]) < 200
    client.socket.send_bytes(b'{"action": "state"}')
    assert client.socket.receive_json()["message"].startswith("a request is a JSON object sent as text")
    assert client("state")["type"] == "update"  # still connected and answering


def test_the_clock_times_cube_decisions_only_when_asked(evaluator, connect):
    clock = FakeClock()
    session = Session(evaluator, Settings(clock_seconds=10), ScriptedDice([3, 1, 6, 4, 5, 2, 4, 3]), clock)
    client = connect(session)
    client("roll")
    client("move", **{"from": 8, "to": 5})
    client("move", **{"from": 6, "to": 5})
    client("confirm")
    # Before the person's roll, with the cube free to turn: by default no clock runs (one turn, one period).
    assert client.state["phase"] == "roll" and client.state["clock"] is None
    clock.now += 100
    assert client("state")["events"] == []
    # With clock_cube the roll-or-double decision gets its own period; at zero it is made (no double).
    assert client("settings", changes={"clock_cube": True})["state"]["clock"]["seconds_left"] == 10
    clock.now += 11
    answer = client("state")
    assert answer["events"][0]["text"] == "time is up" and answer["state"]["phase"] == "move"
    assert session.decisions[-1]["text"] == "No double" and answer["state"]["clock"]["seconds_left"] == 10
