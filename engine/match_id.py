"""GNU Backgammon match ID: 12 characters for the cube, the dice, the score and whose turn it is.

Format (GNU Backgammon manual, "A technical description of the Match ID"; gnubg ``matchid.c``): a key of
bits packed little-endian into 9 bytes (key bit ``i`` is bit ``i % 8`` of byte ``i // 8``; each field is
written least significant bit first), then standard Base64 (RFC 4648): 12 characters, no padding.

====  ========  =======================================================================================
bits  width     field
====  ========  =======================================================================================
0     4         log2 of the cube value (0..15)
4     2         cube owner: 0 player 0, 1 player 1, 3 centred (2 is not used)
6     1         the player on roll, or who did roll (0 or 1)
7     1         this game is the Crawford game
8     3         game state: 0 no game started, 1 playing, 2 over, 3 resigned, 4 ended by a dropped cube
11    1         whose turn it is to decide (differs from bit 6 while a double or resignation is offered)
12    1         a double is being offered
13    2         resignation offered: 0 none, 1 single game, 2 gammon, 3 backgammon
15    3         first die (0 = not rolled)
18    3         second die (0 = not rolled)
21    15        match length (0 = money game)
36    15        player 0's score
51    15        player 1's score
66    1         the Jacoby rule is *off*
====  ========  =======================================================================================

The manual describes 66 bits; gnubg's ``matchid.c`` since 2013 also writes bit 66 as "not Jacoby", so IDs
from older versions (bit 66 clear) read as Jacoby on. Bits 67..71 are always zero. gnubg writes the larger
die first; this codec keeps the dice in the order given, so that every valid ID round-trips exactly.

Players are absolute seats here (gnubg's player 0 is "O", player 1 is "X"); the position ID that goes with a
match ID is seen from ``player_on_roll``.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.position_id import base64_to_key, check_base64, key_to_base64

MATCH_ID_LENGTH = 12
MATCH_KEY_BYTES = 9
MATCH_KEY_BITS = 67
MAX_CUBE_LOG2 = 15
MAX_SCORE = (1 << 15) - 1

CUBE_OWNERS = {"player0": 0, "player1": 1, "centred": 3}
GAME_STATES = ("none", "playing", "over", "resigned", "dropped")
RESIGNATIONS = ("none", "single", "gammon", "backgammon")

# (name, first bit, width) in key order.
_FIELDS = (
    ("cube_log2", 0, 4),
    ("cube_owner", 4, 2),
    ("player_on_roll", 6, 1),
    ("crawford", 7, 1),
    ("game_state", 8, 3),
    ("turn", 11, 1),
    ("double_offered", 12, 1),
    ("resignation", 13, 2),
    ("die1", 15, 3),
    ("die2", 18, 3),
    ("match_length", 21, 15),
    ("score0", 36, 15),
    ("score1", 51, 15),
    ("jacoby_off", 66, 1),
)


@dataclass(frozen=True)
class MatchState:
    """Everything a match ID says. Construction validates; invalid values raise ``ValueError``.

    ``cube_value``      1, 2, 4, ... 32768.
    ``cube_owner``      ``"centred"``, ``"player0"`` or ``"player1"`` (gnubg's 3, 0, 1).
    ``player_on_roll``  0 or 1: the player on roll, or who did roll; the position ID is from this side.
    ``crawford``        this game is the Crawford game (match play only).
    ``game_state``      ``"none"`` (no game started), ``"playing"``, ``"over"``, ``"resigned"`` or ``"dropped"``
                        (ended by a dropped cube).
    ``turn``            0 or 1: who must act next; the opponent of ``player_on_roll`` while a double or a
                        resignation awaits an answer.
    ``double_offered``  a double is being offered to ``turn``.
    ``resignation``     ``"none"``, ``"single"``, ``"gammon"`` or ``"backgammon"``: what the player other than
                        ``turn`` offers to resign.
    ``dice``            ``(first, second)`` as rolled, each 1..6; ``(0, 0)`` before the roll.
    ``match_length``    points to win the match; 0 for a money game.
    ``score``           ``(player 0's, player 1's)`` points; at most ``match_length`` in match play.
    ``jacoby``          the Jacoby rule is on (key bit 66 clear; always so in IDs from before 2013).
    """

    cube_value: int = 1
    cube_owner: str = "centred"
    player_on_roll: int = 0
    crawford: bool = False
    game_state: str = "playing"
    turn: int = 0
    double_offered: bool = False
    resignation: str = "none"
    dice: tuple[int, int] = (0, 0)
    match_length: int = 0
    score: tuple[int, int] = (0, 0)
    jacoby: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "dice", tuple(int(die) for die in self.dice))
        object.__setattr__(self, "score", tuple(int(points) for points in self.score))
        cube_log2 = self.cube_value.bit_length() - 1
        if self.cube_value < 1 or self.cube_value != 1 << cube_log2 or cube_log2 > MAX_CUBE_LOG2:
            raise ValueError(
                f"cube value {self.cube_value} is not a power of two from 1 to {1 << MAX_CUBE_LOG2}"
            )
        if self.cube_owner not in CUBE_OWNERS:
            raise ValueError(f"cube owner {self.cube_owner!r} is not one of {sorted(CUBE_OWNERS)}")
        for name in ("player_on_roll", "turn"):
            if getattr(self, name) not in (0, 1):
                raise ValueError(f"{name} {getattr(self, name)!r} is not 0 or 1")
        if self.game_state not in GAME_STATES:
            raise ValueError(f"game state {self.game_state!r} is not one of {GAME_STATES}")
        if self.resignation not in RESIGNATIONS:
            raise ValueError(f"resignation {self.resignation!r} is not one of {RESIGNATIONS}")
        if len(self.dice) != 2 or any(not 0 <= die <= 6 for die in self.dice):
            raise ValueError(f"dice {self.dice} out of range: each die is 1..6, or both 0 before the roll")
        if (self.dice[0] == 0) != (self.dice[1] == 0):
            raise ValueError(f"dice {self.dice}: both dice are rolled or neither")
        if not 0 <= self.match_length <= MAX_SCORE:
            raise ValueError(f"match length {self.match_length} is not 0..{MAX_SCORE}")
        if len(self.score) != 2 or any(not 0 <= points <= MAX_SCORE for points in self.score):
            raise ValueError(f"score {self.score} out of range 0..{MAX_SCORE}")
        if self.match_length:
            for player, points in enumerate(self.score):
                if points > self.match_length:
                    raise ValueError(
                        f"score {points} of player {player} is beyond the match length {self.match_length}"
                    )
        elif self.crawford:
            # gnubg MatchFromKey: "no Crawford game in money play"
            raise ValueError("a money game (match length 0) has no Crawford game")

    @property
    def is_money_game(self) -> bool:
        return self.match_length == 0


def encode_match_id(state: MatchState) -> str:
    """The 12-character match ID of ``state``."""
    values = {
        "cube_log2": state.cube_value.bit_length() - 1,
        "cube_owner": CUBE_OWNERS[state.cube_owner],
        "player_on_roll": state.player_on_roll,
        "crawford": int(state.crawford),
        "game_state": GAME_STATES.index(state.game_state),
        "turn": state.turn,
        "double_offered": int(state.double_offered),
        "resignation": RESIGNATIONS.index(state.resignation),
        "die1": state.dice[0],
        "die2": state.dice[1],
        "match_length": state.match_length,
        "score0": state.score[0],
        "score1": state.score[1],
        "jacoby_off": int(not state.jacoby),
    }
    key = 0
    for name, first_bit, width in _FIELDS:
        assert 0 <= values[name] < 1 << width
        key |= values[name] << first_bit
    return key_to_base64(key.to_bytes(MATCH_KEY_BYTES, "little"), MATCH_ID_LENGTH)


def decode_match_id(text: str) -> MatchState:
    """The match state a match ID describes; ``ValueError`` naming the problem if it is not a valid one."""
    check_base64(text, MATCH_ID_LENGTH, "match ID")
    key = base64_to_key(text, MATCH_KEY_BYTES)
    if key >> MATCH_KEY_BITS:
        raise ValueError(f"match ID {text!r}: trailing bits past the 67-bit key are not zero")
    fields = {name: (key >> first_bit) & ((1 << width) - 1) for name, first_bit, width in _FIELDS}

    owners = {code: name for name, code in CUBE_OWNERS.items()}
    if fields["cube_owner"] not in owners:
        raise ValueError(f"match ID {text!r}: cube owner code {fields['cube_owner']} is not 0, 1 or 3")
    if fields["game_state"] >= len(GAME_STATES):
        raise ValueError(f"match ID {text!r}: game state code {fields['game_state']} is not 0..4")
    try:
        return MatchState(
            cube_value=1 << fields["cube_log2"],
            cube_owner=owners[fields["cube_owner"]],
            player_on_roll=fields["player_on_roll"],
            crawford=bool(fields["crawford"]),
            game_state=GAME_STATES[fields["game_state"]],
            turn=fields["turn"],
            double_offered=bool(fields["double_offered"]),
            resignation=RESIGNATIONS[fields["resignation"]],
            dice=(fields["die1"], fields["die2"]),
            match_length=fields["match_length"],
            score=(fields["score0"], fields["score1"]),
            jacoby=not fields["jacoby_off"],
        )
    except ValueError as error:
        raise ValueError(f"match ID {text!r}: {error}") from None
