"""The session: a person (seat 0) against the bot (seat 1), game after game, as a state machine on the
engine. Pure Python, no server: each action of the person is a method that either refuses (raising
``Refused`` with one line, changing nothing) or changes the state, lets the bot act until the person
must act again, and returns the events to show (rolls, the bot's checker moves one by one, cube
actions, messages).

Phases (``Session.phase``):

* ``opening``: before a game's opening roll ("each side rolls one die; ties roll again; the higher
  die moves first, playing both dice"; in money play with automatic doubles a tie doubles the cube);
* ``roll``: the side on turn (``Session.turn``) is before its roll; the person may double or roll;
* ``move``: the person moves checkers one die at a time through ``TurnTree``, undoes, confirms;
* ``doubled``: the bot has doubled; the person takes or passes;
* ``game_over`` / ``match_over``.

The clock is the server's: a deadline in wall-clock seconds (``clock``, injectable) is armed whenever
the person must act, and ``tick`` applies the setting at zero (``clock_action``: the best play or cube
action is made for the person, or the game is lost). ``to_json``/``from_json`` hold the whole session;
``save_path`` gets it atomically after every action.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import torch

from bgtrain.cube import CubeState, MatchGame, MoneyGame, initial_cube
from bgtrain.web import advice, analysis, store
from bgtrain.web.dice import SeededDice, dice_from_state
from bgtrain.web.log import log_line
from bgtrain.web.record import board_view, flip, match_text, position_text
from bgtrain.web.settings import Settings
from bgtrain.web.setup import parse_setup
from bgtrain.web.turn import Node, TurnTree
from engine.game import winning_points
from engine.notation import format_play
from engine.reference import apply_move

YOU, BOT = 0, 1
LOG_LINES = 300
LIVE_PHASES = ("roll", "move", "doubled")
RESIGN_LEVELS = {"single": 1, "gammon": 2, "backgammon": 3}


class Refused(ValueError):
    """A request the rules or the state do not allow; nothing was changed."""


class Session:
    def __init__(self, evaluator, settings: Settings | None = None, dice=None, clock=time.time,
                 save_path: str | Path | None = None) -> None:
        settings = settings or Settings()
        self.evaluator = evaluator
        self.rules = evaluator.rules
        if settings.match_length:
            MatchGame(settings.match_length)  # refuses a length the match equity table lacks
        self.settings = settings
        self.dice_source = dice if dice is not None else SeededDice()
        self.clock = clock
        self.save_path = Path(save_path) if save_path else None
        self.score = [0, 0]
        self.game_number = 0
        self.crawford = False  # this game is the Crawford game
        self.crawford_done = False
        self.games: list[dict] = []  # finished games
        self.setup: dict | None = None  # games start from this position (bgtrain.web.setup), not the opening
        self.log: list[str] = []  # the lines of the page's log, kept across reopened tabs
        self._new_game()

    # --- the person's actions ---------------------------------------------------------------------

    def roll(self, force: bool = False) -> list[dict]:
        """The opening roll, or the person's roll (not doubling)."""
        events: list[dict] = []
        if self.phase == "opening":
            self._opening_roll(events)
        else:
            self._expect("roll", YOU, "roll")
            if self._cube(YOU).available:
                cube = self._cube_advice(YOU)
                if self._tutor_stops(force, cube["cost_no_double"], f"not doubling ({cube['action']})", events):
                    return events
                self._decision(YOU, "cube", cube["cost_no_double"], "No double", cube)
            self._roll_and_start(events)
        return self._done(events)

    def double(self, force: bool = False) -> list[dict]:
        self._expect("roll", YOU, "double")
        view = self._cube(YOU)
        if not view.available:
            raise Refused(self._why_no_double(YOU))
        cube = self._cube_advice(YOU)
        events: list[dict] = []
        if self._tutor_stops(force, cube["cost_double"], f"doubling ({cube['action']})", events):
            return events
        self._decision(YOU, "cube", cube["cost_double"], "Double", cube)
        self._record({"kind": "double", "seat": YOU, "value": 2 * self.cube_value, **self._ids(YOU, None, True)})
        events.append({"type": "double", "who": "you", "value": 2 * self.cube_value})
        if cube["take"]:
            self.cube_value, self.cube_owner = 2 * self.cube_value, BOT
            self._record({"kind": "take", "seat": BOT})
            events.append({"type": "take", "who": "bot", "text": f"{self._bot_name} takes"})
            self._roll_and_start(events)
        else:
            self._record({"kind": "drop", "seat": BOT})
            events.append({"type": "pass", "who": "bot", "text": f"{self._bot_name} passes"})
            self._end_game(YOU, self.cube_value, "pass", events)
        return self._done(events)

    def take(self, force: bool = False) -> list[dict]:
        return self._answer(True, force)

    def pass_(self, force: bool = False) -> list[dict]:
        return self._answer(False, force)

    def move(self, source: int, target: int) -> list[dict]:
        """Move the checker on ``source`` (1..24, 25 the bar, 26 in hand; the person's numbering) to
        ``target`` (0: off), by one die or several in a row, as ``destinations`` offers."""
        self._expect("move", YOU, "move")
        options = self.tree.destinations(self.node).get(int(source), [])
        option = next((o for o in options if o["target"] == int(target)), None)
        if option is None:
            raise Refused(f"no legal move from {_place(source)} to {_place(target)} with {self._dice_text()}")
        node = self.node
        for step in option["steps"]:
            node = next(child for s, child in self.tree.children(node) if s.__dict__ == step)
        self.history.append(self.node)
        self.node = node
        return self._done([])

    def choose_double(self, die: int) -> list[dict]:
        """Acey-deucey: the double to play after the 1-2."""
        self._expect("move", YOU, "choose a double")
        if not self.tree.chooses_double(self.node):
            raise Refused("no double is to be chosen now")
        try:
            node = self.tree.choose_double(self.node, int(die))
        except ValueError as error:
            raise Refused(str(error)) from None
        self.history.append(self.node)
        self.node = node
        return self._done([])

    def undo(self) -> list[dict]:
        self._expect("move", YOU, "undo")
        if not self.history:
            raise Refused("nothing to undo in this turn")
        self.node = self.history.pop()
        return self._done([])

    def confirm(self, force: bool = False) -> list[dict]:
        self._expect("move", YOU, "confirm a play")
        if not self.tree.ends_turn(self.node):
            raise Refused(f"the play is not finished: play as much of {self._dice_text()} as the rules require")
        extra = self.node.stage == "chosen" and not self.node.dice_left
        events: list[dict] = []
        loss = None
        if self.settings.tutor and not self.tree.forced:
            hints = advice.play_hints(self.evaluator, self.board, self.dice, self.settings.ply)
            loss = advice.play_loss(hints, self.node.board, extra)
            if self._tutor_stops(force, loss, f"this play (best: {hints[0]['play']})", events):
                return events
        self._play(YOU, self.node.board, extra, events, forced=self.tree.forced)
        return self._done(events)

    def resign(self, level: str) -> list[dict]:
        if self.phase not in LIVE_PHASES:
            raise Refused("there is no game in progress to resign")
        if level not in RESIGN_LEVELS:
            raise Refused(f"resign single, gammon or backgammon, not {level!r}")
        if self.rules.scoring != "standard":
            raise Refused(f"resigning is not offered in {self.rules.name}")
        points = min(RESIGN_LEVELS[level], self.rules.max_points)
        board = self.board if self.turn == YOU else flip(self.board)
        gammons = self.rules.gammons and not self._jacoby_centred()
        events: list[dict] = [{"type": "resign", "who": "you", "level": level}]
        if advice.resignation_accepted(self.evaluator, board, points, gammons):
            events.append({"type": "message", "text": f"{self._bot_name} accepts"})
            self._end_game(BOT, points * self.cube_value, "resign", events)
        else:
            events.append({"type": "message", "text": f"{self._bot_name} declines the resignation; play on"})
        return self._done(events)

    def next_game(self) -> list[dict]:
        """The next game of the match (or money session), or a new match once it is over; from the
        set position again when there is one (practice)."""
        if self.phase == "match_over":
            self.score, self.game_number, self.games = [0, 0], 0, []
            self.crawford = self.crawford_done = False
        elif self.phase != "game_over":
            raise Refused("the game is not over")
        self._new_game()
        events: list[dict] = []
        if self.setup is not None:
            self._begin_from_setup(events)
        return self._done(events)

    def set_position(self, text: str) -> list[dict]:
        """Start a game from a position (a GNU position ID or an XGID; ``bgtrain.web.setup``), and every
        next game from it too; an empty text goes back to games from the opening. A game in
        progress is abandoned, unscored."""
        if not isinstance(text, str):
            raise Refused("the position must be text: a GNU Backgammon position ID or an XGID")
        setup = None
        if text.strip():
            try:
                setup = parse_setup(text, self.rules)
            except ValueError as error:
                raise Refused(str(error)) from None
        events: list[dict] = []
        if self.phase in LIVE_PHASES and self.events:
            events.append({"type": "message", "text": "the game in progress was abandoned (not scored)"})
        if self.phase == "match_over":
            self.score, self.game_number, self.games = [0, 0], 0, []
            self.crawford = self.crawford_done = False
        self.setup = setup
        if self.phase not in ("game_over", "match_over"):
            self.game_number -= 1  # the abandoned (or not yet begun) game's number is used again
        self._new_game()
        if setup is None:
            events.append({"type": "message", "text": "games start from the opening position again"})
        else:
            self._begin_from_setup(events)
        return self._done(events)

    def change_settings(self, **changes) -> list[dict]:
        """Settings the person may change during play: tutor, forced moves, clock."""
        allowed = {"tutor", "tutor_threshold", "auto_play_forced", "clock_seconds", "clock_action", "clock_cube"}
        unknown = set(changes) - allowed
        if unknown:
            raise Refused(f"cannot change {', '.join(sorted(unknown))} during play")
        try:
            self.settings = replace(self.settings, **changes)
        except (TypeError, ValueError) as error:
            raise Refused(str(error)) from None
        if "clock_seconds" in changes or "clock_cube" in changes:
            self._arm_clock()
        return self._done([])

    def hint(self) -> dict:
        """The hint for the person's decision now: ranked plays, or the cube decision."""
        ply = self.settings.ply
        if self.phase == "move" and self.turn == YOU:
            hints = advice.play_hints(self.evaluator, self.board, self.dice, ply, limit=10)
            return {"kind": "plays", "ply": ply, "dice": list(self.dice), "plays": hints}
        if self.phase == "roll" and self.turn == YOU and self._cube(YOU).available:
            return {"kind": "cube", **self._cube_advice(YOU)}
        if self.phase == "doubled":
            offered = self.offered
            return {"kind": "take", "take": offered["take"], "take_equity": -offered["double_take"],
                    "pass_equity": -1.0, "action": "Take" if offered["take"] else "Pass", "ply": ply}
        raise Refused("no decision of yours to give a hint for now")

    def note(self, events: list[dict]) -> None:
        """The log lines of ``events`` (``bgtrain.web.log``): each event gets its ``log`` text and the
        session keeps the lines (the last ``LOG_LINES``), saved, so a reopened tab shows them."""
        lines = []
        for event in events:
            line = log_line(event, self.settings.names)
            if line:
                event["log"] = line
                lines.append(line)
        if lines:
            self.log = (self.log + lines)[-LOG_LINES:]
            self.save()

    def tick(self) -> list[dict]:
        """The clock: at zero, the setting is applied to the person's pending decision."""
        if self.deadline is None or self.clock() < self.deadline:
            return []
        events = [{"type": "message", "text": "time is up"}]
        if self.settings.clock_action == "lose":
            self._end_game(BOT, self.cube_value, "time", events)
            return self._done(events)
        if self.phase == "doubled":
            return events + (self.take(force=True) if self.offered["take"] else self.pass_(force=True))
        if self.phase == "roll":
            best = self._cube_advice(YOU)["double"]
            return events + (self.double(force=True) if best else self.roll(force=True))
        after, extra = advice.bot_play(self.evaluator, self.board, self.dice, self.settings.ply)
        self._play(YOU, after, extra, events, forced=False)
        return self._done(events)

    # --- the game ---------------------------------------------------------------------------------

    @property
    def _bot_name(self) -> str:
        return self.settings.names[BOT]

    def _new_game(self) -> None:
        self.game_number += 1
        self.phase, self.turn = "opening", YOU
        self.board = tuple(self.rules.start_board().tolist())
        self.cube_value, self.cube_owner = 1, None
        self.dice = None
        self.node, self.history, self.tree = None, [], None
        self.deadline = None
        self.offered = None
        self.cube_considered = False
        self.events: list[dict] = []
        self.decisions: list[dict] = []
        self.result = None
        self.score_before = list(self.score)

    def _begin_from_setup(self, events: list[dict]) -> None:
        """The new game (``_new_game``) starts from ``self.setup``: its side on roll, cube and dice."""
        setup = self.setup
        events.append({"type": "message", "text": f"the game starts from {setup['text']}"})
        self.turn = setup["turn"]
        self.board = tuple(setup["board"])
        self.cube_value, self.cube_owner = setup["cube_value"], setup["cube_owner"]
        if setup["dice"]:
            self._start_move((max(setup["dice"]), min(setup["dice"])), events, rolled=setup["dice"])
        else:
            self.phase = "roll"
            self._advance(events)

    def _opening_roll(self, events: list[dict]) -> None:
        ties = 0
        while True:
            yours, bots = self.dice_source.die(), self.dice_source.die()
            events.append({"type": "opening", "you": yours, "bot": bots})
            if yours != bots:
                break
            ties += 1
        if ties and not self.settings.match_length and self.rules.cube:
            game = MoneyGame(self.settings.jacoby, automatic_doubles=self.settings.automatic_doubles)
            value = initial_cube(game, ties).value
            if value > self.cube_value:
                events.append({"type": "message", "text": f"automatic double: the cube is at {value}"})
                self.cube_value = value
        first = YOU if yours > bots else BOT
        self.turn = first
        self.board = tuple(self.rules.start_board().tolist())
        self._start_move((max(yours, bots), min(yours, bots)), events)

    def _roll_and_start(self, events: list[dict]) -> None:
        dice = (self.dice_source.die(), self.dice_source.die())
        self._start_move((max(dice), min(dice)), events, rolled=dice)

    def _start_move(self, dice, events: list[dict], rolled=None) -> None:
        """The side on turn has ``dice`` to play from ``self.board``."""
        who = "you" if self.turn == YOU else "bot"
        if rolled is not None:
            events.append({"type": "roll", "who": who, "dice": list(rolled)})
        self.dice = tuple(dice)
        self.tree = TurnTree(self.board, self.dice, self.rules)
        self.node, self.history = self.tree.root, []
        if self.turn == BOT:
            after, extra = advice.bot_play(self.evaluator, self.board, self.dice, self.settings.ply)
            self._play(BOT, after, extra, events, forced=self.tree.forced or self.tree.no_move)
        elif self.tree.no_move:
            events.append({"type": "message", "text": f"you cannot move {self._dice_text()}"})
            self._play(YOU, self.board, False, events, forced=True)
        elif self.tree.forced and self.settings.auto_play_forced:
            (after, extra), = self.tree.plays
            events.append({"type": "message", "text": "your only legal play was made for you"})
            self._play(YOU, after, extra, events, forced=True)
        else:
            self.phase = "move"
            self._arm_clock()

    def _play(self, seat: int, after, extra: bool, events: list[dict], forced: bool) -> None:
        """The side on turn (``seat``) plays ``after``; the steps are shown one by one."""
        after = tuple(int(count) for count in after)
        before, dice = self.board, self.dice
        steps, double = self.tree.sequence_to(after, extra)
        node = self.tree.root
        who = "you" if seat == YOU else "bot"
        if double is not None:
            events.append({"type": "message", "text": f"{who} chose {double}-{double}"})
        for step in steps:
            node_board = list(node.board)
            apply_move(node_board, (step.source, step.target, step.hit))
            node = Node(tuple(node_board), ())
            view = board_view(node.board if seat == YOU else flip(node.board), self.rules)
            events.append({"type": "step", "who": who, "from": step.source, "to": step.target, "board": view})
        notation = format_play([(step.source, step.target, step.hit) for step in steps])
        event = {"kind": "move", "seat": seat, "dice": list(dice), "before": list(before), "after": list(after),
                 "extra_roll": extra, "play": notation, "forced": forced,
                 "mat_play": "" if not steps else " ".join(
                     f"{_mat_point(s.source)}/{_mat_point(s.target)}{'*' if s.hit else ''}" for s in steps),
                 **self._ids(seat, dice)}
        self._record(event)
        events.append({"type": "played", "who": who, "dice": list(dice), "play": notation})
        self._decision(seat, "move", None, f"{dice[0]}{dice[1]}: {notation}", None, forced=forced,
                       move=event)
        self.node, self.history, self.dice, self.deadline = None, [], None, None
        points = int(winning_points(torch.tensor([after], dtype=torch.int8), self.rules)[0])
        if points:
            # The final position is stored before the game ends: the page and the saved session show
            # the board after the winning play, from the winner's side of the table (turn = seat).
            self.board = after
            winner = seat if points > 0 else 1 - seat
            value = abs(points)
            if self._jacoby_centred() and self.rules.scoring == "standard":
                value = 1  # the Jacoby rule: no gammons before the cube is turned
            self._end_game(winner, value * self.cube_value, "bore off", events)
            return
        if not extra:
            self.turn = 1 - seat
            after = flip(after)
        self.board = after
        self.phase, self.cube_considered = "roll", False
        self._advance(events)

    def _advance(self, events: list[dict]) -> None:
        """The bot acts until the person must (or the game ends); the person's roll is made for them
        when they cannot double."""
        while self.phase == "roll":
            if self.turn == YOU:
                if self._cube(YOU).available:
                    self._arm_clock()
                    return
                self._roll_and_start(events)
                continue
            view = self._cube(BOT)
            if view.available and not self.cube_considered:
                self.cube_considered = True
                cube = advice.cube_advice(self.evaluator, self.board, view, self.settings.ply)
                self._decision(BOT, "cube", cube["cost_double"] if cube["double"] else cube["cost_no_double"],
                               "Double" if cube["double"] else "No double", cube)
                if cube["double"]:
                    self.offered = cube
                    self._record({"kind": "double", "seat": BOT, "value": 2 * self.cube_value,
                                  **self._ids(BOT, None, True)})
                    events.append({"type": "double", "who": "bot", "value": 2 * self.cube_value})
                    self.phase = "doubled"
                    self._arm_clock()
                    return
            self._roll_and_start(events)

    def _answer(self, take: bool, force: bool) -> list[dict]:
        self._expect("doubled", BOT, "take" if take else "pass")
        offered = self.offered
        cost = offered["cost_take"] if take else offered["cost_pass"]
        events: list[dict] = []
        if self._tutor_stops(force, cost, "taking" if take else "passing", events):
            return events
        self._decision(YOU, "take", cost, "Take" if take else "Pass", offered)
        self._record({"kind": "take" if take else "drop", "seat": YOU})
        events.append({"type": "take" if take else "pass", "who": "you"})
        self.offered = None
        if take:
            self.cube_value, self.cube_owner = 2 * self.cube_value, YOU
            self._roll_and_start(events)
        else:
            self._end_game(BOT, self.cube_value, "pass", events)
        return self._done(events)

    def _end_game(self, winner: int, points: int, how: str, events: list[dict]) -> None:
        length = self.settings.match_length
        # In a match the points past the match length do not count: a gammon at 2-0 to 3 ends 0-3.
        self.score[winner] = min(self.score[winner] + points, length) if length else self.score[winner] + points
        self._record({"kind": "win", "seat": winner, "value": points, "how": how})
        over = bool(length) and self.score[winner] >= length
        self.result = {"winner": "you" if winner == YOU else "bot", "points": points, "how": how,
                       "match_over": over, "analysis": self._analysis()}
        events.append({"type": "game_over", **{k: v for k, v in self.result.items() if k != "analysis"}})
        self.games.append({"number": self.game_number, "score_before": self.score_before, "events": self.events,
                           "crawford": self.crawford, "result": self.result, "setup": self.setup})
        if length and not over and not self.crawford_done and max(self.score) == length - 1:
            self.crawford, self.crawford_done = True, True
        else:
            self.crawford = False
        self.phase = "match_over" if over else "game_over"
        self.deadline, self.dice, self.node, self.tree, self.offered = None, None, None, None, None

    def _analysis(self) -> dict:
        ply = self.settings.analysis_ply
        if ply is None:
            ply = 0 if self.rules.acey_deucey else 1  # a game's 60-odd plays in about a second
        return analysis.analyse_game(self.evaluator, self.decisions, ply, self.settings.names,
                                     opening_roll=self.setup is None)

    # --- helpers ----------------------------------------------------------------------------------

    def _expect(self, phase: str, turn: int, what: str) -> None:
        if self.phase in ("game_over", "match_over"):
            raise Refused(f"cannot {what}: the game is over")
        if self.phase != phase or self.turn != turn:
            raise Refused(f"cannot {what} now: {self._waiting_for()}")

    def _waiting_for(self) -> str:
        if self.phase == "opening":
            return "roll to start the game"
        if self.phase == "doubled":
            return "take or pass the double"
        if self.phase == "move":
            return f"play your {self._dice_text()}"
        return "roll or double" if self.turn == YOU else "it is the bot's turn"

    def _dice_text(self) -> str:
        return f"{self.dice[0]}-{self.dice[1]}" if self.dice else "no dice"

    def _jacoby_centred(self) -> bool:
        return not self.settings.match_length and self.settings.jacoby and self.cube_owner is None

    def _cube(self, seat: int) -> advice.CubeView:
        owner = "centred" if self.cube_owner is None else ("mover" if self.cube_owner == seat else "opponent")
        cube = CubeState(self.cube_value, owner)
        if self.settings.match_length:
            game = MatchGame(self.settings.match_length, (self.score[seat], self.score[1 - seat]), self.crawford)
            may = True
        else:
            game = MoneyGame(self.settings.jacoby, automatic_doubles=self.settings.automatic_doubles)
            may = game.can_double(cube)
        available = self.rules.cube and not self.crawford and owner != "opponent" and may
        return advice.CubeView(cube, game, available)

    def _why_no_double(self, seat: int) -> str:
        if not self.rules.cube:
            return f"{self.rules.name} is played without a cube"
        if self.crawford:
            return "no doubling in the Crawford game"
        return "you cannot double: the cube is not yours"

    def _cube_advice(self, seat: int) -> dict:
        board = self.board if self.turn == seat else flip(self.board)
        return advice.cube_advice(self.evaluator, board, self._cube(seat), self.settings.ply)

    def _tutor_stops(self, force: bool, loss: float | None, what: str, events: list[dict]) -> bool:
        """The tutor's warning: the action is held back when it loses more than the threshold."""
        if force or not self.settings.tutor or loss is None or loss <= self.settings.tutor_threshold:
            return False
        mark = advice.error_mark(loss) or "doubtful"
        events.append({"type": "tutor", "text": f"the tutor: {what} loses {loss:.3f} ({mark})", "loss": loss})
        return True

    def _decision(self, seat: int, kind: str, loss, text: str, cube, forced: bool = False, move=None) -> None:
        ids = self.events[-1] if move is not None else self._ids(seat, self.dice)
        self.decisions.append({"seat": seat, "kind": kind, "loss": loss, "text": text, "forced": forced,
                               "position_id": ids["position_id"], "match_id": ids["match_id"],
                               "move": move, "cube": cube})

    def _ids(self, seat: int, dice, double_offered: bool = False) -> dict:
        board = self.board if self.turn == seat else flip(self.board)
        return {"position_id": position_text(board),
                "match_id": match_text(seat, self.cube_value, self.cube_owner, dice, self.settings.match_length,
                                       tuple(self.score), self.crawford, self.settings.jacoby, double_offered)}

    def _record(self, event: dict) -> None:
        self.events.append(event)

    def _arm_clock(self) -> None:
        """A fresh clock period for the person's decision now: checker plays always, cube decisions
        (roll or double, take or pass) only with ``clock_cube``."""
        seconds = self.settings.clock_seconds
        timed = self.phase == "move" or (self.phase in LIVE_PHASES and self.settings.clock_cube)
        self.deadline = None if seconds is None or not timed else self.clock() + seconds

    def _done(self, events: list[dict]) -> list[dict]:
        self.save()
        return events

    # --- saving (bgtrain.web.store) -----------------------------------------------------------------

    def to_json(self) -> dict:
        return store.session_state(self)

    @classmethod
    def from_json(cls, data: dict, evaluator, clock=time.time, save_path=None) -> Session:
        """The session ``to_json`` described, on ``evaluator`` (of the same variant)."""
        store.check_variant(data, evaluator.rules)
        session = cls(evaluator, Settings(**data["settings"]), dice_from_state(data["dice_source"]), clock,
                      save_path)
        store.restore(session, data)
        return session

    def save(self) -> None:
        """The session to ``save_path``, atomically."""
        if self.save_path is not None:
            store.write_atomically(self.save_path, self.to_json())


def _place(point) -> str:
    return {25: "the bar", 26: "your hand", 0: "off"}.get(int(point), f"point {int(point)}")


def _mat_point(point: int) -> str:
    return "25" if point in (25, 26) else str(point)

