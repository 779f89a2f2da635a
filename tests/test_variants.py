"""Rules variants (``engine.variants``): golden positions with the board drawn, the batched generator
against the reference on random positions of every variant, invariants over random play of every
variant, scoring, and the variant as the codecs, the CLI and the config see it.

Drawings and ``moved`` are those of ``test_rules_golden`` (``X`` the mover, travelling 24 -> 1;
``hand X1 O15`` gives checkers in hand; in ``moved``, 26 is the hand and 0 is off). An acey-deucey
afterstate is a pair (board, extra roll): the same board can come both with and without it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest
import torch
from helpers import compile_mode, random_boards
from test_rules_golden import board_from_drawing, moved

from bgtrain.cli import main
from bgtrain.training.config import load_config
from engine.board import MOVER_BAR, MOVER_IN_HAND, OPPONENT_BAR, OPPONENT_IN_HAND, borne_off, flip_board
from engine.dice import ALL_ROLLS, RandomDice, ScriptedDice
from engine.game import new_games, play, restart_finished, winning_points
from engine.movegen import legal_afterstates
from engine.position_facts import mover_finished
from engine.position_id import decode_position_id, encode_position_id
from engine.random_play import random_choice
from engine.reference import reference_afterstates, reference_turns
from engine.rules import Rules
from engine.state import State
from engine.variants import VARIANTS, get_rules

IMPLEMENTATIONS = ["reference", "batched"]
ACEY_DEUCEY = get_rules("acey-deucey")
DUTCH = get_rules("dutch")


# --- the registry ------------------------------------------------------------------------------


def test_registry_names_and_checkers():
    checkers = {name: rules.checkers_per_side for name, rules in VARIANTS.items()}
    assert checkers == {
        "backgammon": 15, "nackgammon": 15, "hypergammon": 3, "hypergammon1": 1, "hypergammon2": 2,
        "dutch": 15, "acey-deucey": 15, "acey-deucey-single": 15, "play-to-lose": 15,
    }  # fmt: skip
    for name, rules in VARIANTS.items():
        assert rules.name == name and get_rules(name) is rules


def test_unknown_variant_lists_the_names():
    with pytest.raises(ValueError, match="unknown variant 'nack'.*backgammon, nackgammon, hypergammon"):
        get_rules("nack")


def test_rules_refuse_gammons_they_cannot_score():
    with pytest.raises(ValueError, match="gammons"):
        Rules(name="bad", first_off_loses=True)
    with pytest.raises(ValueError, match="scoring"):
        Rules(name="bad", scoring="per-pip")


START_DRAWINGS = {
    "nackgammon": """
     13  14  15  16  17  18 | 19  20  21  22  23  24
     X4   .   .   .  O3   . | O4   .   .   .  X2  X2
     O4   .   .   .  X3   . | X4   .   .   .  O2  O2
     12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    "hypergammon": """
     13  14  15  16  17  18 | 19  20  21  22  23  24
      .   .   .   .   .   . |  .   .   .  X1  X1  X1
      .   .   .   .   .   . |  .   .   .  O1  O1  O1
     12  11  10   9   8   7 |  6   5   4   3   2   1
    """,
    "dutch": """
     13  14  15  16  17  18 | 19  20  21  22  23  24
      .   .   .   .   .   . |  .   .   .   .   .   .
      .   .   .   .   .   . |  .   .   .   .   .   .
     12  11  10   9   8   7 |  6   5   4   3   2   1
    hand X15 O15
    """,
}


@pytest.mark.parametrize("name", sorted(START_DRAWINGS))
def test_start_positions_as_drawn(name):
    assert board_from_drawing(START_DRAWINGS[name]) == tuple(get_rules(name).start_board().tolist())
    assert get_rules("acey-deucey").start_board().tolist() == get_rules("dutch").start_board().tolist()


# --- golden positions --------------------------------------------------------------------------


@dataclass(frozen=True)
class Golden:
    name: str
    variant: str
    drawing: str
    dice: tuple[int, int]
    # Every afterstate as moved() steps, with its extra roll (False outside acey-deucey 1-2 turns).
    expected: tuple[tuple[tuple[tuple[int, int], ...], bool], ...]

    @property
    def board(self) -> tuple[int, ...]:
        return board_from_drawing(self.drawing)

    @property
    def turns(self) -> set[tuple[tuple[int, ...], bool]]:
        return {(moved(self.board, *steps), extra) for steps, extra in self.expected}


ONE_IN_HAND = """
     13  14  15  16  17  18 | 19  20  21  22  23  24
      .   .   .   .   .   . |  .  X14  .   .   .   .
      .   .   .   .   .   . |  .   .   .   .   .   .
     12  11  10   9   8   7 |  6   5   4   3   2   1
    hand X1 O15
    """

# Acey-deucey endings: the mover's last checker on 20 (14 off), two opposing checkers on 11 or 17.
LAST_CHECKER_BLOCK_ON_11 = """
     13  14  15  16  17  18 | 19  20  21  22  23  24
      .   .   .   .   .   . |  .  X1   .   .   .   .
      .  O2   .   .   .   . |  .   .   .   .   .   .
     12  11  10   9   8   7 |  6   5   4   3   2   1
    """
LAST_CHECKER_BLOCK_ON_17 = """
     13  14  15  16  17  18 | 19  20  21  22  23  24
      .   .   .   .  O2   . |  .  X1   .   .   .   .
      .   .   .   .   .   . |  .   .   .   .   .   .
     12  11  10   9   8   7 |  6   5   4   3   2   1
    """

GOLDEN = [
    Golden(
        # All 15 start in hand: each die enters one checker, and that is the whole play.
        "dutch opening enters two checkers",
        "dutch",
        START_DRAWINGS["dutch"],
        (6, 5),
        ((((26, 19), (26, 20)), False),),
    ),
    Golden(
        # The last checker in hand enters first (with the 5 on 20, or the 3 on 22); only then may
        # a checker move on. 26/22 22/17 is the same position as 26/20 20/17.
        "dutch: every checker in hand enters before any moves on",
        "dutch",
        ONE_IN_HAND,
        (5, 3),
        ((((26, 20), (20, 17)), False), (((26, 22), (20, 15)), False)),
    ),
    Golden(
        # The same position in acey-deucey: the checkers on 20 may move while one is still in hand.
        "acey-deucey: entered checkers move before all are in",
        "acey-deucey",
        ONE_IN_HAND,
        (5, 3),
        (
            (((26, 20), (20, 17)), False),
            (((26, 22), (20, 15)), False),
            (((20, 15), (20, 17)), False),
            (((20, 15), (15, 12)), False),
        ),
    ),
    Golden(
        # No checker home and none off: 13/9* may not hit, so no 4 from the 13-point.
        "dutch: no hit without a checker home",
        "dutch",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
        X14   .   .   .   .   . |  .   .   .   .   .  X1
          .   .   .  O1   .   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        hand X0 O14
        """,
        (4, 1),
        ((((24, 20), (20, 19)), False), (((24, 20), (13, 12)), False), (((13, 12), (12, 8)), False)),
    ),
    Golden(
        # The same, with the fifteenth checker home on 6: now 13/9* hits.
        "dutch: a checker home allows hits",
        "dutch",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
        X14   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .  O1   .   . | X1   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        hand X0 O14
        """,
        (4, 1),
        (
            (((13, 9), (9, 8)), False),
            (((13, 9), (13, 12)), False),
            (((13, 9), (6, 5)), False),
            (((13, 12), (12, 8)), False),
            (((13, 12), (6, 2)), False),
            (((6, 5), (5, 1)), False),
        ),
    ),
    Golden(
        # Read by the state: 8/6 brings the first checker home, after which 13/7* may hit in the
        # same turn. 13/7* first, or after 13/11, is not allowed.
        "dutch: a checker brought home allows a hit later in the turn",
        "dutch",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
        X14   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .   .  X1  O1 |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        hand X0 O14
        """,
        (6, 2),
        ((((8, 6), (13, 7)), False), (((8, 2), (13, 11)), False), (((13, 11), (11, 5)), False)),
    ),
    Golden(
        # A checker borne off counts as one that reached home (14 on the board, one off): hits allowed.
        "dutch: a checker borne off allows hits",
        "dutch",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
        X14   .   .   .   .   . |  .   .   .   .   .   .
          .   .   .  O1   .   . |  .   .   .   .   .   .
         12  11  10   9   8   7 |  6   5   4   3   2   1
        hand X0 O14
        """,
        (4, 1),
        ((((13, 9), (9, 8)), False), (((13, 9), (13, 12)), False), (((13, 12), (12, 8)), False)),
    ),
    Golden(
        # 20/18/17 (or 20/19/17), then each double played as far as it goes: 1-1 17/13 and 4-4
        # 17/1 in full (extra roll); 5-5 17/12/7/2/off in full (the game is won); 2-2 stops on 13
        # (11 is closed), 3-3 on 14, and 6-6 cannot move: no extra roll. 13 comes with and without.
        "acey-deucey 1-2 with the chosen double and the extra roll",
        "acey-deucey",
        LAST_CHECKER_BLOCK_ON_11,
        (2, 1),
        (
            (((20, 18), (18, 17), (17, 16), (16, 15), (15, 14), (14, 13)), True),
            (((20, 18), (18, 17), (17, 13), (13, 9), (9, 5), (5, 1)), True),
            (((20, 18), (18, 17), (17, 12), (12, 7), (7, 2), (2, 0)), True),
            (((20, 18), (18, 17), (17, 15), (15, 13)), False),
            (((20, 18), (18, 17), (17, 14)), False),
            (((20, 18), (18, 17)), False),
        ),
    ),
    Golden(
        # 17 is closed, so the 1 and the 2 cannot both be played: the larger is, and the turn ends.
        "acey-deucey 1-2 that cannot be played in full ends the turn",
        "acey-deucey",
        LAST_CHECKER_BLOCK_ON_17,
        (2, 1),
        ((((20, 18),), False),),
    ),
    Golden(
        # The only checker bears off (with either die): in play-to-lose this move loses the game.
        "play-to-lose: the forced last bear-off",
        "play-to-lose",
        """
         13  14  15  16  17  18 | 19  20  21  22  23  24
         O5   .   .   .   .   . | O5   .   .   .   .   .
          .   .   .   .   .   . |  .   .   .   .  X1  O5
         12  11  10   9   8   7 |  6   5   4   3   2   1
        """,
        (6, 5),
        ((((2, 0),), False),),
    ),
    Golden(
        # Three checkers on 24, 23, 22; nothing to hit. Same checker: 24/13, 23/12, 22/11; two
        # checkers: 3 x 2 ways to play the 6 and the 5 with different checkers, all distinct.
        "hypergammon opening 6-5",
        "hypergammon",
        START_DRAWINGS["hypergammon"],
        (6, 5),
        (
            (((24, 18), (18, 13)), False),
            (((23, 17), (17, 12)), False),
            (((22, 16), (16, 11)), False),
            (((24, 18), (23, 18)), False),
            (((24, 18), (22, 17)), False),
            (((23, 17), (24, 19)), False),
            (((23, 17), (22, 17)), False),
            (((22, 16), (24, 19)), False),
            (((22, 16), (23, 18)), False),
        ),
    ),
    Golden(
        # Sixes: 24/18 and 13/7 (23/17 and 8/2 closed); fives: 23/18, 13/8, 8/3 (24/19 and 6/1
        # closed); 24/18/13 but not 23/18/12.
        "nackgammon opening 6-5",
        "nackgammon",
        START_DRAWINGS["nackgammon"],
        (6, 5),
        (
            (((24, 18), (18, 13)), False),
            (((24, 18), (23, 18)), False),
            (((24, 18), (13, 8)), False),
            (((24, 18), (8, 3)), False),
            (((13, 7), (23, 18)), False),
            (((13, 7), (13, 8)), False),
            (((13, 7), (8, 3)), False),
        ),
    ),
]


def turns_found(implementation: str, boards: list, rolls: list, rules: Rules) -> list[set]:
    """For each (board, roll), the set of (afterstate, extra roll) pairs ``implementation`` finds."""
    if implementation == "reference":
        return [reference_turns(board, roll, rules) for board, roll in zip(boards, rolls)]
    board_tensor = torch.tensor(boards, dtype=torch.int8)
    afterstates = legal_afterstates(board_tensor, torch.tensor(rolls), rules)
    found: list[set] = [set() for _ in boards]
    rows = zip(afterstates.boards.tolist(), afterstates.position.tolist(), afterstates.extra_roll.tolist())
    for row, position, extra in rows:
        found[position].add((tuple(row), extra))
    assert afterstates.counts.tolist() == [len(turns) for turns in found], "an afterstate is listed twice"
    return found


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("case", GOLDEN, ids=[case.name for case in GOLDEN])
def test_golden(case, implementation):
    rules = get_rules(case.variant)
    assert sum(max(count, 0) for count in case.board[1:27]) <= rules.checkers_per_side
    (found,) = turns_found(implementation, [case.board], [case.dice], rules)
    assert found == case.turns
    assert len(found) == len(case.expected)
    low_first = (case.dice[1], case.dice[0])
    assert turns_found(implementation, [case.board], [low_first], rules)[0] == found


def test_acey_deucey_afterstate_with_and_without_the_extra_roll():
    case = next(case for case in GOLDEN if case.name.startswith("acey-deucey 1-2 with"))
    boards = [board for board, _ in case.turns]
    assert len(boards) == 6 and len(set(boards)) == 5
    assert reference_afterstates(case.board, case.dice, ACEY_DEUCEY) == set(boards)


# --- scoring -----------------------------------------------------------------------------------


def test_play_to_lose_finish_loses_one_point():
    case = next(case for case in GOLDEN if case.variant == "play-to-lose")
    after = torch.tensor([moved(case.board, (2, 0))], dtype=torch.int8)
    # The opponent has borne off none and has checkers in the mover's home board: in the standard
    # game this is a backgammon; in play-to-lose the mover loses a single point.
    assert winning_points(after, get_rules("backgammon")).tolist() == [3]
    assert winning_points(after, get_rules("play-to-lose")).tolist() == [-1]
    for seat in (0, 1):
        state = single_state(case.board, case.dice, seat)
        after_play = play(state, after, get_rules("play-to-lose"), ScriptedDice([(3, 1)]))
        assert bool(after_play.game_over[0]) and int(after_play.result[0]) == (-1 if seat == 0 else 1)


def test_acey_deucey_pays_per_checker_left():
    case = next(case for case in GOLDEN if case.name.startswith("acey-deucey 1-2 with"))
    all_off = torch.tensor([moved(case.board, (20, 0))], dtype=torch.int8)
    assert winning_points(all_off, ACEY_DEUCEY).tolist() == [2]  # the opponent's two on the 11-point
    assert winning_points(all_off, get_rules("acey-deucey-single")).tolist() == [1]
    assert ACEY_DEUCEY.max_points == 15 and not ACEY_DEUCEY.cube


def test_hypergammon_gammons_and_backgammons_count():
    rules = get_rules("hypergammon")
    board = [0] * 28
    board[2] = 1  # the mover's last checker; the opponent's three are all on the board
    board[OPPONENT_BAR] = -1
    board[20], board[21] = -1, -1
    after = torch.tensor([moved(tuple(board), (2, 0))], dtype=torch.int8)
    assert winning_points(after, rules).tolist() == [3]  # a backgammon: one on the bar
    board[OPPONENT_BAR], board[19] = 0, -1
    assert winning_points(torch.tensor([moved(tuple(board), (2, 0))], dtype=torch.int8), rules).tolist() == [
        2
    ]


# --- the acey-deucey turn in the game loop ----------------------------------------------------


def single_state(board, dice, seat: int = 0) -> State:
    return State(
        board=torch.tensor([board], dtype=torch.int8),
        dice=torch.tensor([dice], dtype=torch.int8),
        seat=torch.tensor([seat], dtype=torch.int8),
        turn=torch.zeros(1, dtype=torch.int32),
        game_over=torch.zeros(1, dtype=torch.bool),
        result=torch.zeros(1, dtype=torch.int8),
    )


def test_acey_deucey_extra_roll_keeps_the_side_to_move():
    case = next(case for case in GOLDEN if case.name.startswith("acey-deucey 1-2 with"))
    state = single_state(case.board, case.dice)
    afterstates = legal_afterstates(state.board, state.dice, ACEY_DEUCEY)
    on_13 = moved(case.board, (20, 13))
    rows = [tuple(row) for row in afterstates.boards.tolist()]
    extra = afterstates.extra_roll.tolist()
    with_roll = next(i for i, (row, e) in enumerate(zip(rows, extra)) if row == on_13 and e)
    without_roll = next(i for i, (row, e) in enumerate(zip(rows, extra)) if row == on_13 and not e)

    # The double played in full: the same side rolls again (4-3 here), the board is not flipped.
    choice = torch.tensor([with_roll])
    again = play(
        state,
        afterstates.select(choice),
        ACEY_DEUCEY,
        ScriptedDice([(4, 3)]),
        afterstates.select_extra_roll(choice),
    )
    assert again.seat.tolist() == [0] and again.dice.tolist() == [[4, 3]] and again.turn.tolist() == [1]
    assert again.board[0].tolist() == list(on_13) and not bool(again.game_over[0])
    # The same board without the extra roll: the other side is to move.
    choice = torch.tensor([without_roll])
    passed = play(
        state,
        afterstates.select(choice),
        ACEY_DEUCEY,
        ScriptedDice([(4, 3)]),
        afterstates.select_extra_roll(choice),
    )
    assert (
        passed.seat.tolist() == [1] and passed.board[0].tolist() == flip_board(torch.tensor(on_13)).tolist()
    )


def test_acey_deucey_play_needs_the_extra_roll_flag():
    state = new_games(ACEY_DEUCEY, 2, RandomDice(0))
    with pytest.raises(ValueError, match="extra_roll"):
        play(state, state.board, ACEY_DEUCEY, RandomDice(1))


# --- the batched generator against the reference -----------------------------------------------


def assert_same_as_reference(boards: torch.Tensor, rules: Rules, rolls=ALL_ROLLS) -> None:
    board_list = boards.tolist()
    mismatches = []
    for roll in rolls:
        found = turns_found("batched", board_list, [roll] * len(board_list), rules)
        for board, turns in zip(board_list, found):
            expected = reference_turns(board, roll, rules)
            if turns != expected:
                mismatches.append((board, roll, len(expected), len(turns)))
    assert not mismatches, f"{rules.name}: {len(mismatches)} mismatches, first: {mismatches[:3]}"


def random_play_positions(
    rules: Rules, count: int, seed: int, games: int = 64
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions reached by random play (acey-deucey extra rolls included), spread over whole games."""
    dice = RandomDice(seed)
    generator = torch.Generator().manual_seed(seed + 1)
    state = new_games(rules, games, dice)
    boards, rolls = [], []
    for _ in range(150):
        boards.append(state.board)
        rolls.append(state.dice)
        afterstates = legal_afterstates(state.board, state.dice, rules)
        choice = random_choice(afterstates, generator)
        state = play(state, afterstates.select(choice), rules, dice, afterstates.select_extra_roll(choice))
        state = restart_finished(state, rules, dice)
    order = torch.randperm(games * 150, generator=generator)[:count]
    return torch.cat(boards)[order], torch.cat(rolls)[order]


NOT_ACEY_DEUCEY = [name for name, rules in VARIANTS.items() if not rules.acey_deucey]


def moves_rules(rules: Rules) -> Rules:
    """The rules less what the move generator never reads (how a finished game is paid, the cube)."""
    return replace(rules, name="", scoring="standard", gammons=False, backgammons=False, first_off_loses=False,
                   cube=False)


# One variant of each set whose moves are alike (acey-deucey-single plays as acey-deucey, play-to-lose as
# backgammon): the same kernels on the same boards, so the slow compiled check runs once a set.
_FIRST_OF_EACH: dict[Rules, str] = {}
for _name in sorted(VARIANTS):
    _FIRST_OF_EACH.setdefault(moves_rules(VARIANTS[_name]), _name)
DISTINCT_MOVES = sorted(_FIRST_OF_EACH.values())


@pytest.mark.parametrize("name", DISTINCT_MOVES)
def test_compiled_kernels_match_op_by_op(name):
    """The tests against the reference use batches too small to be compiled (``engine.kernels``);
    here every variant's compiled move generation must equal the op-by-op one exactly, on batches
    large enough to compile, for every roll (acey-deucey 1-2 continuations included)."""
    rules = get_rules(name)
    reached, _ = random_play_positions(rules, 300, seed=31)
    boards = torch.cat([random_boards(300, seed=30, rules=rules, in_hand=True), reached])
    if name == "dutch":
        boards = torch.cat([boards, dutch_boards_without_a_checker_home(300, seed=32)])
    rolls = ALL_ROLLS
    if rules.acey_deucey:
        # A 1-2 goes on with six doubles: on a few positions only, or the test takes minutes.
        rolls = [roll for roll in ALL_ROLLS if roll != (2, 1)]
    dice = torch.tensor(rolls, dtype=torch.int8).repeat_interleave(boards.shape[0], 0)
    boards = boards.repeat(len(rolls), 1)
    if rules.acey_deucey:
        dice = torch.cat([dice, torch.tensor([[2, 1]], dtype=torch.int8).expand(12, 2)])
        boards = torch.cat([boards, reached[:12]])
    results = []
    for mode in ("always", "never"):
        with compile_mode(mode):
            afterstates = legal_afterstates(boards, dice, rules)
        results.append((afterstates.boards, afterstates.position, afterstates.dice_used, afterstates.extra_roll))
    for compiled, op_by_op in zip(*results):
        assert torch.equal(compiled, op_by_op)


@pytest.mark.parametrize("name", NOT_ACEY_DEUCEY)
def test_random_boards_match_reference(name):
    rules = get_rules(name)
    assert_same_as_reference(random_boards(80, seed=21, rules=rules, in_hand=True), rules)


@pytest.mark.parametrize("name", NOT_ACEY_DEUCEY)
def test_reachable_positions_match_reference(name):
    rules = get_rules(name)
    boards, _ = random_play_positions(rules, 60, seed=22)
    assert_same_as_reference(boards, rules)


def dutch_boards_without_a_checker_home(count: int, seed: int) -> torch.Tensor:
    """Dutch positions where the no-hit rule bites: the mover has no checker on points 1..6 and
    none borne off; the opponent's 11 checkers on the board stand mostly alone (4 in hand)."""
    generator = torch.Generator().manual_seed(seed)

    def place(weights: torch.Tensor, checkers: int) -> torch.Tensor:
        picks = torch.multinomial(weights, checkers, replacement=True, generator=generator)
        return torch.zeros_like(weights, dtype=torch.long).scatter_add_(1, picks, torch.ones_like(picks))

    # The mover's locations 0..23 are points 1..24, then the bar and the hand.
    weights = torch.rand(count, 26, generator=generator) * (torch.rand(count, 26, generator=generator) < 0.5)
    weights[:, :6] = 0
    weights[:, 24] *= 0.1
    weights[:, 6] += 1e-3
    mover = place(weights, 15)
    free = mover[:, :24] == 0
    opponent = place(torch.rand(count, 24, generator=generator) * free + 1e-9, 11) * free
    board = torch.zeros(count, 28, dtype=torch.long)
    board[:, 1:25] = mover[:, :24] - opponent
    board[:, MOVER_BAR] = mover[:, 24]
    board[:, MOVER_IN_HAND] = mover[:, 25]
    board[:, OPPONENT_IN_HAND] = -(15 - opponent.sum(1))
    return board.to(torch.int8)


def test_dutch_no_hit_positions_match_reference():
    boards = dutch_boards_without_a_checker_home(120, seed=23)
    assert bool(((boards[:, 1:25] == -1).sum(1) >= 2).float().mean() > 0.8)  # blots to (not) hit
    assert_same_as_reference(boards, DUTCH)


ACEY_DEUCEY_ROLL = [(2, 1)]
OTHER_ROLLS = [roll for roll in ALL_ROLLS if roll != (2, 1)]


def test_acey_deucey_matches_reference():
    # acey-deucey-single moves the same way; only its scoring differs.
    rules = ACEY_DEUCEY
    boards = random_boards(60, seed=24, rules=rules, in_hand=True)
    assert_same_as_reference(boards, rules, OTHER_ROLLS)
    # The 1-2 roll: six doubles after every 1-2 play makes the reference slow, so fewer positions.
    assert_same_as_reference(boards[:8], rules, ACEY_DEUCEY_ROLL)
    reached, _ = random_play_positions(rules, 40, seed=25, games=16)
    assert_same_as_reference(reached, rules, OTHER_ROLLS)
    assert_same_as_reference(reached[:6], rules, ACEY_DEUCEY_ROLL)


# --- invariants over random play ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(VARIANTS))
def test_invariants_over_random_games(name):
    rules = get_rules(name)
    checkers = rules.checkers_per_side
    games = 8 if rules.acey_deucey else 48
    dice = RandomDice(31)
    generator = torch.Generator().manual_seed(32)
    state = new_games(rules, games, dice)
    assert torch.equal(state.board, rules.start_board().expand(games, -1))
    extra_rolls = 0
    for _ in range(2000):
        if bool(state.game_over.all()):
            break
        live = ~state.game_over
        board = state.board
        mover_off, opponent_off = borne_off(board, checkers)
        assert bool(((mover_off >= 0) & (mover_off <= checkers)).all())
        assert bool(((opponent_off >= 0) & (opponent_off <= checkers)).all())
        assert bool((board[:, MOVER_BAR] >= 0).all() and (board[:, MOVER_IN_HAND] >= 0).all())
        assert bool((board[:, OPPONENT_BAR] <= 0).all() and (board[:, OPPONENT_IN_HAND] <= 0).all())
        afterstates = legal_afterstates(state.board, state.dice, rules)
        assert bool((afterstates.counts >= 1).all())
        after_mover_off, after_opponent_off = borne_off(afterstates.boards, checkers)
        parent = afterstates.position
        assert bool(((after_mover_off >= 0) & (after_mover_off <= checkers)).all())
        assert torch.equal(after_opponent_off, borne_off(state.board, checkers)[1][parent])
        assert bool((afterstates.boards[:, MOVER_IN_HAND] <= state.board[parent, MOVER_IN_HAND]).all())
        if not rules.acey_deucey:
            assert not bool(afterstates.extra_roll.any())

        choice = random_choice(afterstates, generator)
        chosen, extra = afterstates.select(choice), afterstates.select_extra_roll(choice)
        before = state
        state = play(state, chosen, rules, dice, extra)
        finished = live & (borne_off(chosen, checkers)[0] == checkers)
        assert torch.equal(state.game_over, before.game_over | finished)
        # The score by the variant's rules, for the seat that bore off its last checker.
        points = winning_points(chosen, rules).long()
        sign = 1 - 2 * before.seat.long()
        assert torch.equal(state.result.long()[finished], (points * sign)[finished])
        if rules.first_off_loses:
            assert bool((points[finished] == -1).all())
        elif rules.scoring == "checkers_left":
            loser_left = checkers - borne_off(chosen, checkers)[1]
            assert torch.equal(points[finished], loser_left[finished])
        else:
            assert bool(((points[finished] >= 1) & (points[finished] <= rules.max_points)).all())
        # The game goes on: the same side after an extra roll, else the other side's view.
        again = live & ~finished & extra
        going = live & ~finished & ~extra
        extra_rolls += int(again.sum())
        assert torch.equal(state.board[again], chosen[again]) and torch.equal(
            state.seat[again], before.seat[again]
        )
        assert torch.equal(state.board[going], flip_board(chosen)[going])
        assert torch.equal(state.seat[going], 1 - before.seat[going])
    assert bool(state.game_over.all()), f"{name}: games still running after 2000 turns"
    assert bool((state.result != 0).all())
    assert (extra_rolls > 0) == rules.acey_deucey


# --- codecs, CLI, config -----------------------------------------------------------------------


def test_position_id_error_names_the_variant():
    with pytest.raises(ValueError, match="15 checkers for the player on roll.*at most 3 in hypergammon"):
        decode_position_id("4HPwATDgc/ABMA", get_rules("hypergammon"))


def run_moves(capsys, args):
    status = main(["moves", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_moves_with_a_variant(capsys):
    position_id = encode_position_id(get_rules("hypergammon").start_board())
    status, out, _ = run_moves(capsys, ["--variant", "hypergammon", position_id, "65"])
    result = json.loads(out)
    assert status == 0 and len(result["moves"]) == 9 and "24/13" in {move["play"] for move in result["moves"]}
    assert "extra_roll" not in result["moves"][0]
    # A standard game's ID has too many checkers for hypergammon: the error names the variant.
    status, out, err = run_moves(capsys, ["--variant", "hypergammon", "4HPwATDgc/ABMA", "31"])
    assert status == 2 and out == "" and "hypergammon" in err
    status, _, err = run_moves(capsys, ["--variant", "hyper", position_id, "31"])
    assert status == 2 and "known variants: backgammon, nackgammon" in err


def test_moves_reports_the_extra_roll(capsys):
    case = next(case for case in GOLDEN if case.name.startswith("acey-deucey 1-2 with"))
    status, out, _ = run_moves(capsys, ["--variant", "acey-deucey", encode_position_id(case.board), "21"])
    moves = json.loads(out)["moves"]
    assert status == 0 and len(moves) == 6
    assert sorted(move["extra_roll"] for move in moves) == [False] * 3 + [True] * 3
    on_13 = encode_position_id(moved(case.board, (20, 13)))
    assert sorted(move["extra_roll"] for move in moves if move["position_id"] == on_13) == [False, True]
    # Sorted by play, then extra roll (false first) where one play both does and does not roll again.
    keys = [(move["play"], move["extra_roll"]) for move in moves]
    assert keys == sorted(keys) and len({play for play, _ in keys}) < len(keys)


def test_config_variant_and_the_trainer_rules(tmp_path):
    from bgtrain.training.td import Run

    config = load_config(
        "configs/hypergammon.toml", [f"run.out_dir={tmp_path}", "selfplay.games_in_parallel=4"]
    )
    assert config.run.variant == "hypergammon"
    run = Run(config)
    assert run.rules is get_rules("hypergammon")
    assert torch.equal(run.state.board[0], run.rules.start_board())
    with pytest.raises(ValueError, match="variant = 'nack'.*'nackgammon'"):
        load_config(None, ["run.variant=nack"])


# --- training on the variants ------------------------------------------------------------------


def test_lambda_return_after_an_extra_roll_is_not_flipped():
    from bgtrain.outcomes import flip_outcomes, terminal_outcomes
    from bgtrain.training.td import Turn, lambda_returns

    value = torch.tensor([[0.7, 0.2, 0.01, 0.1, 0.0]])

    def turn(extra_roll: bool) -> Turn:
        return Turn(
            board=torch.zeros(1, 28, dtype=torch.int8),
            next_value=value,
            ended=torch.tensor([False]),
            outcome=terminal_outcomes(torch.tensor([1])),
            truncated=torch.tensor([False]),
            extra_roll=torch.tensor([extra_roll]),
        )

    # The position after an extra-roll play has the same side to move: its value is the mover's.
    assert torch.allclose(lambda_returns([turn(True)], 0.7)[0], value)
    assert torch.allclose(lambda_returns([turn(False)], 0.7)[0], flip_outcomes(value))


@pytest.mark.parametrize("name", ["acey-deucey", "acey-deucey-single", "play-to-lose", "dutch"])
def test_selfplay_steps_on_a_variant(name, tmp_path):
    from bgtrain.training.td import Run

    overrides = [
        f"run.variant={name}",
        "model.hidden=[8]",
        "selfplay.games_in_parallel=8",
        "selfplay.turn_limit=30",
    ]
    run = Run(
        load_config(
            None,
            [f"run.out_dir={tmp_path}", *overrides, "train.buffer_turns=2", "train.update_every_turns=1"],
        )
    )
    for _ in range(40):
        run.step()
    assert run.updates > 0 and run.games > 0


def test_search_refuses_acey_deucey_beyond_0_ply():
    from bgtrain.model.network import ValueNetwork
    from bgtrain.values.evaluator import Evaluator

    rules = get_rules("acey-deucey-single")
    evaluator = Evaluator.from_network(ValueNetwork("tesauro198", (8,)), rules, bearoff=False)
    board = rules.start_board().unsqueeze(0)
    assert evaluator.probabilities(board, 0).shape == (1, 5)
    with pytest.raises(ValueError, match="extra rolls"):
        evaluator.probabilities(board, 1)


# --- acey-deucey's scoring by checkers left, in the five outcome slots ---------------------------


def test_checkers_left_outcomes_value_every_result_exactly():
    from bgtrain.outcomes import cubeless_equity, flip_outcomes, terminal_outcomes

    points = torch.tensor([1, 2, 7, 15, -1, -2, -9, -15])
    outcomes = terminal_outcomes(points, rules=ACEY_DEUCEY)
    # A 15-checker loss is 1 + 14 x (14 / 14) points; the backgammon slots are never used.
    assert outcomes[3].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert outcomes[4].tolist() == [0.0, 0.0, 0.0, 0.0, 0.0]
    assert torch.allclose(cubeless_equity(outcomes, ACEY_DEUCEY), points.float())
    # The other side's view is the same result negated, through the one flip of the contract.
    assert torch.allclose(flip_outcomes(outcomes), terminal_outcomes(-points, rules=ACEY_DEUCEY))
    with pytest.raises(ValueError, match="between 1 and 15"):
        terminal_outcomes(torch.tensor([16]), rules=ACEY_DEUCEY)
    # Standard scoring still refuses more than a backgammon.
    with pytest.raises(ValueError):
        terminal_outcomes(torch.tensor([4]))


def test_checkers_left_clamp_needs_two_checkers_to_bear_off():
    from bgtrain.outcomes import clamp_outcomes

    probs = torch.tensor([[0.6, 0.5, 0.3, 0.2, 0.1]]).repeat(2, 1)
    start = ACEY_DEUCEY.start_board()
    # The opponent has one checker left to bear off: the mover can win only one point.
    last = torch.zeros(28, dtype=torch.int8)
    last[5], last[20] = 15, -1
    clamped = clamp_outcomes(probs, torch.stack([start, last]), ACEY_DEUCEY)
    assert clamped[0].tolist() == pytest.approx([0.6, 0.5, 0.0, 0.2, 0.0])
    assert clamped[1].tolist() == pytest.approx([0.6, 0.0, 0.0, 0.2, 0.0])


def test_acey_deucey_greedy_agent_prefers_the_bigger_win():
    """A play that wins now beats one that does not, and the win is valued at the checkers the loser
    has left (all 15 here), not at 1."""
    from helpers import FunctionValue

    from bgtrain.arena.agents import GreedyValueAgent
    from bgtrain.outcomes import cubeless_equity
    from bgtrain.values.static_value import StaticValue

    board = torch.zeros(28, dtype=torch.int8)
    board[1], board[3], board[24], board[27] = 1, 1, -3, -12  # the mover's last two; 15 opposing left
    # 3-1: 3/off 1/off wins; 3/2 2/off leaves the checker on the 1-point.
    afterstates = legal_afterstates(board.unsqueeze(0), torch.tensor([[3, 1]]), ACEY_DEUCEY)
    assert afterstates.total == 2
    half = FunctionValue(lambda boards: torch.full((boards.shape[0], 5), 0.5))
    outcomes = StaticValue(half, ACEY_DEUCEY, clamps=False).plays(afterstates)
    equity = cubeless_equity(outcomes, ACEY_DEUCEY)
    assert sorted(equity.tolist()) == [0.0, 15.0]
    agent = GreedyValueAgent(half, "half", ACEY_DEUCEY)
    state = State(board=board.unsqueeze(0), dice=torch.tensor([[3, 1]], dtype=torch.int8),
                  seat=torch.zeros(1, dtype=torch.int8), turn=torch.zeros(1, dtype=torch.int32),
                  game_over=torch.zeros(1, dtype=torch.bool), result=torch.zeros(1, dtype=torch.int8))
    chosen = afterstates.select(agent.choose(state, afterstates))
    assert int(chosen[0, 1:27].clamp(min=0).sum()) == 0  # it bore the last checker off


def test_moves_takes_and_reports_checkers_in_hand(capsys):
    empty = encode_position_id(torch.zeros(28, dtype=torch.int8))
    # Dutch start: every checker in hand; 3-1 enters two of them (one play), leaving 13 in hand.
    status, out, _ = run_moves(capsys, ["--variant", "dutch", empty, "31", "hand=15,15", empty, "66", "hand=15,15"])
    first, second = (json.loads(line) for line in out.splitlines())
    assert status == 0 and first["hand"] == [15, 15]
    assert first["moves"] == [{"play": "bar/24 bar/22", "position_id": first["moves"][0]["position_id"],
                               "in_hand": [13, 15]}]
    assert decode_position_id(first["moves"][0]["position_id"], get_rules("dutch"))[[22, 24]].tolist() == [1, 1]
    assert [move["in_hand"] for move in second["moves"]] == [[11, 15]]
    # Without the field the missing checkers are borne off, as in the position ID itself.
    status, out, _ = run_moves(capsys, ["--variant", "dutch", empty, "31"])
    assert status == 0 and json.loads(out)["moves"][0]["in_hand"] == [0, 0]
    # Checkers in hand only exist in the variants that start them there, and never beyond 15 a side.
    status, _, err = run_moves(capsys, [empty, "31", "hand=15,15"])
    assert status == 2 and "no checkers are in hand in backgammon" in err
    status, _, err = run_moves(capsys, ["--variant", "dutch", "4HPwATDgc/ABMA", "21", "hand=1,0"])
    assert status == 2 and "more than the 15 of dutch" in err
    status, _, err = run_moves(capsys, ["--variant", "dutch", empty, "21", "hand=15"])
    assert status == 2 and "hand=M,O" in err


def _acey_deucey_rolls(games: int = 64) -> State:
    """``games`` acey-deucey games spread out by random play, each then given the 1-2 roll."""
    dice = RandomDice(5)
    state = new_games(ACEY_DEUCEY, games, dice)
    generator = torch.Generator().manual_seed(6)
    for _ in range(12):
        afterstates = legal_afterstates(state.board, state.dice, ACEY_DEUCEY)
        choice = random_choice(afterstates, generator)
        state = play(state, afterstates.select(choice), ACEY_DEUCEY, dice, afterstates.select_extra_roll(choice))
        state = restart_finished(state, ACEY_DEUCEY, dice)
    return State(board=state.board, dice=torch.tensor([[2, 1]], dtype=torch.int8).expand(games, 2), seat=state.seat,
                 turn=state.turn, game_over=state.game_over, result=state.result)


def test_evaluator_values_extra_roll_plays_for_the_mover():
    """An acey-deucey play that earns an extra roll leaves the mover on roll: the evaluator's 0-ply
    choice must agree with the greedy agent's, which values those plays for the mover."""
    from bgtrain.arena.agents import GreedyValueAgent
    from bgtrain.model.network import ValueNetwork
    from bgtrain.values.evaluator import Evaluator

    torch.manual_seed(3)
    network = ValueNetwork("tesauro198", (16,))
    evaluator = Evaluator.from_network(network, ACEY_DEUCEY, bearoff=False)
    agent = GreedyValueAgent.from_network(network, "net", ACEY_DEUCEY)
    state = _acey_deucey_rolls()
    afterstates = legal_afterstates(state.board, state.dice, ACEY_DEUCEY)
    assert bool(afterstates.extra_roll.any())
    assert torch.equal(evaluator.choose(afterstates, 0), agent.choose(state, afterstates))


def test_static_plays_value_each_play_once_for_the_side_on_roll_after_it():
    """``StaticValue.plays`` values an extra-roll play only as the mover's position and the others only
    as afterstates: the same as valuing every play both ways and picking (the obvious reference)."""
    from bgtrain.model.network import ValueNetwork
    from bgtrain.values.static_value import NetworkValue, StaticValue

    torch.manual_seed(4)
    static = StaticValue(NetworkValue(ValueNetwork("tesauro198", (16,)), ACEY_DEUCEY), ACEY_DEUCEY)
    state = _acey_deucey_rolls(16)
    dice = torch.tensor([[2, 1], [6, 5]], dtype=torch.int8).repeat(8, 1)  # half the games' plays end the turn
    afterstates = legal_afterstates(state.board, dice, ACEY_DEUCEY)
    rolls_again = afterstates.extra_roll & ~mover_finished(afterstates.boards)
    assert 0 < int(rolls_again.sum()) < afterstates.total
    both_ways = torch.where(rolls_again.unsqueeze(1), static.positions(afterstates.boards),
                            static.afterstates(afterstates.boards))
    torch.testing.assert_close(static.plays(afterstates), both_ways, rtol=0, atol=1e-6)
