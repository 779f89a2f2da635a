"""The game as others read it: boards seen from the person's side for the page, GNU Backgammon
position and match IDs per action, and the record as a Jellyfish ``.mat`` match file
(``bgtrain.matfile``).

Seats: 0 is the person, 1 the bot. A board is a 28-tuple from its side to move (``engine.board``).
"""

from __future__ import annotations

from engine.board import FLIP_PERMUTATION, MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND
from engine.match_id import MatchState, encode_match_id
from engine.position_id import encode_position_id, split_checkers_in_hand
from engine.rules import STANDARD, Rules

Board = tuple[int, ...]


def flip(board) -> Board:
    """The board seen by the other side (``engine.board.flip_board`` on a tuple)."""
    return tuple(-int(board[index]) for index in FLIP_PERMUTATION)


def pip_counts(board) -> tuple[int, int]:
    """(mover's, opponent's) pips, checkers on the bar and in hand at 25."""
    mover = sum(p * max(board[p], 0) for p in range(1, 25)) + 25 * (board[MOVER_BAR] + board[MOVER_IN_HAND])
    opponent = sum((25 - p) * max(-board[p], 0) for p in range(1, 25))
    opponent += 25 * (-board[OPPONENT_BAR] - board[OPPONENT_IN_HAND])
    return mover, opponent


def board_view(board, rules: Rules) -> dict:
    """A board from the person's side for the page: ``points[p]`` for p = 1..24 in the person's
    numbering (index 0 unused; > 0 the person's checkers, < 0 the bot's), bars, hands, borne-off
    counts and pip counts."""
    on_board_you = sum(max(count, 0) for count in board[1:27])
    on_board_bot = sum(max(-count, 0) for count in board[0:25]) - board[OPPONENT_IN_HAND]
    pips_you, pips_bot = pip_counts(board)
    return {
        "points": [0] + [int(board[p]) for p in range(1, 25)],
        "bar": {"you": int(board[MOVER_BAR]), "bot": int(-board[OPPONENT_BAR])},
        "hand": {"you": int(board[MOVER_IN_HAND]), "bot": int(-board[OPPONENT_IN_HAND])},
        "off": {"you": rules.checkers_per_side - on_board_you, "bot": rules.checkers_per_side - on_board_bot},
        "pips": {"you": pips_you, "bot": pips_bot},
    }


def position_text(board) -> str:
    """GNU Backgammon's position ID of a board (mover's side); with checkers in hand (Dutch,
    acey-deucey) the ID of the checkers on the board, then ``hand=M,O``."""
    on_board, hand = split_checkers_in_hand(board)
    text = encode_position_id(on_board)
    return f"{text} hand={hand[0]},{hand[1]}" if any(hand) else text


def match_text(seat: int, cube_value: int, cube_owner: int | None, dice, match_length: int,
               score: tuple[int, int], crawford: bool, jacoby: bool, double_offered: bool = False) -> str:
    """GNU Backgammon's match ID with ``seat`` on roll (gnubg's player 0 is the person)."""
    owner = "centred" if cube_owner is None else f"player{cube_owner}"
    state = MatchState(
        cube_value=cube_value, cube_owner=owner, player_on_roll=seat, crawford=crawford,
        game_state="playing", turn=1 - seat if double_offered else seat, double_offered=double_offered,
        dice=tuple(dice) if dice else (0, 0), match_length=match_length,
        score=(min(score[0], match_length or score[0]), min(score[1], match_length or score[1])),
        jacoby=jacoby,
    )
    return encode_match_id(state)


def mat_match(games: list[dict], match_length: int, names: tuple[str, str], rules: Rules):
    """The finished (and current) games as a ``MatMatch``: the person on the left."""
    from bgtrain.matfile import DOUBLE, DROP, MOVE, TAKE, WIN, MatAction, MatGame, MatMatch, player_name

    if rules != STANDARD:
        raise ValueError(f"a .mat file holds standard backgammon only, not {rules.name}")
    left = player_name(names[0])
    right = player_name(names[1], left)
    out = []
    for game in games:
        if game.get("setup"):
            raise ValueError(f"game {game['number']} started from {game['setup']['text']}: a .mat file starts "
                             "every game from the opening position (the session's JSON holds it)")
        actions = []
        for event in game["events"]:
            kind, seat = event["kind"], event.get("seat")
            if kind == "move":
                actions.append(MatAction(seat, MOVE, tuple(event["dice"]), event["mat_play"]))
            elif kind == "double":
                actions.append(MatAction(seat, DOUBLE, value=event["value"]))
            elif kind in ("take", "drop"):
                actions.append(MatAction(seat, TAKE if kind == "take" else DROP))
            elif kind == "win":
                actions.append(MatAction(seat, WIN, value=event["value"]))
        out.append(MatGame(game["number"], (left, right), tuple(game["score_before"]), tuple(actions)))
    return MatMatch(match_length, tuple(out))
