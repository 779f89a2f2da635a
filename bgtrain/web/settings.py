"""The settings of a play session: the bot's depth, money or match, the clock, the cube rules, the
tutor. Frozen; the person may change some during play (``Session.change_settings``).

Every field is checked by type and range when a ``Settings`` is made, so a value from the page (or a
hand-made WebSocket frame, or a saved session) that is out of range is refused with one plain
sentence naming the setting, and nothing the page is later sent can be a non-finite number (a
browser's ``JSON.parse`` rejects ``Infinity``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bgtrain.web.advice import DOUBTFUL

CLOCK_ACTIONS = ("play_best", "lose")
MAX_PLY = 4  # bgtrain.values.evaluator's deepest search
MAX_MATCH_LENGTH = 64  # a longer match is refused earlier by the match equity table
MAX_CLOCK_SECONDS = 3600.0
MAX_AUTOMATIC_DOUBLES = 6
MAX_NAME_LENGTH = 40


class SettingRefused(ValueError):
    """A setting of the wrong type or out of range (a ``ValueError``: the CLI's one-line error)."""


def shown(value) -> str:
    """A value as a refusal quotes it: short, whatever was sent."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _whole(name: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SettingRefused(f"{name} must be a whole number from {low} to {high}, not {shown(value)}")


def _number(name: str, value, low: float, high: float, what: str = "a number") -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not low <= value <= high:
        raise SettingRefused(f"{name} must be {what} from {low:g} to {high:g}, not {shown(value)}")


def _flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise SettingRefused(f"{name} must be true or false, not {shown(value)}")


@dataclass(frozen=True)
class Settings:
    ply: int = 0  # the bot's search depth (GNU numbering), also the hints'
    match_length: int = 0  # 0: money play
    clock_seconds: float | None = 30.0  # per decision; None: no clock
    clock_action: str = "play_best"  # at zero: "play_best" (made for the person) or "lose"
    # Whether the clock also runs on the person's cube decisions (double or roll, take or pass), each
    # its own period; by default only checker plays are timed, so one turn is one clock period.
    clock_cube: bool = False
    jacoby: bool = True  # money play
    automatic_doubles: int = 0  # money play: tied opening rolls that double the cube
    auto_play_forced: bool = True  # a forced play is made for the person
    tutor: bool = False
    tutor_threshold: float = DOUBTFUL
    analysis_ply: int | None = None  # the post-game analysis; None: 1-ply (0 for acey-deucey)
    names: tuple[str, str] = ("you", "bgtrain")

    def __post_init__(self) -> None:
        _whole("ply", self.ply, 0, MAX_PLY)
        _whole("match_length", self.match_length, 0, MAX_MATCH_LENGTH)
        if self.clock_seconds is not None:
            _number("clock_seconds", self.clock_seconds, 1, MAX_CLOCK_SECONDS,
                    "a number of seconds (or null for no clock)")
        if self.clock_action not in CLOCK_ACTIONS:
            raise SettingRefused(f"clock_action must be one of {', '.join(CLOCK_ACTIONS)}, not {shown(self.clock_action)}")
        for name in ("clock_cube", "jacoby", "auto_play_forced", "tutor"):
            _flag(name, getattr(self, name))
        _whole("automatic_doubles", self.automatic_doubles, 0, MAX_AUTOMATIC_DOUBLES)
        _number("tutor_threshold", self.tutor_threshold, 0, 1, "an equity")
        if self.analysis_ply is not None:
            _whole("analysis_ply", self.analysis_ply, 0, MAX_PLY)
        names = self.names
        if not isinstance(names, list | tuple) or len(names) != 2 or any(
                not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME_LENGTH for name in names):
            raise SettingRefused(f"names must be two names of 1 to {MAX_NAME_LENGTH} characters, not {shown(names)}")
        object.__setattr__(self, "names", tuple(names))
