"""Games read for analysis: every roll with its position, and every cube decision, from ``.mat`` files
(and GNU Backgammon's ``.sgf`` files, ``bgtrain.analysis.sgf``).

``read_match_file`` reads a Jellyfish ``.mat`` file with ``bgtrain.matfile`` and walks each game
on the board, keeping what the analysis needs and nothing the engine does not check:

* a ``Turn`` per roll: the position before the roll (28 ints, from the side to move), the dice, the
  afterstate the file says was played (``engine.notation.parse_play`` without the dice: whether it is
  a legal play of the roll is checked later, in one batch, against ``legal_afterstates``), the cube
  and the game (money, or the match score) as the mover saw them;
* a ``CubePoint`` before every roll but a game's first, where the mover could turn the cube
  (centred or its own, not in the Crawford game), and at every double: whether the mover doubled and
  how the other side answered.

A file that cannot be read gives one error naming the file and line; a game that cannot be walked
(a play that does not fit the board, the wrong player to move) gives one error naming its line, and
the other games of the file are still read: the file is read again game by game, the lines of the
other games blanked so that line numbers still point into the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from bgtrain.analysis.sgf import parse_sgf
from bgtrain.cube import CubeState, MatchGame, MoneyGame
from bgtrain.matfile import DOUBLE, DROP, MOVE, TAKE, WIN, MatGame, parse_mat
from engine.board import FLIP_PERMUTATION
from engine.game import winning_points
from engine.notation import parse_play
from engine.rules import STANDARD

Board = tuple[int, ...]
START = tuple(int(value) for value in STANDARD.start_board().tolist())


@dataclass(frozen=True)
class Turn:
    """One roll of one player. ``player``: 0 (the file's left column) or 1; boards from the mover's side."""

    game: int  # index into the file's games
    player: int
    line: int
    board: Board  # before the roll
    dice: tuple[int, int]
    after: Board  # as written in the file
    play: str
    cube: CubeState  # as the mover sees it
    rules: MoneyGame | MatchGame  # as the mover sees it


@dataclass(frozen=True)
class CubePoint:
    """A cube decision of ``player`` before its roll; ``response`` ("take", "drop") when it doubled."""

    game: int
    player: int
    line: int
    board: Board
    cube: CubeState
    rules: MoneyGame | MatchGame
    doubled: bool
    response: str | None = None


@dataclass
class GameRecord:
    """A game walked on the board: its turns and cube decisions in order, and the result."""

    number: int
    line: int
    players: tuple[str, str]
    scores: tuple[int, int]
    crawford: bool
    turns: list[Turn] = field(default_factory=list)
    cube_points: list[CubePoint] = field(default_factory=list)
    winner: int | None = None
    points: int = 0
    resigned: bool = False


@dataclass
class MatchFile:
    """What one file gave: its games that could be walked, and one line per error."""

    path: str
    length: int
    games: list[GameRecord]
    errors: list[str]


def read_match_file(path: str | Path, jacoby: bool = False) -> MatchFile:
    """Read and walk every game of a ``.mat`` file; never raises for a bad file (see ``MatchFile.errors``).
    ``jacoby``: money games were played with the Jacoby rule (bgtrain's money files are not)."""
    name = str(path)
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as error:
        return MatchFile(name, 0, [], [f"{name}: {error.strerror or error}"])
    if Path(path).suffix.lower() == ".sgf":
        length, games, errors = parse_sgf(text, name)
        records, walk_errors = _walk_all(games, length, jacoby, name)
        return MatchFile(name, length, records, errors + walk_errors)
    try:
        games = list(parse_mat(text, name).games)
        length = parse_mat(_header_only(text), name).length
    except ValueError as error:
        first = str(error)
        games, length, errors = _read_game_by_game(text, name)
        if length is None:
            return MatchFile(name, 0, [], [first])
        records, walk_errors = _walk_all(games, length, jacoby, name)
        return MatchFile(name, length, records, errors + walk_errors)
    records, errors = _walk_all(games, length, jacoby, name)
    return MatchFile(name, length, records, errors)


def _header_only(text: str) -> str:
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if "point match" in line.lower():
            return "\n".join(lines[: index + 1])
    return text


def _read_game_by_game(text: str, name: str) -> tuple[list[MatGame], int | None, list[str]]:
    """Each game parsed on its own (the other games' lines blanked): the games that parse, one error each
    for those that do not."""
    lines = text.splitlines()
    starts = [index for index, line in enumerate(lines) if line.strip().lower().startswith("game ")]
    try:
        length = parse_mat(_header_only(text), name).length
    except ValueError:
        return [], None, []
    header_end = next((index for index, line in enumerate(lines) if "point match" in line.lower()), 0)
    games, errors = [], []
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(lines)
        kept = ["" for _ in lines[:start]]
        kept[header_end] = lines[header_end]
        chunk = "\n".join(kept + lines[start:end])
        try:
            games.extend(parse_mat(chunk, name).games)
        except ValueError as error:
            errors.append(str(error))
    return games, length, errors


def _walk_all(games: list[MatGame], length: int, jacoby: bool, name: str) -> tuple[list[GameRecord], list[str]]:
    records, errors = [], []
    crawford_played = False
    for game in games:
        crawford = False
        if length and not crawford_played and (length - 1) in game.scores and max(game.scores) < length:
            crawford = crawford_played = True
        try:
            records.append(walk_game(game, len(records), length, crawford, jacoby))
        except ValueError as error:
            errors.append(f"{name}:{error}")
    return records, errors


def _game_rules(length: int, scores: tuple[int, int], player: int, crawford: bool, jacoby: bool):
    if not length:
        return MoneyGame(jacoby=jacoby)
    mover, opponent = scores[player], scores[1 - player]
    return MatchGame(length, (mover, opponent), crawford)


def walk_game(game: MatGame, index: int, length: int, crawford: bool, jacoby: bool = False) -> GameRecord:
    """The turns and cube decisions of one game. Raises ValueError starting ``LINE: game N:``."""
    first_line = game.actions[0].line if game.actions else 0
    record = GameRecord(game.number, first_line, game.players, game.scores, crawford)
    if length and max(game.scores) >= length:
        raise ValueError(f"{first_line}: game {game.number}: score {game.scores[0]}-{game.scores[1]} is not "
                         f"below the match length {length}")
    rules = [_game_rules(length, game.scores, player, crawford, jacoby) for player in (0, 1)]
    board: Board = START
    to_move: int | None = None
    cube, holder = 1, None  # holder: the player who owns the cube, None while centred
    offered: CubePoint | None = None
    doubled_this_turn = False
    for action in game.actions:
        where = f"{action.line}: game {game.number}"
        if record.winner is not None:
            if action.kind == WIN:
                continue
            raise ValueError(f"{where}: {action.kind} after the game is over")
        player = action.player
        if action.kind == MOVE:
            if to_move is not None and player != to_move:
                raise ValueError(f"{where}: it is the other player's turn to roll")
            if offered is not None:
                raise ValueError(f"{where}: a roll while a double waits for an answer")
            cube_state = CubeState(cube, "centred" if holder is None else ("mover" if holder == player else "opponent"))
            if to_move is not None and not doubled_this_turn and _may_double(holder, player, crawford):
                record.cube_points.append(CubePoint(index, player, action.line, board, cube_state, rules[player], False))
            try:
                after = tuple(parse_play(board, action.play))
            except ValueError as error:
                raise ValueError(f"{where}: {action.dice[0]}{action.dice[1]}: {error}") from None
            record.turns.append(Turn(index, player, action.line, board, action.dice, after, action.play,
                                     cube_state, rules[player]))
            doubled_this_turn = False
            # Scalar here (a tensor per move costs more than the parsing): the game ends when the mover
            # has no checker left; the other side's view is engine.board's permutation and negation.
            won = int(winning_points(torch.tensor([after], dtype=torch.int8), STANDARD)[0]) if max(after[1:27]) <= 0 else 0
            if won:
                record.winner, record.points = player, won * cube
            else:
                board = tuple(-after[index] for index in FLIP_PERMUTATION)
                to_move = 1 - player
        elif action.kind == DOUBLE:
            if to_move is None or player != to_move:
                raise ValueError(f"{where}: only the player about to roll may double")
            if not _may_double(holder, player, crawford):
                raise ValueError(f"{where}: this player may not double here (the cube is the opponent's, "
                                 "or this is the Crawford game)")
            cube_state = CubeState(cube, "centred" if holder is None else "mover")
            offered = CubePoint(index, player, action.line, board, cube_state, rules[player], True)
        elif action.kind in (TAKE, DROP):
            if offered is None or player == offered.player:
                raise ValueError(f"{where}: no double to answer")
            record.cube_points.append(CubePoint(**{**offered.__dict__, "response": action.kind}))
            if action.kind == TAKE:
                cube, holder, doubled_this_turn = 2 * cube, player, True
            else:
                record.winner, record.points = 1 - player, cube
            offered = None
        elif action.kind == WIN:
            # A win before the board ends the game is a resignation (Jellyfish files write no other mark).
            record.winner, record.points, record.resigned = player, action.value, True
    return record


def _may_double(holder: int | None, player: int, crawford: bool) -> bool:
    return not crawford and holder in (None, player)
