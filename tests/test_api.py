"""``bgtrain serve``'s API contract: wildbg's documented example requests (its README and the tests of
``crates/web/src/axum.rs``) answered with wildbg's fields and error messages, bgtrain's own endpoints,
the bounds, the OpenAPI description, and the batching queue."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from bgtrain.api.app import MAX_QUERY, Engines, create_app
from bgtrain.api.batching import BatchQueue
from bgtrain.values.evaluator import Evaluator
from tests.helpers import tiny_checkpoint

WILDBG_PROBABILITIES = {"win", "winG", "winBg", "loseG", "loseBg"}
START_31 = "/move?die1=3&die2=1&p24=2&p19=-5&p17=-3&p13=5&p12=-5&p8=3&p6=5&p1=-2"  # wildbg's README


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    model = tiny_checkpoint(tmp_path_factory.mktemp("api") / "tiny.pt")
    evaluator = Evaluator.from_path(model, bearoff=False)
    with TestClient(create_app(Engines([evaluator], default_ply=0, max_ply=1))) as test_client:
        yield test_client


def check_moves(body: dict) -> list[dict]:
    assert set(body) == {"moves"}
    for move in body["moves"]:
        assert {"play", "probabilities"} <= set(move)
        assert set(move["probabilities"]) == WILDBG_PROBABILITIES
        assert len(move["play"]) <= 4
        for detail in move["play"]:
            assert set(detail) == {"from", "to"}
            assert 1 <= detail["from"] <= 25 and 0 <= detail["to"] <= 24 and detail["from"] > detail["to"]
    return body["moves"]


def test_wildbg_readme_example(client):
    response = client.get(START_31)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    moves = check_moves(response.json())
    assert len(moves) == 16  # the distinct plays of 31 from the start
    equities = [move["equity"] for move in moves]
    assert equities == sorted(equities, reverse=True)
    assert all(sum(abs(d["from"] - d["to"]) for d in move["play"]) == 4 for move in moves)


@pytest.mark.parametrize(("uri", "message"), [
    # wildbg's own tests (crates/web/src/axum.rs) and their messages, word for word
    ("/eval?p0=1&p4=4&p5=-5", "Index 0 is the bar for player o, number of checkers needs to be negative."),
    ("/move?die1=2&die2=0&p4=4&p5=-5", "Dice values must be between 1 and 6."),
    ("/move?die1=2&die2=1&p4=4&p5=-5&p25=-2", "Index 25 is the bar for player x, number of checkers needs to be positive."),
    # wildbg answers this one in plain text; bgtrain answers every error as {"message": ...}
    ("/move", "Missing field `die1`."),
    ("/eval?p1=16&p2=-1", "Parameter p1 must be between -15 and 15."),
    ("/eval?p1=9&p2=9&p3=-1", "Player x has more than 15 checkers on the board."),
    ("/move?die1=3&die2=1&x_away=2&p5=1&p24=-1", "If o_away is 0, then x_away must also be 0."),
])
def test_wildbg_errors(client, uri, message):
    response = client.get(uri)
    assert response.status_code == 400 and response.headers["content-type"] == "application/json"
    assert response.json() == {"message": message}


def test_wildbg_examples_shapes(client):
    body = client.get("/eval?p1=1&p20=-1&p24=-1").json()
    assert {"cube", "probabilities"} <= set(body)
    assert {"double", "accept"} <= set(body["cube"]) and set(body["probabilities"]) == WILDBG_PROBABILITIES
    # x bears off its last checker with any roll: a certain win at 1-ply (exact game ends; the tiny test
    # network has no bear-off database at 0-ply), so double and o passes.
    body = client.get("/eval?p1=1&p20=-1&p24=-1&ply=1").json()
    assert body["probabilities"]["win"] == 1.0 and body["cube"] == {**body["cube"], "double": True, "accept": False}
    forced = check_moves(client.get("/move?die1=3&die2=1&p5=1&p24=-1").json())
    assert [move["play"] for move in forced] == [[{"from": 5, "to": 4}, {"from": 4, "to": 1}]]
    doubles = check_moves(client.get("/move?die1=1&die2=1&p5=2&p24=-1").json())
    assert len(doubles) == 3 and all(len(move["play"]) == 4 for move in doubles)
    blocked = check_moves(client.get("/move?die1=6&die2=6&p25=1&p19=-2&p20=-2&p21=-2&p22=-2&p23=-2&p24=-2").json())
    assert [move["play"] for move in blocked] == [[]]
    match = check_moves(client.get(START_31 + "&x_away=3&o_away=5").json())
    assert all(0.0 <= move["equity"] <= 1.0 for move in match)  # ranked by match winning chance


def test_bgtrain_endpoints(client):
    body = client.get("/bgtrain/move?position=4HPwATDgc/ABMA&dice=31&limit=3").json()
    assert body["dice"] == [3, 1] and len(body["moves"]) == 3 and body["moves"][0]["rank"] == 1
    assert {"play", "position_id", "equity", "difference", "ply", "probabilities"} <= set(body["moves"][0])
    xgid = "XGID=-b----E-C---eE---c-e----B-:0:0:1:31:0:0:0:0:10"
    assert client.get("/bgtrain/move", params={"position": xgid}).json()["dice"] == [3, 1]
    evaluation = client.get("/bgtrain/eval", params={"position": "4HPwATDgc/ABMA", "match": 7, "score": "2-4",
                                                     "ply": 1}).json()
    assert evaluation["ply"] == 1 and evaluation["variant"] == "backgammon"
    cube = evaluation["cube"]
    assert {"action", "double", "accept", "equities", "costs"} <= set(cube)
    assert cube["equities"]["double_pass"] == 1.0
    redouble = client.get("/bgtrain/eval", params={"position": "4HPwATDgc/ABMA", "cube": 2, "owner": "opponent"}).json()
    assert redouble["cube"]["action"] == "Cube not available"


@pytest.mark.parametrize(("uri", "status", "words"), [
    ("/bgtrain/eval?position=nonsense", 400, "neither a GNU Backgammon position ID"),
    ("/bgtrain/move?position=4HPwATDgc/ABMA", 400, "dice"),
    ("/bgtrain/eval?position=4HPwATDgc/ABMA&ply=2", 400, "0 to 1 plies"),
    ("/bgtrain/eval?position=4HPwATDgc/ABMA&variant=nackgammon", 400, "not served here"),
    ("/bgtrain/eval?position=4HPwATDgc/ABMA&match=5&score=7-1", 400, "beyond a 5-point match"),
    ("/bgtrain/move?position=4HPwATDgc/ABMA&dice=31&limit=0", 400, "limit"),
    ("/eval?p1=1&p2=-1&" + "x" * MAX_QUERY, 414, "longer than"),
    ("/nowhere", 404, "Not Found"),
])
def test_bad_requests(client, uri, status, words):
    response = client.get(uri)
    assert response.status_code == status and words in response.json()["message"]
    assert client.post("/move").status_code == 405


def test_openapi_description(client):
    for path in ("/openapi.json", "/api-docs/openapi.json"):
        document = client.get(path).json()
        assert document["openapi"].startswith("3.")
        assert {"/move", "/eval", "/bgtrain/move", "/bgtrain/eval"} <= set(document["paths"])
        schemas = document["components"]["schemas"]
        assert set(schemas["Probabilities"]["required"]) == WILDBG_PROBABILITIES
        assert set(schemas["MoveDetail"]["properties"]) == {"from", "to"}
        names = {parameter["name"] for parameter in document["paths"]["/move"]["get"]["parameters"]}
        assert {"die1", "die2", "x_away", "o_away", "p0", "p25", "ply", "variant"} <= names


def test_batching_queue_groups_concurrent_requests():
    calls = []

    def double(key, items):
        calls.append((key, list(items)))
        return [key * item for item in items]

    async def scenario():
        queue = BatchQueue({"double": double}, max_batch=64, max_wait=0.05)
        await queue.start()
        try:
            results = await asyncio.gather(*(queue.submit("double", 2 + index % 2, index) for index in range(40)))
        finally:
            await queue.stop()
        return results, queue

    results, queue = asyncio.run(scenario())
    assert results == [(2 + index % 2) * index for index in range(40)]
    assert queue.items == 40 and queue.batches <= 4  # 40 requests in one or two rounds of two keys

    def broken(key, items):
        raise RuntimeError("no network")

    async def failing():
        queue = BatchQueue({"broken": broken})
        try:
            await queue.submit("broken", 0, 1)
        finally:
            await queue.stop()

    with pytest.raises(RuntimeError, match="no network"):
        asyncio.run(failing())


def test_serve_listens_on_this_machine_only_by_default():
    from bgtrain.cli import build_parser, main

    args = build_parser("serve").parse_args(["serve"])
    assert args.host == "127.0.0.1" and args.max_ply == 2
    assert main(["serve", "--ply", "3"]) == 2  # deeper than --max-ply: refused before any model loads
