"""The settings of a play session: the bot's depth, money or match, the clock, the cube rules, the
tutor. Frozen; the person may change some during play (``Session.change_settings``)."""

from __future__ import annotations

from dataclasses import dataclass

from bgtrain.web.advice import DOUBTFUL

CLOCK_ACTIONS = ("play_best", "lose")


@dataclass(frozen=True)
class Settings:
    ply: int = 0  # the bot's search depth (GNU numbering), also the hints'
    match_length: int = 0  # 0: money play
    clock_seconds: float | None = 30.0  # per decision; None: no clock
    clock_action: str = "play_best"  # at zero: "play_best" (made for the person) or "lose"
    jacoby: bool = True  # money play
    automatic_doubles: int = 0  # money play: tied opening rolls that double the cube
    auto_play_forced: bool = True  # a forced play is made for the person
    tutor: bool = False
    tutor_threshold: float = DOUBTFUL
    analysis_ply: int | None = None  # the post-game analysis; None: 1-ply (0 for acey-deucey)
    names: tuple[str, str] = ("you", "bgtrain")

    def __post_init__(self) -> None:
        if self.clock_action not in CLOCK_ACTIONS:
            raise ValueError(f"clock action must be one of {', '.join(CLOCK_ACTIONS)}, not {self.clock_action!r}")
        if self.clock_seconds is not None and self.clock_seconds <= 0:
            raise ValueError(f"the clock needs a positive number of seconds, not {self.clock_seconds}")
        if self.match_length < 0:
            raise ValueError(f"match length must be >= 0, not {self.match_length}")
        object.__setattr__(self, "names", tuple(self.names))
