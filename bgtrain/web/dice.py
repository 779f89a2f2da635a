"""Dice for one game at a time, injectable and saved with the session.

A source gives ``die() -> int`` (one die, 1..6); the session rolls two for a turn and one per side for
the opening roll. ``state()`` is a JSON-able dict that ``dice_from_state`` turns back into the same
source at the same point of its stream, so a resumed session rolls what it would have rolled.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


class SeededDice:
    """Fair dice from Python's Mersenne Twister under ``seed``."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.generator = random.Random(seed)

    def die(self) -> int:
        return self.generator.randint(1, 6)

    def state(self) -> dict:
        version, internal, gauss = self.generator.getstate()
        return {"kind": "seeded", "seed": self.seed, "generator": [version, list(internal), gauss]}


class ScriptedDice:
    """Dice given in advance (tests): each entry is one die."""

    def __init__(self, dice: Sequence[int], used: int = 0) -> None:
        if any(not 1 <= int(die) <= 6 for die in dice):
            raise ValueError(f"scripted dice must be 1..6, not {list(dice)}")
        self.dice = [int(die) for die in dice]
        self.used = used

    def die(self) -> int:
        if self.used >= len(self.dice):
            raise IndexError(f"scripted dice ran out after {self.used} dice")
        self.used += 1
        return self.dice[self.used - 1]

    def state(self) -> dict:
        return {"kind": "scripted", "dice": self.dice, "used": self.used}


def dice_from_state(state: dict) -> SeededDice | ScriptedDice:
    if state["kind"] == "scripted":
        return ScriptedDice(state["dice"], state["used"])
    dice = SeededDice(state["seed"])
    version, internal, gauss = state["generator"]
    dice.generator.setstate((version, tuple(internal), gauss))
    return dice
