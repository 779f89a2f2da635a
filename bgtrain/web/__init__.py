"""``bgtrain play``: a person against the bot in the browser.

``turn`` (the person's partial plays, from the engine's legal plays), ``game`` (the session's state
machine), ``advice`` (the bot's choices, hints, the tutor), ``analysis`` (a finished game's errors,
equity timeline and review), ``luck`` (each roll's luck, batched over the 21 rolls), ``setup`` (games
from a position ID or XGID), ``settings`` (checked by type and range), ``log`` (the page's log lines),
``record`` (IDs, boards for the page, ``.mat``), ``view`` (what the page is sent), ``dice``,
``store`` (the session on disk), ``guard`` (only the server's own page may connect), ``server`` (the
Starlette app: the page, the WebSocket, the clock) and ``static/`` (the page: an SVG board in plain
JavaScript).
"""
