"""Only the server's own page may drive the game: an ASGI middleware that refuses any request whose
``Host`` is not the server's loopback address, and any WebSocket whose ``Origin`` is not the page the
server served.

Why both. The server listens on 127.0.0.1, but a web page from anywhere, open in the same browser,
can still reach it: a WebSocket is not bound by the same-origin policy (the browser sends the page's
``Origin`` and leaves the decision to the server), so without the ``Origin`` check any site could read
and play the person's game. A DNS-rebinding page (its own name re-pointed at 127.0.0.1) reaches the
HTTP routes with its own name in ``Host``; the ``Host`` check refuses it. Clients that are not browsers
(scripts, the tests) send no ``Origin`` and may connect; they could reach the port anyway.
"""

from __future__ import annotations

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def split_host(host: str) -> tuple[str, int | None]:
    """``"127.0.0.1:8765"`` -> ``("127.0.0.1", 8765)``; ``"[::1]"`` -> ``("[::1]", None)``."""
    name, colon, port = host.rpartition(":")
    if not colon or name.endswith(":") or (host.startswith("[") and not name.endswith("]")):
        return host.lower(), None
    return (name.lower(), int(port)) if port.isdigit() else (host.lower(), None)


def refusal(scope) -> str | None:
    """Why the request in ``scope`` (HTTP or WebSocket) is refused, or None to let it through."""
    headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", [])}
    host = headers.get("host", "")
    name, port = split_host(host)
    server_port = (scope.get("server") or (None, None))[1]
    if name not in LOOPBACK_NAMES or (port is not None and server_port is not None and port != server_port):
        return f"this game server answers only its own address, not host {host[:60]!r}"
    origin = headers.get("origin")
    if scope["type"] == "websocket" and origin is not None and origin.lower() != f"http://{host}".lower():
        return f"only the game's own page (http://{host}) may connect, not {origin[:60]!r}"
    return None


class OwnPageOnly:
    """The middleware: HTTP answers 403 with the reason; a WebSocket is closed before it is accepted
    (code 1008, policy violation; the browser sees a failed handshake)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        reason = refusal(scope)
        if reason is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            body = (reason + "\n").encode()
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
        else:
            await receive()  # the websocket.connect message
            await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
