"""wildbg's HTTP protocol (``crates/web/src/web_api.rs`` and ``axum.rs`` in wildbg's repository), read and
written for bgtrain: the position as ``p0``..``p25``, dice as ``die1``/``die2``, the score as
``x_away``/``o_away``, and the responses' field names.

wildbg's position: ``p1``..``p24`` are the points from the side to move ``x`` (it moves from 24 towards 1),
positive for ``x``'s checkers and negative for the opponent ``o``'s; ``p25`` is ``x``'s bar (>= 0) and ``p0``
``o``'s bar (<= 0); points left out are empty and checkers not on the board are borne off. That is
bgtrain's board row (``engine.board``) for its first 26 columns, so the translation is a copy.

Probabilities as wildbg writes them (``ProbabilitiesView``): ``win`` (any win), ``winG`` (gammon or
backgammon), ``winBg``, ``loseG``, ``loseBg``: bgtrain's five cumulative outcomes under other names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.board import MOVER_BAR, OPPONENT_BAR
from engine.reference import BORNE_OFF, reference_plays
from engine.rules import Rules

PIP_NAMES = tuple(f"p{index}" for index in range(26))
CHECKER_LIMIT = 15


class RequestError(ValueError):
    """A request the server refuses with 400 and ``{"message": ...}``."""


def _integer(params: Mapping[str, str], name: str, default: int | None = None) -> int | None:
    text = params.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise RequestError(f"Parameter {name} must be a whole number, not {text[:20]!r}.") from None


def board_from_pips(params: Mapping[str, str], rules: Rules) -> list[int]:
    """``p0``..``p25`` -> a board row (28 ints, from ``x``), checked as wildbg checks it (same messages)."""
    board = [0] * 28
    for index, name in enumerate(PIP_NAMES):
        value = _integer(params, name, 0)
        if not -CHECKER_LIMIT <= value <= CHECKER_LIMIT:
            raise RequestError(f"Parameter {name} must be between -15 and 15.")
        board[index] = value
    if board[OPPONENT_BAR] > 0:
        raise RequestError("Index 0 is the bar for player o, number of checkers needs to be negative.")
    if board[MOVER_BAR] < 0:
        raise RequestError("Index 25 is the bar for player x, number of checkers needs to be positive.")
    limit = rules.checkers_per_side
    if sum(value for value in board if value > 0) > limit:
        raise RequestError(f"Player x has more than {limit} checkers on the board.")
    if -sum(value for value in board if value < 0) > limit:
        raise RequestError(f"Player o has more than {limit} checkers on the board.")
    if not any(value > 0 for value in board) or not any(value < 0 for value in board):
        raise RequestError("Both players need at least one checker on the board: the game is over.")
    return board


def dice_from_params(params: Mapping[str, str]) -> tuple[int, int]:
    die1, die2 = _integer(params, "die1"), _integer(params, "die2")
    if die1 is None or die2 is None:
        raise RequestError(f"Missing field `{'die1' if die1 is None else 'die2'}`.")
    if not (1 <= die1 <= 6 and 1 <= die2 <= 6):
        raise RequestError("Dice values must be between 1 and 6.")
    return die1, die2


def away_from_params(params: Mapping[str, str]) -> tuple[int, int]:
    """``(x_away, o_away)``: (0, 0) for money (both left out), else the points each side still needs.
    wildbg serves money and 1-pointers; bgtrain serves any score its match equity table covers."""
    x_away, o_away = _integer(params, "x_away", 0), _integer(params, "o_away", 0)
    if x_away < 0 or o_away < 0:
        raise RequestError("x_away and o_away must not be negative.")
    if x_away == 0 and o_away != 0:
        raise RequestError("If x_away is 0, then o_away must also be 0.")
    if o_away == 0 and x_away != 0:
        raise RequestError("If o_away is 0, then x_away must also be 0.")
    return x_away, o_away


def probabilities_view(probabilities: Sequence[float]) -> dict[str, float]:
    """bgtrain's five outcomes (mover's: win, win gammon, win backgammon, lose gammon, lose backgammon)
    under wildbg's names, each kept in [0, 1] as wildbg's schema promises (a float32 average over the 21
    rolls of certain wins can come out a rounding step above 1)."""
    win, win_gammon, win_backgammon, lose_gammon, lose_backgammon = (min(max(float(value), 0.0), 1.0)
                                                                      for value in probabilities)
    return {"win": win, "winG": win_gammon, "winBg": win_backgammon, "loseG": lose_gammon, "loseBg": lose_backgammon}


def play_details(before: Sequence[int], dice: tuple[int, int], rules: Rules) -> dict[tuple[int, ...], tuple[list[dict], str]]:
    """Every legal play of ``dice`` from ``before``, by afterstate: wildbg's ``MoveDetail`` list (one
    ``{"from", "to"}`` per checker step, 25 the bar and 0 off, in an order in which the steps can be
    played: ``engine.reference``'s first sequence) and the same steps as text, one die each with ``*`` on
    hits, as ``.mat`` files write a play (``8/5 6/5``, ``25/22*``). Both empty when the roll cannot be
    played. One reference search for all the plays."""
    table = {}
    for after, sequences in reference_plays(before, dice, rules).items():
        steps = [(min(source, MOVER_BAR), max(target, BORNE_OFF), hit) for source, target, hit in sequences[0]]
        table[after] = ([{"from": source, "to": target} for source, target, _ in steps],
                        " ".join(f"{source}/{target}{'*' if hit else ''}" for source, target, hit in steps))
    return table
