"""The page in a real browser: headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)
opens the page of a server on a free loopback port, rolls, clicks a checker, checks that the rings
stand on exactly the points the engine allows for that position and roll, makes the move, confirms
and sees the bot reply. Screenshots go to the test's directory (and, with BGTRAIN_PLAY_SCREENSHOT=DIR,
to DIR: how docs/play-rings.png is made).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
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


@pytest.fixture
def server(tmp_path):
    previous = kernels.set_mode("never")
    evaluator = Evaluator.from_path("checkpoints/bgtrain-default.pt", bearoff=False)
    session = Session(evaluator, Settings(clock_seconds=120, auto_play_forced=False), SeededDice(SEED),
                      save_path=tmp_path / "session.json")
    config = uvicorn.Config(create_app(session, "bgtrain-default"), host="127.0.0.1", port=0, log_level="warning")
    served = uvicorn.Server(config)
    thread = threading.Thread(target=served.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not served.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    port = served.servers[0].sockets[0].getsockname()[1]
    yield session, f"http://127.0.0.1:{port}/"
    served.should_exit = True
    thread.join(10)
    kernels.set_mode(previous)


def save_screenshot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.locator("#board").screenshot(path=str(path))
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
        assert page.locator("#log").inner_text().count("bot plays") == 1
        assert page.evaluate("() => state.turn") == "you"
        save_screenshot(page, tmp_path, "play-after-bot.png")
        assert not errors, errors
        browser.close()
