"""Jellyfish ``.mat`` match files: bgtrain's games in the text format GNU Backgammon, eXtreme Gammon,
BGBlitz and others import, and a reader that replays them on the engine.

The layout is the one GNU Backgammon writes (``export.c``, ``ExportMatchMat``/``ExportGameJF``) and
reads (``import.c``, ``ImportMat``/``ImportGame``/``ParseMatMove``)::

     0 point match

     Game 1
     model : 0                      pubeval : 0
      1) 31: 8/5 6/5                 64: 24/18 13/9
      2) 62: 24/18 13/11             Doubles => 2
      3)  Takes                      51: 13/8 6/5*
      ...
     21) 64: 6/0 4/0
          Wins 2 points

* A header line ``N point match``; money play is written as a 0 point match (what GNU Backgammon
  writes for a money session, and reads as one). GNU Backgammon scores an imported money session
  with its own Jacoby setting (on by default): bgtrain's money games count gammons without a cube
  turn, so ``set jacoby off`` before ``import mat`` (a comment line above the header says so). Then, per game, `` Game N`` and the two players
  with their scores before the game, ``" %-31s%s : %d"`` with the first ``name : score``.
* Numbered lines hold one action of the left player (columns 5..32) and one of the right player
  (from column 33): a roll and its play ``63: 24/18 13/10``, or a cube action ``Doubles => 2``,
  ``Takes``, ``Drops``. When the right player moves first, the first line's left column is blank.
* A play is written as single checker moves in an order in which they can be played, one die each,
  in numbers from the mover's side: 25 for the bar, 0 for off, ``*`` after a point where a blot is
  hit (``25/22* 13/10``, gnubg's ``FormatMovePlain``). A roll that cannot be played is ``64:`` alone.
* The winner's ``Wins N point(s)`` follows the last action, in the winner's column: on its own line
  indented by 6 (left player) or 34 (right player) spaces.

Player names cannot hold ``:`` or spaces there (gnubg reads ``%31[^:]`` and turns spaces into ``_``),
so names are cleaned (:func:`player_name`). ``read_mat`` splits a line into columns the way gnubg
does: at the second ``dd:`` roll when a line has two, else at the first double space after column 15.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.board import MOVER_BAR, MOVER_IN_HAND, flip_board
from engine.notation import parse_play
from engine.reference import BORNE_OFF, reference_plays
from engine.rules import STANDARD, Rules

GAMES_PER_FILE = 100
NAME_LENGTH = 24
LEFT_WIDTH = 27  # a left action is written "%3d) %-27s "
LEFT_WIN_INDENT = " " * 6
RIGHT_WIN_INDENT = " " * 34

MOVE, DOUBLE, TAKE, DROP, WIN = "move", "double", "take", "drop", "win"


@dataclass(frozen=True)
class MatAction:
    """One action of one player: ``player`` 0 (left column) or 1 (right). ``kind``: ``move`` (``dice``
    and ``play``, the play as written, ``""`` when the roll cannot be played), ``double`` (``value``:
    the new cube value), ``take``, ``drop`` or ``win`` (``value``: points won)."""

    player: int
    kind: str
    dice: tuple[int, int] | None = None
    play: str = ""
    value: int = 0
    line: int = field(default=0, compare=False)  # the file's line it was read from (1-based; 0: not read)


@dataclass(frozen=True)
class MatGame:
    number: int
    players: tuple[str, str]
    scores: tuple[int, int]  # before the game
    actions: tuple[MatAction, ...]


@dataclass(frozen=True)
class MatMatch:
    length: int  # 0: money play
    games: tuple[MatGame, ...]


# --- writing ---------------------------------------------------------------------------------------


def agent_label(spec: str) -> str:
    """The name an agent spec shows as a player: a model file by its name without folders or suffix, a
    search depth kept (``checkpoints/bgtrain-plus.pt:1ply`` -> ``bgtrain-plus-1ply``); other specs as given."""
    spec = spec.strip()
    path, colon, option = spec.rpartition(":")
    if not colon or not re.fullmatch(r"\d+ply", option):
        path, option = spec, ""
    if "/" in path or path.endswith((".pt", ".onnx")):
        folders = path.rstrip("/").split("/")
        stem = folders[-1].removesuffix(".pt").removesuffix(".onnx") or folders[-1]
        # A run's final.pt or latest.pt says little alone: the run's folder name goes first.
        path = f"{folders[-2]}-{stem}" if stem in ("final", "latest") and len(folders) > 1 else stem
    return f"{path}-{option}" if option else path


def player_name(name: str, other: str | None = None) -> str:
    """A name the format can hold: letters, digits and ``._-+``, others turned into ``_``, at most
    ``NAME_LENGTH`` characters; ``_2`` is added when it equals ``other`` (an agent against itself)."""
    cleaned = re.sub(r"[^A-Za-z0-9._+\-]", "_", agent_label(name))[:NAME_LENGTH] or "player"
    if other is not None and cleaned == other:
        cleaned = cleaned[: NAME_LENGTH - 2] + "_2"
    return cleaned


def _point(point: int) -> str:
    if point in (MOVER_BAR, MOVER_IN_HAND):
        return "25"
    if point == BORNE_OFF:
        return "0"
    return str(point)


def mat_play(before: Sequence[int], after: Sequence[int], dice: tuple[int, int], rules: Rules = STANDARD) -> str:
    """The play ``before -> after`` (28-int boards from the mover's side) written for a ``.mat`` file:
    one die per checker move, in a playable order (the legal sequence that starts from the highest
    point), 25 for the bar, 0 for off, ``*`` on hits. ``""`` when the roll cannot be played."""
    plays = reference_plays(before, dice, rules)
    after = tuple(int(count) for count in after)
    if after not in plays:
        raise ValueError(f"the afterstate is not a legal play of {dice[0]}-{dice[1]} from this position")
    sequence = plays[after][0]
    return " ".join(f"{_point(source)}/{_point(target)}{'*' if hit else ''}" for source, target, hit in sequence)


def _cell(action: MatAction) -> str:
    if action.kind == MOVE:
        return f"{action.dice[0]}{action.dice[1]}: {action.play}".rstrip()
    if action.kind == DOUBLE:
        return f" Doubles => {action.value}"
    if action.kind == TAKE:
        return " Takes"
    if action.kind == DROP:
        return " Drops"
    raise ValueError(f"no cell for a {action.kind!r} action")


def _wins(points: int) -> str:
    return f"Wins {points} point{'s' if points != 1 else ''}"


def format_game(game: MatGame) -> str:
    """One game as text: `` Game N``, the players line, the numbered action lines and the result."""
    left = f"{game.players[0]} : {game.scores[0]}"
    lines = [f" Game {game.number}", f" {left:<31}{game.players[1]} : {game.scores[1]}"]
    line = ""  # a line holding a left action, waiting for the right player's
    number = 0
    previous = None
    for action in game.actions:
        if action.kind == WIN and previous is not None and previous.kind == DROP and previous.player == 0:
            # GNU writes the right player's win after a left pass on the same line: " Drops" and 23
            # spaces, then "Wins"; on a line of its own GNU's importer reads it as another double.
            line = f"{number:3d}) {_cell(previous)}{' ' * 23}{_wins(action.value)}"
            lines.append(line)
            line, previous = "", action
            continue
        previous = action
        if action.kind == WIN:
            if line:
                lines.append(line.rstrip())
                line = ""
            indent = LEFT_WIN_INDENT if action.player == 0 else RIGHT_WIN_INDENT
            lines.append(indent + _wins(action.value))
            continue
        if action.player == 0:
            if line:
                lines.append(line.rstrip())
            number += 1
            line = f"{number:3d}) {_cell(action):<{LEFT_WIDTH}} "
        else:
            if not line:
                number += 1
                line = f"{number:3d})" + " " * 29
            lines.append((line + _cell(action)).rstrip())
            line = ""
    if line:
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


MONEY_NOTE = ("bgtrain money games: gammons count without a cube turn (no Jacoby rule). "
              "In GNU Backgammon: 'set jacoby off' before 'import mat'.")
JACOBY_NOTE = "bgtrain play: money games under the Jacoby rule."


def format_match(match: MatMatch, note: str | None = None) -> str:
    """The whole file. A money session starts with a comment line (importers skip lines before the
    header) saying how its gammons count, which GNU Backgammon takes from its own Jacoby setting:
    ``note``, by default ``MONEY_NOTE`` (bgtrain's cubeless benchmark games: no Jacoby rule)."""
    comment = f"; {note or MONEY_NOTE}\n" if match.length == 0 else ""
    parts = [comment, f" {match.length} point match\n"]
    for game in match.games:
        parts.append("\n" + format_game(game))
    return "".join(parts)


def write_mat(path: str | Path, match: MatMatch, note: str | None = None) -> Path:
    from bgtrain.files import atomic_write

    return atomic_write(path, format_match(match, note))


def game_actions(turns, a_seat: int, points_for_a: int, rules: Rules = STANDARD) -> tuple[MatAction, ...]:
    """The actions of a cubeless game (``benchmark.GameRecord`` turns): A is player 0 (left)."""
    actions = []
    for seat, dice, before, after in turns:
        player = 0 if seat == a_seat else 1
        actions.append(MatAction(player, MOVE, tuple(dice), mat_play(before, after, tuple(dice), rules)))
    if points_for_a:
        actions.append(MatAction(0 if points_for_a > 0 else 1, WIN, value=abs(points_for_a)))
    return tuple(actions)


def money_session(records, name_a: str, name_b: str, first_number: int = 1, scores=(0, 0),
                  rules: Rules = STANDARD) -> MatMatch:
    """Cubeless games (``benchmark.GameRecord``) as a money session (a 0 point match), A on the left.
    Games come in their seat-swapped pairs, the pair's two games one after the other."""
    if rules != STANDARD:
        raise ValueError(f"match files hold standard backgammon only, not {rules.name!r}")
    left = player_name(name_a)
    right = player_name(name_b, left)
    games = []
    score_a, score_b = scores
    for number, record in enumerate(sorted(records, key=lambda r: (r.pair, r.a_seat)), first_number):
        actions = game_actions(record.turns, record.a_seat, record.points, rules)
        games.append(MatGame(number, (left, right), (score_a, score_b), actions))
        score_a += max(record.points, 0)
        score_b += max(-record.points, 0)
    return MatMatch(0, tuple(games))


def save_games(directory: str | Path, records, name_a: str, name_b: str, rules: Rules = STANDARD,
               games_per_file: int = GAMES_PER_FILE) -> list[Path]:
    """Write cubeless money games as ``.mat`` files of at most ``games_per_file`` games each
    (``games_0001.mat``, ...), seat-swapped pairs kept together; returns the paths."""
    directory = Path(directory)
    ordered = sorted(records, key=lambda r: (r.pair, r.a_seat))
    per_file = max(2, games_per_file - games_per_file % 2)
    paths = []
    score_a = score_b = 0
    for index, start in enumerate(range(0, len(ordered), per_file), 1):
        chunk = ordered[start : start + per_file]
        session = money_session(chunk, name_a, name_b, 1, (score_a, score_b), rules)
        for record in chunk:
            score_a += max(record.points, 0)
            score_b += max(-record.points, 0)
        paths.append(write_mat(directory / f"games_{index:04d}.mat", session))
    return paths


def _event_actions(events, a_seat: int, rules: Rules) -> tuple[MatAction, ...]:
    """``bgtrain.arena.cube_duel`` events of one game -> actions, A (seat ``a_seat``) as player 0."""
    actions = []
    for event in events:
        kind, seat = event[0], event[1]
        player = 0 if seat == a_seat else 1
        if kind == "move":
            _, _, dice, before, after = event
            actions.append(MatAction(player, MOVE, tuple(dice), mat_play(before, after, tuple(dice), rules)))
        elif kind == "double":
            actions.append(MatAction(player, DOUBLE, value=event[2]))
        elif kind in (TAKE, DROP, WIN):
            actions.append(MatAction(player, kind, value=event[2]))
        else:
            raise ValueError(f"unknown game event {kind!r}")
    return tuple(actions)


def save_cubeful_games(directory: str | Path, records, a_seat: list[int], match_length: int, name_a: str,
                       name_b: str, rules: Rules = STANDARD, games_per_file: int = GAMES_PER_FILE) -> list[Path]:
    """Write the games of ``bgtrain.arena.cube_duel.play_cube_duel`` (its ``CubeDuelRecords``): one file per match
    (``match_0001.mat``, ...) for matches, else money sessions of at most ``games_per_file`` games
    (``games_0001.mat``, ...), seat-swapped twins together. A is the left player."""
    if rules != STANDARD:
        raise ValueError(f"match files hold standard backgammon only, not {rules.name!r}")
    directory = Path(directory)
    left = player_name(name_a)
    right = player_name(name_b, left)
    pairs = len(a_seat) // 2
    by_slot: dict[int, list] = {}
    for (slot, number), events in sorted(records.games.items()):
        by_slot.setdefault(slot, []).append(_event_actions(events, a_seat[slot], rules))
    slots = sorted(by_slot, key=lambda slot: (slot % pairs, slot // pairs))

    def scored(games_actions, first_number: int, start: tuple[int, int]) -> tuple[list[MatGame], tuple[int, int]]:
        games, score = [], list(start)
        for number, actions in enumerate(games_actions, first_number):
            games.append(MatGame(number, (left, right), (score[0], score[1]), actions))
            for action in actions:
                if action.kind == WIN:
                    score[action.player] += action.value
        return games, (score[0], score[1])

    paths = []
    if match_length:
        for index, slot in enumerate(slots, 1):
            games, _ = scored(by_slot[slot], 1, (0, 0))
            paths.append(write_mat(directory / f"match_{index:04d}.mat", MatMatch(match_length, tuple(games))))
        return paths
    flat = [actions for slot in slots for actions in by_slot[slot]]
    per_file = max(2, games_per_file - games_per_file % 2)
    score = (0, 0)
    for index, start in enumerate(range(0, len(flat), per_file), 1):
        games, score = scored(flat[start : start + per_file], 1, score)
        paths.append(write_mat(directory / f"games_{index:04d}.mat", MatMatch(0, tuple(games))))
    return paths


# --- reading ---------------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(\d+)\s+point\s+match", re.IGNORECASE)
_GAME = re.compile(r"^\s*Game\s+(\d+)\s*$", re.IGNORECASE)
_PLAYERS = re.compile(r"^\s*(?P<left>[^:]+?)\s*:\s*(?P<ls>-?\d+)\s+(?P<right>[^:]+?)\s*:\s*(?P<rs>-?\d+)\s*$")
_ROLL = re.compile(r"(?<![0-9])([1-6])([1-6]):")
_NUMBER = re.compile(r"^\s*\d+\)")


def _split_columns(line: str) -> tuple[str, str]:
    """(left, right) cells of an action line, as GNU Backgammon's ``ImportGame`` splits it."""
    rolls = list(_ROLL.finditer(line))
    if len(rolls) >= 2 and rolls[1].start() > 3:
        left, right = line[: rolls[1].start()], line[rolls[1].start() :]
    else:
        gap = line.find("  ", 15) if len(line) > 15 else -1
        left, right = (line[:gap], line[gap:]) if gap >= 0 else (line, "")
    number = _NUMBER.match(left)
    if number:
        left = left[number.end() :]
    return left.strip(), right.strip()


def _parse_cell(cell: str, player: int, cube: int, where: str, line: int = 0) -> MatAction | None:
    if not cell:
        return None
    roll = re.match(r"^([1-6])([1-6]):(.*)$", cell)
    if roll:
        return MatAction(player, MOVE, (int(roll.group(1)), int(roll.group(2))), roll.group(3).strip(), line=line)
    lowered = cell.lower()
    if lowered.startswith("double"):
        value = re.search(r"(\d+)", cell)
        return MatAction(player, DOUBLE, value=int(value.group(1)) if value else 2 * cube, line=line)
    if lowered.startswith("take"):
        return MatAction(player, TAKE, line=line)
    if lowered.startswith(("drop", "pass")):
        return MatAction(player, DROP, line=line)
    if lowered.startswith("win"):
        value = re.search(r"(\d+)", cell)
        return MatAction(player, WIN, value=int(value.group(1)) if value else 1, line=line)
    raise ValueError(f"{where}: {cell!r} is not a roll and play, a cube action or a win")


def read_mat(path: str | Path) -> MatMatch:
    """Read a ``.mat`` file (the layout in the module docstring, as GNU Backgammon reads it).
    Raises ValueError naming the line for what cannot be read."""
    path = Path(path)
    return parse_mat(path.read_text(errors="replace"), path)


def parse_mat(text: str, path: str | Path = "<text>") -> MatMatch:
    """``read_mat`` on the text of a file; ``path`` names it in errors. Every action keeps its line."""
    lines = text.splitlines()
    length = None
    games: list[MatGame] = []
    index = 0
    while index < len(lines) and length is None:
        header = _HEADER.match(lines[index])
        if header:
            length = int(header.group(1))
        index += 1
    if length is None:
        raise ValueError(f"{path}: no 'N point match' line: not a .mat file")
    while index < len(lines):
        game = _GAME.match(lines[index])
        index += 1
        if not game:
            continue
        number = int(game.group(1))
        while index < len(lines) and not lines[index].strip():
            index += 1
        players = _PLAYERS.match(lines[index]) if index < len(lines) else None
        if not players:
            raise ValueError(f"{path}:{index + 1}: expected the players line 'name : score   name : score'")
        index += 1
        actions: list[MatAction] = []
        cube = 1
        while index < len(lines) and lines[index].strip() and not _GAME.match(lines[index]):
            where = f"{path}:{index + 1}"
            line = lines[index]
            # a "Drops ... Wins" pair can share a line: split the left cell once more
            left, right = _split_columns(line)
            for player, cell in ((0, left), (1, right)):
                for part in re.split(r"\s{2,}(?=Wins)", cell):
                    action = _parse_cell(part.strip(), player, cube, where, index + 1)
                    if action is not None:
                        if action.kind == DOUBLE:
                            cube = action.value
                        actions.append(action)
            index += 1
        scores = (int(players.group("ls")), int(players.group("rs")))
        games.append(MatGame(number, (players.group("left"), players.group("right")), scores, tuple(actions)))
    return MatMatch(length, tuple(games))


# --- replaying -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayResult:
    """What replaying a game on the engine found: ``winner`` (0 left, 1 right, None if unfinished),
    ``points`` (with the cube), ``final_board`` from the side of the last mover, ``moves`` replayed."""

    winner: int | None
    points: int
    final_board: tuple[int, ...]
    moves: int


def replay_game(game: MatGame, rules: Rules = STANDARD) -> ReplayResult:
    """Replay a game on the engine: every play is parsed with its dice (``engine.notation.parse_play``,
    which checks it is legal), players must alternate, and a written ``Wins`` must match the result
    on the board (or a dropped double). Raises ValueError naming the action that fails."""
    import torch

    from engine.game import winning_points

    board = tuple(int(v) for v in rules.start_board().tolist())
    to_move: int | None = None
    cube, offered, moves = 1, False, 0
    winner, points = None, 0
    for number, action in enumerate(game.actions, 1):
        where = f"game {game.number}, action {number} ({action.kind} by player {action.player})"
        if winner is not None and action.kind != WIN:
            raise ValueError(f"{where}: the game is already over")
        if action.kind == MOVE:
            if to_move is not None and action.player != to_move:
                raise ValueError(f"{where}: it is player {to_move}'s turn")
            try:
                after = parse_play(board, action.play, rules, dice=action.dice)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            moves += 1
            won = int(winning_points(torch.tensor([after], dtype=torch.int8), rules)[0])
            if won:
                winner, points, board = action.player, won * cube, after
            else:
                board = tuple(int(v) for v in flip_board(torch.tensor(after, dtype=torch.int8)).tolist())
                to_move = 1 - action.player
        elif action.kind == DOUBLE:
            offered = True
            cube_before = cube
            cube = action.value
            if cube != 2 * cube_before:
                raise ValueError(f"{where}: the cube goes from {cube_before} to {2 * cube_before}, not {cube}")
        elif action.kind == TAKE:
            if not offered:
                raise ValueError(f"{where}: no double to take")
            offered = False
        elif action.kind == DROP:
            if not offered:
                raise ValueError(f"{where}: no double to drop")
            winner, points = 1 - action.player, cube // 2
        elif action.kind == WIN:
            if winner is None:
                raise ValueError(f"{where}: a win is written but the game is not over (resignations are not read)")
            if action.player != winner or action.value != points:
                raise ValueError(
                    f"{where}: written 'Wins {action.value}' for player {action.player}, the board says player "
                    f"{winner} wins {points}"
                )
    return ReplayResult(winner, points, board, moves)
