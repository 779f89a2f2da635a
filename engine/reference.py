"""The slow, obviously correct legal-move generator: the oracle the batched generator is tested against.

Scalar pure Python over one board (a sequence of 28 ints in the layout of ``engine.board``, seen from
the mover). It tries every single-checker move for every die, recursively (apply, recurse, undo), then
keeps the plays the dice-usage rule allows. Speed is not a goal; the only concession is that
``reference_afterstates`` walks a position reached again with the same dice still to play only once,
which turns the doubles recursion from a tree of orderings into a walk over distinct positions.

A checker move is ``(from_point, to_point, hit)``: ``from_point`` 1..24, 25 for the bar or 26 for a
checker in hand; ``to_point`` 1..24, or 0 for borne off; ``hit`` whether it sent an opposing blot to
the opponent's bar.

Variants (``engine.rules``): checkers in hand may move on before all have entered
(``hand_enters_first``), hits may wait for a checker at home (``hit_needs_home_checker``), and an
acey-deucey 1-2 turn continues with a chosen double (``acey_deucey``): ``reference_turns`` gives each
afterstate with whether it earns the extra roll.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.board import BOARD_WIDTH, MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR
from engine.rules import STANDARD, Rules

Board = tuple[int, ...]
Move = tuple[int, int, bool]
Play = tuple[Move, ...]

BORNE_OFF = 0  # the to_point of a checker borne off


def _entering_source(board: Sequence[int], rules: Rules) -> int | None:
    """Where the next checker must come from while any wait to enter: the bar first, then the hand
    (unless the rules let entered checkers move before the hand is empty)."""
    if board[MOVER_BAR] > 0:
        return MOVER_BAR
    if board[MOVER_IN_HAND] > 0 and rules.hand_enters_first:
        return MOVER_IN_HAND
    return None


def _may_hit(board: Sequence[int], rules: Rules) -> bool:
    """Dutch backgammon: no hit until a checker of the mover is home (points 1..6) or borne off."""
    if not rules.hit_needs_home_checker:
        return True
    on_board = sum(max(count, 0) for count in board[1:27])
    return any(board[point] > 0 for point in range(1, 7)) or on_board < rules.checkers_per_side


def all_home(board: Sequence[int]) -> bool:
    """Bearing off is allowed only with every checker of the mover on points 1..6."""
    if board[MOVER_BAR] > 0 or board[MOVER_IN_HAND] > 0:
        return False
    return all(board[point] <= 0 for point in range(7, 25))


def single_moves(board: Sequence[int], die: int, rules: Rules = STANDARD) -> list[Move]:
    """Every legal move of one checker by ``die`` pips, ignoring the rest of the roll."""
    entering = _entering_source(board, rules)
    # Checkers waiting to enter must all enter before any other checker moves (checkers in hand
    # only with ``rules.hand_enters_first``; otherwise they are one more source).
    if entering is not None:
        sources = [entering]
    else:
        in_hand = [MOVER_IN_HAND] if board[MOVER_IN_HAND] > 0 else []
        sources = in_hand + [p for p in range(24, 0, -1) if board[p] > 0]
    bear_off_allowed = entering is None and all_home(board)
    may_hit = _may_hit(board, rules)
    moves = []
    for source in sources:
        target = (25 if source in (MOVER_BAR, MOVER_IN_HAND) else source) - die
        if target >= 1:
            # A point holding two or more opposing checkers is closed; one opposing checker is hit.
            if board[target] >= 0 or (board[target] == -1 and may_hit):
                moves.append((source, target, board[target] == -1))
        elif bear_off_allowed:
            # Exact die bears off; a larger die only from the highest occupied point.
            exact = target == 0
            highest = all(board[point] <= 0 for point in range(source + 1, 7))
            if exact or highest:
                moves.append((source, BORNE_OFF, False))
    return moves


def move_checker(board: list[int], source: int, target: int) -> bool:
    """Move one of the mover's checkers from ``source`` (a point, ``MOVER_BAR`` or ``MOVER_IN_HAND``) to
    ``target`` (a point, or ``BORNE_OFF``) on ``board`` in place; a single opposing checker there is hit
    to its bar. Returns whether it hit. Whether the move is legal is the caller's to know."""
    board[source] -= 1
    if target == BORNE_OFF:
        return False
    hit = board[target] == -1
    if hit:
        board[target] = 0
        board[OPPONENT_BAR] -= 1
    board[target] += 1
    return hit


def apply_move(board: list[int], move: Move) -> None:
    """Play ``move`` on ``board`` in place."""
    move_checker(board, move[0], move[1])


def undo_move(board: list[int], move: Move) -> None:
    """Take back ``move`` (the last one applied) on ``board`` in place."""
    source, target, hit = move
    if target != BORNE_OFF:
        board[target] -= 1
        if hit:
            board[target] = -1
            board[OPPONENT_BAR] += 1
    board[source] += 1


# Everything the walk found: for each multiset of dice played (sorted, larger first), the positions
# reached with the move sequences that reach them.
Reached = dict[tuple[int, ...], dict[Board, set[Play]]]


def _explore(
    board: list[int],
    dice_left: tuple[int, ...],
    dice_played: tuple[int, ...],
    moves: list[Move],
    reached: Reached,
    visited: set | None,
    rules: Rules,
) -> None:
    """Depth first over single-checker moves (apply, recurse, undo), recording every position
    reached under the dice played to get there. Non-doubles are tried in both orders.

    With ``visited`` (afterstates only), a position met again with the same dice left is not walked
    again: everything below it is already recorded. Without it every move sequence is walked and
    recorded, which ``reference_plays`` needs.
    """
    position = tuple(board)
    if visited is not None:
        if (position, dice_left) in visited:
            return
        visited.add((position, dice_left))
    sequences = reached.setdefault(dice_played, {}).setdefault(position, set())
    if visited is None:
        sequences.add(tuple(moves))
    for index, die in enumerate(dice_left):
        if die in dice_left[:index]:
            continue  # the same die value again gives the same continuations
        rest = dice_left[:index] + dice_left[index + 1 :]
        played = tuple(sorted(dice_played + (die,), reverse=True))
        for move in single_moves(board, die, rules):
            apply_move(board, move)
            moves.append(move)
            _explore(board, rest, played, moves, reached, visited, rules)
            moves.pop()
            undo_move(board, move)


# The dice-usage rule (standard backgammon rules, e.g. bkgm.com/rules.html, "Movement of the Checkers"):
#   "A player must use both numbers of a roll if this is legally possible (or all four numbers of a
#    double). When only one number can be played, the player must play that number. Or if either number
#    can be played but not both, the player must play the larger one. When neither number can be used,
#    the player loses his turn. In the case of doubles, when all four numbers cannot be played, the
#    player must play as many numbers as he can."
def _apply_dice_usage_rule(reached: Reached, dice: tuple[int, int]) -> tuple[dict[Board, set[Play]], int]:
    """The allowed plays, and how many dice they use."""
    most_dice = max(len(dice_played) for dice_played in reached)
    allowed = [dice_played for dice_played in reached if len(dice_played) == most_dice]
    if most_dice == 1 and dice[0] != dice[1]:
        larger = (max(dice),)
        if larger in reached:
            allowed = [larger]
    plays: dict[Board, set[Play]] = {}
    for dice_played in allowed:
        for position, sequences in reached[dice_played].items():
            plays.setdefault(position, set()).update(sequences)
    return plays, most_dice


def _check_board(board: Sequence[int], rules: Rules) -> None:
    if len(board) != BOARD_WIDTH:
        raise ValueError(f"a board has {BOARD_WIDTH} entries, not {len(board)}")
    mover = sum(max(count, 0) for count in board[1:27])
    if mover > rules.checkers_per_side:
        raise ValueError(f"the mover has {mover} checkers on the board, more than {rules.checkers_per_side}")


def _legal_plays(
    board: Sequence[int], dice: tuple[int, int], rules: Rules, with_plays: bool
) -> tuple[dict[Board, set[Play]], int]:
    """The plays of one roll under the dice-usage rule, and how many dice they use."""
    _check_board(board, rules)
    d1, d2 = int(dice[0]), int(dice[1])
    if not (1 <= d1 <= 6 and 1 <= d2 <= 6):
        raise ValueError(f"dice must be 1..6, not {dice}")
    dice_left = (d1,) * 4 if d1 == d2 else (d1, d2)
    reached: Reached = {}
    visited = None if with_plays else set()
    _explore([int(count) for count in board], dice_left, (), [], reached, visited, rules)
    return _apply_dice_usage_rule(reached, (d1, d2))


Turn = tuple[Board, bool]  # an afterstate and whether the mover rolls again


# The acey-deucey roll (``Rules.acey_deucey``): "a roll of 1-2: play the 1 and the 2, then choose any
# double and play it as four moves, then roll again; if the 1 and 2 cannot both be played the turn
# ends at once, and if the chosen double cannot be played in full the extra roll is lost."
def _legal_turns(
    board: Sequence[int], dice: tuple[int, int], rules: Rules, with_plays: bool
) -> dict[Turn, set[Play]]:
    plays, dice_used = _legal_plays(board, dice, rules, with_plays)
    if not (rules.acey_deucey and sorted(int(die) for die in dice) == [1, 2] and dice_used == 2):
        return {(after, False): sequences for after, sequences in plays.items()}
    turns: dict[Turn, set[Play]] = {}
    for after, heads in plays.items():
        for double in range(1, 7):
            rest, double_used = _legal_plays(after, (double, double), rules, with_plays)
            for final, tails in rest.items():
                sequences = turns.setdefault((final, double_used == 4), set())
                sequences.update(head + tail for head in heads for tail in tails)
    return turns


def reference_plays(
    board: Sequence[int], dice: tuple[int, int], rules: Rules = STANDARD
) -> dict[Board, list[Play]]:
    """Each distinct legal afterstate (a 28-tuple, still from the mover's view) with the checker-move
    sequences that reach it, sorted. When no move is possible: ``{board: [()]}``. An acey-deucey
    1-2 turn's sequences include the chosen double's moves, with or without the extra roll."""
    plays: dict[Board, set[Play]] = {}
    for (after, _), sequences in _legal_turns(board, dice, rules, with_plays=True).items():
        plays.setdefault(after, set()).update(sequences)
    return {position: sorted(sequences, reverse=True) for position, sequences in plays.items()}


def reference_afterstates(board: Sequence[int], dice: tuple[int, int], rules: Rules = STANDARD) -> set[Board]:
    """The distinct legal afterstates, each a 28-tuple from the mover's view (for an acey-deucey 1-2
    turn, whether or not they earn the extra roll)."""
    return {after for after, _ in _legal_turns(board, dice, rules, with_plays=False)}


def reference_turns(board: Sequence[int], dice: tuple[int, int], rules: Rules = STANDARD) -> set[Turn]:
    """The distinct legal ``(afterstate, extra_roll)`` pairs: ``extra_roll`` is True where the play
    was an acey-deucey 1-2 whose chosen double was played in full, so the mover rolls again. One
    afterstate can come with both flags (two choices of double reach it)."""
    return set(_legal_turns(board, dice, rules, with_plays=False))
