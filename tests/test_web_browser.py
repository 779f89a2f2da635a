"""The page in a real browser: headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)
opens the page of a server on a free loopback port, rolls, clicks a checker, checks that the rings
stand on exactly the points the engine allows for that position and roll, makes the move, confirms
and sees the bot reply. Screenshots go to the test's directory (and, with BGTRAIN_PLAY_SCREENSHOT=DIR,
to DIR: how docs/play-rings.png, docs/play-analysis.png and docs/play-phone.png are made).

The second test plays whole games from a position typed into the page's box, by keyboard and clicks,
to a bear-off win: the final board, the analysis (luck, the equity graph), review mode, the log in a
reopened tab, the phone-sized layout, and the refusal of another origin.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
uvicorn = pytest.importorskip("uvicorn")

from bgtrain.values.evaluator import Evaluator
from bgtrain.web.dice import SeededDice
from bgtrain.web.game import Session, Settings
from bgtrain.web.server import create_app
from engine import kernels
from engine.reference import reference_plays

CHROMIUM = Path("/usr/bin/chromium")
SEED = 5  # the dice start 5, 3: the person wins the opening roll and plays 5-3

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install -y chromium)"),
]


def expected_rings(board, dice, source: int) -> dict[int, str]:
    """Where the checker on ``source`` may go, from the reference generator's move sequences: the
    points its first move reaches (one die) and the points it reaches by moving on at once with the
    next dice (combined), in legal plays of this roll."""
    rings: dict[int, str] = {}
    for sequences in reference_plays(board, dice).values():
        for sequence in sequences:
            where = source
            for count, (start, target, _) in enumerate(sequence, 1):
                if start != where:
                    break
                where = target
                if count == 1 or rings.get(target) != "single":
                    rings[target] = "single" if count == 1 else rings.get(target, "combined")
                if target == 0:
                    break
    return rings


@contextlib.contextmanager
def serve(session: Session):
    """``session`` served by uvicorn on a free loopback port: yields the page's URL."""
    config = uvicorn.Config(create_app(session, "bgtrain-default"), host="127.0.0.1", port=0, log_level="warning")
    served = uvicorn.Server(config)
    thread = threading.Thread(target=served.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not served.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    port = served.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        served.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def evaluator():
    previous = kernels.set_mode("never")
    yield Evaluator.from_path("checkpoints/bgtrain-default.pt", bearoff=False)
    kernels.set_mode(previous)


@pytest.fixture
def server(evaluator, tmp_path):
    session = Session(evaluator, Settings(clock_seconds=120, auto_play_forced=False), SeededDice(SEED),
                      save_path=tmp_path / "session.json")
    with serve(session) as url:
        yield session, url


def save_screenshot(page, tmp_path: Path, name: str, selector: str | None = "#board") -> Path:
    """The element ``selector`` (None: the viewport) as a PNG in ``tmp_path`` and, with
    BGTRAIN_PLAY_SCREENSHOT=DIR, in DIR."""
    path = tmp_path / name
    (page.locator(selector) if selector else page).screenshot(path=str(path))
    target = os.environ.get("BGTRAIN_PLAY_SCREENSHOT")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / name)
    return path


def test_rings_move_and_bot_reply_in_chromium(server, tmp_path):
    session, url = server
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url)
        page.wait_for_function("() => typeof state !== 'undefined' && state && state.phase === 'opening'")
        page.click("#roll")
        page.wait_for_function("() => state.phase === 'move' && document.body.dataset.busy === 'no'")
        board, dice = session.board, session.dice
        assert page.locator("g.die").count() == (4 if dice[0] == dice[1] else 2)

        # Click the checker with the most places to go, and read the rings the page drew.
        choices = {source: expected_rings(board, dice, source)
                   for source in range(1, 26) if board[source] > 0}
        source = max(choices, key=lambda s: (len(choices[s]), s))
        page.locator(f'g.checker.you[data-point="{source}"]').last.click()
        rings = page.eval_on_selector_all(".ring", "els => els.map(e => [Number(e.dataset.target), e.dataset.kind])")
        assert dict(rings) == choices[source] and len(rings) == len(choices[source])
        assert "combined" in dict(rings).values()
        shot = save_screenshot(page, tmp_path, "play-rings.png")
        assert shot.stat().st_size > 10_000

        # Turning the rings off hides them; on again shows them.
        page.uncheck("#rings")
        assert page.locator(".ring").count() == 0
        page.check("#rings")
        assert page.locator(".ring").count() == len(rings)

        # Play: a single-die ring first, then whatever the page offers, then confirm.
        page.locator(".ring-single").first.click()
        for _ in range(4):
            page.wait_for_function("() => document.body.dataset.busy === 'no'")
            state = page.evaluate("() => state")
            if state["can_confirm"]:
                break
            source = next(iter(state["destinations"]))
            page.locator(f'g.checker.you[data-point="{source}"]').last.click()
            page.locator(".ring").first.click()
        page.wait_for_function("() => state.can_confirm")
        page.click("#confirm")

        # The bot replies: its play is shown step by step, then it is the person's turn again.
        page.wait_for_function("() => state.record.length >= 2 && document.body.dataset.busy === 'no'",
                               timeout=30_000)
        record = page.evaluate("() => state.record")
        assert record[0]["who"] == "you" and record[1]["who"] == "bgtrain"
        assert page.locator("#log").inner_text().count("bgtrain plays") == 1
        assert page.evaluate("() => state.turn") == "you"
        save_screenshot(page, tmp_path, "play-after-bot.png")
        assert not errors, errors
        browser.close()


# Nine checkers a side on the 1- to 6-points (2, 2, 2, 1, 1, 1; XG's bottom player is the person): a
# game of a few turns, ending in a bear-off.
RACE = "XGID=-BBBAAA------------aaabbb-:0:0:1:00:0:0:0:0:10"


def wait_idle(page) -> dict:
    page.wait_for_function("() => state && document.body.dataset.busy === 'no'", timeout=30_000)
    return page.evaluate("() => state")


def play_to_the_end(page) -> dict:
    """Keys for roll (R), take (T), undo (U) and confirm (Enter); clicks for the checkers. The person
    plays as a beginner: the back checker to the farthest point it can reach, inside the board rather
    than off when it can, so the analysis has errors to mark."""
    undone = False
    for _ in range(80):
        state = wait_idle(page)
        if state["phase"] in ("game_over", "match_over"):
            return state
        if state["phase"] == "doubled":
            page.keyboard.press("t")
        elif state["phase"] in ("roll", "opening"):
            page.keyboard.press("r")
        elif state["can_confirm"]:
            page.keyboard.press("Enter")
        else:
            source = max(state["destinations"], key=int)
            target = max(option["target"] for option in state["destinations"][source])
            page.locator(f'g.checker.you[data-point="{source}"]').last.click()
            page.locator(f'.ring[data-target="{target}"]').click()
            if not undone:
                assert wait_idle(page)["can_undo"]
                page.keyboard.press("u")
                assert not wait_idle(page)["can_undo"]
                undone = True
    raise AssertionError("the game did not end")


def test_a_game_from_a_position_to_the_analysis_in_chromium(evaluator, tmp_path):
    websockets_client = pytest.importorskip("websockets.sync.client")
    session = Session(evaluator, Settings(clock_seconds=None, auto_play_forced=False), SeededDice(11),
                      save_path=tmp_path / "session.json")
    with serve(session) as url, playwright.sync_playwright() as driver:
        # Another website's page may not drive the game: its WebSocket and a rebinding Host are refused.
        socket_url = url.replace("http://", "ws://") + "ws"
        with pytest.raises(Exception, match="403"):
            websockets_client.connect(socket_url, origin="http://example.com", open_timeout=10)
        with websockets_client.connect(socket_url, origin=url.rstrip("/"), open_timeout=10) as own:
            assert json.loads(own.recv(timeout=10))["type"] == "update"
        rebinding = urllib.request.Request(url + "session.json", headers={"Host": "example.com"})
        with pytest.raises(urllib.error.HTTPError, match="403"):
            urllib.request.urlopen(rebinding, timeout=10)

        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url)
        wait_idle(page)
        page.fill("#position", RACE)
        page.click("#position-start")
        state = wait_idle(page)
        assert state["setup"] == RACE and state["phase"] == "roll" and state["board"]["off"]["you"] == 6
        assert page.locator("g.checker.you").count() == 9 and page.locator(".tray-label").count() == 2
        assert "you play white" in page.locator("#sides").inner_text()

        # D doubles (the bot, far behind, may pass: then N starts the position again), then play it out.
        page.keyboard.press("d")
        state = wait_idle(page)
        assert "you double to 2" in page.locator("#log").inner_text()
        if state["phase"] == "game_over":
            page.keyboard.press("n")
            assert wait_idle(page)["board"]["off"]["you"] == 6
        state = play_to_the_end(page)
        result = state["result"]
        assert result["how"] == "bore off"

        # The final board is the one after the winning play: the winner's 15 checkers are off.
        winner = result["winner"]
        assert state["board"]["off"][winner] == 15 and state["board"]["pips"][winner] == 0
        assert page.locator(f"rect.off.{winner}").count() == 15
        assert page.locator(f"g.checker.{winner}").count() == 0
        assert f"pips: you {state['board']['pips']['you']}," in page.locator("#pips").inner_text()

        # The analysis: each side's luck, the equity graph with a point per decision, review mode.
        analysis = page.locator("#analysis").inner_text()
        assert analysis.count("luck ") >= 2 and "rolls (" in analysis
        decisions = len(result["analysis"]["timeline"])
        assert page.eval_on_selector("path.equity-you", "p => p.getAttribute('d').split(/[ML]/).length - 1") == decisions
        marked = [point for point in result["analysis"]["timeline"] if point["mark"]]
        assert marked and page.locator("circle.error-mark").count() == len(marked)
        save_screenshot(page, tmp_path, "play-analysis.png", "#table")
        review = result["analysis"]["review"]
        # A listed mistake opens its move in review.
        mistake = next(m for side in result["analysis"]["sides"] for m in side["mistakes"])
        step = max(i for i, s in enumerate(review) if s["index"] <= mistake["index"])
        page.locator("#analysis li.link").first.click()
        page.wait_for_function(f"() => document.body.dataset.review === '{step}'")
        assert mistake["text"].split(": ")[1] in page.locator("#review-text").inner_text()
        page.click("#review-open")
        page.wait_for_function("() => document.body.dataset.review === '0'")
        page.click("#review-before")
        assert page.locator("g.checker.you").count() == 9  # the set position, before the first play
        text = page.locator("#review-text").inner_text()
        assert text.startswith(f"Play 1 of {len(review)}: you rolled") and ("best" in text)
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.body.dataset.review === '1'")
        save_screenshot(page, tmp_path, "play-review.png", "#table")
        page.keyboard.press("End")  # not a review key: nothing happens
        page.keyboard.press("Escape")
        page.wait_for_function("() => document.body.dataset.review === 'no'")
        assert page.locator(f"rect.off.{winner}").count() == 15  # back to the final board

        # A reopened tab has the same log.
        log = page.locator("#log").inner_text()
        second = browser.new_page(viewport={"width": 390, "height": 844})
        second.goto(url)
        wait_idle(second)
        assert second.locator("#log").inner_text() == log and " win" in log

        # A phone held upright: one column, nothing wider than the screen.
        assert second.evaluate("() => document.documentElement.scrollWidth") <= 390
        assert second.locator("#board").bounding_box()["width"] <= 390
        shot = save_screenshot(second, tmp_path, "play-phone.png", None)
        assert shot.stat().st_size > 10_000
        assert not errors, errors
        browser.close()
