"""Play the bot in the browser: a local server on 127.0.0.1 and the page it serves.

The game lives on the server and is saved after every action (``--save``, by default
~/.cache/bgtrain/play/session.json), so a closed tab loses nothing and a restarted server resumes the
saved session when it was played with the same model variant (``--new`` starts afresh).

    bgtrain play                          # money play, the shipped model at 0-ply, 30 s a move
    bgtrain play --match 7 --ply 1 --clock 0 --tutor
    bgtrain play --position 4HPwATDgc/ABMA   # practise a position (or an XGID), game after game
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import webbrowser
from pathlib import Path

from bgtrain.model.shipped import MODEL_HELP, shipped_model

ANY_VARIANT = ":any-variant"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help=f"the bot's checkpoint or .onnx (default {MODEL_HELP}); "
                        f"PATH{ANY_VARIANT} plays the --variant with a model trained for another")
    parser.add_argument("--ply", type=int, default=0, help="the bot's search depth, GNU numbering (default 0)")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--money", action="store_true", help="money play (the default)")
    kind.add_argument("--match", type=int, metavar="N", help="a match to N points")
    parser.add_argument("--clock", type=float, default=30.0,
                        help="seconds per decision, 0 for no clock (default 30)")
    parser.add_argument("--clock-cube", action="store_true",
                        help="the clock also runs on your cube decisions (double or roll, take or pass), each "
                        "its own period (default: only checker plays are timed)")
    parser.add_argument("--on-time", choices=("play_best", "lose"), default="play_best",
                        help="at zero: the best play is made for you, or the game is lost (default play_best)")
    parser.add_argument("--variant", help="the rules variant; must be the model's (default: the model's)")
    parser.add_argument("--no-jacoby", action="store_true", help="money play without the Jacoby rule")
    parser.add_argument("--automatic-doubles", type=int, default=0, metavar="N",
                        help="money play: up to N tied opening rolls double the cube (default 0)")
    parser.add_argument("--tutor", action="store_true", help="warn before a play or cube action that loses "
                        "more than --tutor-threshold")
    parser.add_argument("--tutor-threshold", type=float, default=0.04, help="0.04 doubtful, 0.08 bad, 0.16 very bad")
    parser.add_argument("--no-forced", action="store_true", help="do not play forced moves for you")
    parser.add_argument("--position", metavar="ID|XGID",
                        help="start from this position (a GNU Backgammon position ID: you on roll; or an XGID, "
                        "you the bottom player), and every next game too, for practice")
    parser.add_argument("--seed", type=int, help="seed the dice (the same seed gives the same dice)")
    parser.add_argument("--save", help="the session file (default ~/.cache/bgtrain/play/session.json)")
    parser.add_argument("--new", action="store_true", help="start a new session even if one is saved")
    parser.add_argument("--name", default="you", help="your name in the record")
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")


def _require_web() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as error:
        raise ValueError(f"bgtrain play needs {error.name}: pip install 'bgtrain[web]'") from None


def default_save_path() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "bgtrain" / "play" / "session.json"


def build_session(args: argparse.Namespace, clock=None, dice=None):
    """The evaluator and the session the arguments describe (resumed from the save file when there
    is one for this variant)."""
    import time

    from bgtrain.values.evaluator import Evaluator, check_ply
    from bgtrain.web.dice import SeededDice
    from bgtrain.web.game import Session, Settings
    from engine.variants import get_rules

    text = args.model or ""
    any_variant = text.lower().endswith(ANY_VARIANT)
    model = Path(text[: -len(ANY_VARIANT)] if any_variant else text) if text else shipped_model(args.variant)
    if any_variant:
        # A model trained for one variant playing another (nackgammon by the standard model, as GNU
        # Backgammon plays it with its standard nets), where its inputs fit.
        from bgtrain.model.loading import load_model

        if args.variant is None:
            raise ValueError(f"--model {text}: name the variant it is to play with --variant")
        loaded = load_model(model)
        evaluator = Evaluator.from_network(loaded.model, get_rules(args.variant), pruning=loaded.pruning)
    else:
        evaluator = Evaluator.from_path(model)
    if args.variant is not None and get_rules(args.variant) != evaluator.rules:
        raise ValueError(f"{model} was trained for {evaluator.rules.name!r}, not for {args.variant!r} "
                         f"(pass --variant {evaluator.rules.name} or another model)")
    check_ply(args.ply, evaluator.rules)
    settings = Settings(
        ply=args.ply, match_length=args.match or 0, clock_seconds=args.clock or None,
        clock_action=args.on_time, clock_cube=args.clock_cube, jacoby=not args.no_jacoby, automatic_doubles=args.automatic_doubles,
        auto_play_forced=not args.no_forced, tutor=args.tutor, tutor_threshold=args.tutor_threshold,
        names=(args.name, model.stem),
    )
    save_path = Path(args.save) if args.save else default_save_path()
    clock = clock or time.time
    session, resumed = None, False
    if save_path.is_file() and not args.new:
        try:
            data = json.loads(save_path.read_text())
            if data.get("variant") == evaluator.rules.name:
                session, resumed = Session.from_json(data, evaluator, clock, save_path), True
        except (ValueError, KeyError, TypeError):
            pass  # an unreadable session file is replaced by a new session
    if session is None:
        session = Session(evaluator, settings, dice or SeededDice(args.seed), clock, save_path)
    if args.position:
        session.set_position(args.position)  # refused (a ValueError): one line, exit status 2
    return model, session, resumed


def run(args: argparse.Namespace) -> int:
    _require_web()
    import uvicorn

    from engine import kernels

    if not os.environ.get(kernels.ENVIRONMENT_VARIABLE):
        # One game's searches are small: a compile would pause the game for seconds, not save them.
        kernels.set_mode("never")

    from bgtrain.web.server import create_app

    model, session, resumed = build_session(args)
    app = create_app(session, model=model.stem)
    # Requests are a few hundred bytes (bgtrain.web.server.MAX_REQUEST_CHARACTERS): a larger frame is
    # closed by uvicorn before it is read into memory.
    config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning", ws_max_size=65536)
    server = uvicorn.Server(config)

    def announce() -> None:
        while not server.started:
            threading.Event().wait(0.05)
        port = server.servers[0].sockets[0].getsockname()[1] if server.servers else args.port
        url = f"http://127.0.0.1:{port}/"
        print(f"bgtrain play: {'resuming' if resumed else 'new session'} against {model} "
              f"({session.rules.name}, {session.settings.ply}-ply) at {url}  (Ctrl-C to stop)", flush=True)
        if not args.no_browser:
            webbrowser.open(url)

    threading.Thread(target=announce, daemon=True).start()
    server.run()
    return 0
