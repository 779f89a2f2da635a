"""``bgtrain play``: a person against the bot in the browser.

``turn`` (the person's partial plays, from the engine's legal plays), ``game`` (the session's state
machine), ``advice`` (the bot's choices, hints, the tutor, the analysis), ``record`` (IDs, boards
for the page, ``.mat``), ``view`` (what the page is sent), ``dice``, ``store`` (the session on
disk), ``server`` (the Starlette app: the page, the WebSocket, the clock) and ``static/`` (the page:
an SVG board in plain JavaScript).
"""
