"""The named rules variants: ``VARIANTS`` maps a name (``--variant NAME``, ``[run] variant``) to its
``Rules``; ``get_rules(name)`` looks one up with an error that lists the names.

Rule texts (the fields they set are documented in ``engine.rules``):

* backgammon: the standard game.
* nackgammon (Nack Ballard's variant): per side 2 checkers on the 24-point, 2 on the 23, 4 on the 13,
  3 on the 8 and 4 on the 6; otherwise standard.
* hypergammon: 3 checkers per side, on the 24-, 23- and 22-points; otherwise standard (gammons and
  backgammons count). hypergammon1 and hypergammon2 play 1 (on the 24) and 2 (24, 23) checkers.
* dutch: all 15 checkers start in hand and must all be entered into the opponent's home board
  before any checker may move on; a player may not hit until one of his checkers is in his home
  board or borne off (read by the state, see ``Rules.hit_needs_home_checker``); otherwise standard.
* acey-deucey: all 15 start in hand; entered checkers may move before all are in (the bar still
  enters first); the 1-2 roll plays the 1 and the 2, then a double of the player's choice, then the
  player rolls again (``Rules.acey_deucey``); no cube; the loser pays one point per checker he has
  not borne off. Sources disagree on the payment: acey-deucey-single is the other reading, every
  game worth one point ("no gammons or backgammons are awarded").
* play-to-lose ("deadgammon"): the standard game, but the first player to bear off all his checkers
  loses one point; no gammons.
"""

from __future__ import annotations

from engine.rules import STANDARD, Rules

_ACEY_DEUCEY = {
    "start_points": (),
    "start_in_hand": 15,
    "hand_enters_first": False,
    "acey_deucey": True,
    "gammons": False,
    "backgammons": False,
    "cube": False,
}

VARIANTS: dict[str, Rules] = {
    rules.name: rules
    for rules in (
        STANDARD,
        Rules(name="nackgammon", start_points=((24, 2), (23, 2), (13, 4), (8, 3), (6, 4))),
        Rules(name="hypergammon", start_points=((24, 1), (23, 1), (22, 1))),
        Rules(name="hypergammon1", start_points=((24, 1),)),
        Rules(name="hypergammon2", start_points=((24, 1), (23, 1))),
        Rules(name="dutch", start_points=(), start_in_hand=15, hit_needs_home_checker=True),
        Rules(name="acey-deucey", scoring="checkers_left", **_ACEY_DEUCEY),
        Rules(name="acey-deucey-single", **_ACEY_DEUCEY),
        Rules(name="play-to-lose", first_off_loses=True, gammons=False, backgammons=False),
    )
}


def get_rules(name: str) -> Rules:
    """The rules of the variant called ``name``; a ValueError listing the known names otherwise."""
    rules = VARIANTS.get(name)
    if rules is None:
        raise ValueError(f"unknown variant {name!r}; known variants: {', '.join(VARIANTS)}")
    return rules
