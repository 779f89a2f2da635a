"""The local game server: a Starlette app with the page, one WebSocket for the game, the record as
downloads, and the move clock.

Protocol on ``/ws`` (JSON objects). The page sends ``{"action": NAME, ...}``:

====================  ===========================================================================
action                fields
====================  ===========================================================================
``state``             (none): the current state
``roll``              ``force`` (optional: past the tutor's warning)
``double``            ``force``
``take`` / ``pass``   ``force``
``move``              ``from`` (1..24, 25 the bar, 26 the hand), ``to`` (0: off), person's numbering
``choose_double``     ``die`` (acey-deucey)
``undo`` / ``confirm``  ``confirm`` takes ``force``
``resign``            ``level``: ``single``, ``gammon`` or ``backgammon``
``next_game``         (none)
``hint``              (none)
``settings``          ``changes``: ``{"tutor": true, "clock_seconds": 20, ...}``
``position``          ``position``: a GNU position ID or an XGID to start from, "" for the opening
====================  ===========================================================================

The server answers ``{"type": "update", "events": [...], "state": {...}}`` (every connected page
gets the update), ``{"type": "hint", "hint": {...}}``, or ``{"type": "refused", "message": "..."}``
for a request the rules or the state do not allow (nothing changes), in one plain sentence: also for a
frame that is not a JSON object, longer than ``MAX_REQUEST_CHARACTERS`` or nested too deeply, and for
a setting out of its type or range (``bgtrain.web.settings``). Only the server's own page may connect:
another ``Origin`` or ``Host`` is refused (``bgtrain.web.guard``). Before every request, and every
quarter second, the clock is checked (``Session.tick``), so a page that waits past zero sees the
setting applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from importlib import resources

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from bgtrain.matfile import JACOBY_NOTE, format_match
from bgtrain.web.game import Refused, Session
from bgtrain.web.guard import OwnPageOnly
from bgtrain.web.record import mat_match
from bgtrain.web.settings import shown
from bgtrain.web.view import session_view

STATIC = resources.files("bgtrain.web") / "static"
TICK_SECONDS = 0.25
# The longest request the page sends is a settings change of a few dozen characters; a position to
# start from (an XGID) is under a hundred.
MAX_REQUEST_CHARACTERS = 4096


class GameServer:
    """One session served to any number of pages (tabs) at once; requests run one at a time."""

    def __init__(self, session: Session, model: str = "") -> None:
        self.session = session
        self.model = model
        self.lock = asyncio.Lock()
        self.sockets: set[WebSocket] = set()

    def state(self) -> dict:
        return session_view(self.session, self.model)

    def handle(self, message: dict) -> dict:
        """One request, synchronously (the bot's thinking runs here): the answer to send. Its events
        get their log lines (``Session.note``) before the state is read, which holds the log."""
        session = self.session
        events = session.tick()
        hint = None
        try:
            if isinstance(message, dict) and message.get("action") == "hint":
                hint = session.hint()
            else:
                events += self._act(message)
        except Refused as refusal:
            session.note(events)
            answer = {"type": "refused", "message": str(refusal)}
            if events:  # the clock ran out before the request: show that
                answer["update"] = {"type": "update", "events": events, "state": self.state()}
            return answer
        session.note(events)
        if hint is not None:
            return {"type": "hint", "hint": hint, "events": events}
        return {"type": "update", "events": events, "state": self.state()}

    def _act(self, message) -> list[dict]:
        """The request's action on the session: its events (``Refused`` when it is not allowed)."""
        session = self.session
        if not isinstance(message, dict):
            raise Refused("a request is a JSON object with an 'action'")
        action = message.get("action")
        force = bool(message.get("force", False))
        if action == "state":
            return []
        if action in ("roll", "double", "take", "confirm"):
            return getattr(session, action)(force=force)
        if action == "pass":
            return session.pass_(force=force)
        if action == "move":
            return session.move(_integer(message, "from"), _integer(message, "to"))
        if action == "choose_double":
            return session.choose_double(_integer(message, "die"))
        if action in ("undo", "next_game"):
            return getattr(session, action)()
        if action == "resign":
            return session.resign(str(message.get("level", ""))[:20])
        if action == "position":
            return session.set_position(message.get("position", ""))
        if action == "settings":
            changes = message.get("changes")
            if not isinstance(changes, dict):
                raise Refused("settings needs 'changes', an object of setting: value")
            return session.change_settings(**changes)
        raise Refused(f"unknown action {shown(action)}")

    async def request(self, message) -> dict:
        async with self.lock:
            try:
                return await asyncio.to_thread(self.handle, message)
            except Exception as error:  # a fault of ours: say so, keep serving
                logging.getLogger(__name__).exception("request %r failed", message)
                return {"type": "refused", "message": f"internal error: {type(error).__name__}: {error}"}

    async def broadcast(self, answer: dict, sender: WebSocket | None = None) -> None:
        for socket in list(self.sockets):
            if socket is sender:
                continue
            with contextlib.suppress(Exception):
                await socket.send_json(answer)

    async def run_clock(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            session = self.session
            if session.deadline is None or session.clock() < session.deadline:
                continue
            async with self.lock:
                events = await asyncio.to_thread(session.tick)
                session.note(events)
            if events:
                await self.broadcast({"type": "update", "events": events, "state": self.state()})


def read_request(frame: dict) -> tuple[object, str | None]:
    """A WebSocket frame as a request: (the parsed JSON, None), or (None, why it is refused). Text
    only, at most ``MAX_REQUEST_CHARACTERS``, no ``NaN``/``Infinity`` literals, and nesting a parser
    can follow: a hostile frame gets a plain answer and the connection stays open."""
    text = frame.get("text")
    if text is None:
        return None, "a request is a JSON object sent as text, not binary data"
    if len(text) > MAX_REQUEST_CHARACTERS:
        return None, f"a request is at most {MAX_REQUEST_CHARACTERS:,} characters, not {len(text):,}"
    try:
        return json.loads(text, parse_constant=_refuse_constant), None
    except RecursionError:
        return None, "a request is a flat JSON object; this one is nested too deeply to read"
    except ValueError as error:
        return None, f"a request must be a JSON object ({str(error)[:80]})"


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number a request may hold")


def _integer(message: dict, name: str) -> int:
    value = message.get(name)
    text = str(value)
    if isinstance(value, bool) or not isinstance(value, int | str) or len(text) > 3 \
            or not text.lstrip("-").isdigit():
        raise Refused(f"{name!r} must be a whole number (a point 0..26 or a die 1..6), not {shown(value)}")
    return int(value)


def create_app(session: Session, model: str = "", clock_task: bool = True) -> Starlette:
    """The app serving ``session``. ``clock_task``: run the background clock (tests drive it
    through requests instead)."""
    server = GameServer(session, model)

    async def index(request):
        return FileResponse(str(STATIC / "index.html"), media_type="text/html")

    async def record_mat(request):
        try:
            match = mat_match(_games(session), session.settings.match_length, session.settings.names,
                              session.rules)
        except ValueError as error:
            return PlainTextResponse(str(error), status_code=409)
        # Games played here follow the Jacoby rule unless it was turned off, as GNU Backgammon's do by default.
        text = format_match(match, JACOBY_NOTE if session.settings.jacoby else None)
        return Response(text, media_type="text/plain",
                        headers={"Content-Disposition": 'attachment; filename="bgtrain-game.mat"'})

    async def record_json(request):
        async with server.lock:
            return JSONResponse(session.to_json(),
                                headers={"Content-Disposition": 'attachment; filename="bgtrain-session.json"'})

    async def socket(websocket: WebSocket):
        await websocket.accept()
        server.sockets.add(websocket)
        try:
            await websocket.send_json({"type": "update", "events": [], "state": server.state()})
            while True:
                frame = await websocket.receive()
                if frame["type"] == "websocket.disconnect":
                    break
                message, problem = read_request(frame)
                if problem is not None:
                    await websocket.send_json({"type": "refused", "message": problem})
                    continue
                answer = await server.request(message)
                await websocket.send_json(answer)
                update = answer if answer["type"] == "update" else answer.get("update")
                if update and (update["events"] or message.get("action") != "state"):
                    await server.broadcast(update, websocket)
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            server.sockets.discard(websocket)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(server.run_clock()) if clock_task else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    app = Starlette(routes=[
        Route("/", index),
        Route("/record.mat", record_mat),
        Route("/session.json", record_json),
        WebSocketRoute("/ws", socket),
        Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
    ], lifespan=lifespan, middleware=[Middleware(OwnPageOnly)])
    app.state.server = server
    return app


def _games(session: Session) -> list[dict]:
    """The finished games, and the one in progress if it has begun."""
    games = list(session.games)
    if session.phase not in ("game_over", "match_over") and session.events:
        games.append({"number": session.game_number, "score_before": session.score_before,
                      "events": session.events, "setup": session.setup})
    return games
