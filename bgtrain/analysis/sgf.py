"""GNU Backgammon's ``.sgf`` match files (``save match``), read into the same games as ``.mat`` files.

An SGF file holds one game tree per game, ``(;FF[4]GM[6]...MI[length:5][game:0][ws:0][bs:0]PW[white]PB[black]
RE[W+2]...;W[21xwmk];B[41abae];W[double];B[take]...)``. Read here (GNU's ``sgf.c`` writes them so):

* ``MI``: the match length and the white and black scores before the game; ``PW``/``PB``: the players.
  White is the ``.mat`` file's left player (0), black the right (1);
* a move ``W[21xwmk]``: the dice, then a (from, to) pair of letters per checker step, ``a``..``x`` the
  points 1..24 numbered from white's side, ``y`` the bar and ``z`` off, for both players; black's points
  are turned to its own numbering (25 - p). ``W[53]`` alone: a roll that cannot be played;
* ``double``, ``take``, ``drop`` as the move's value; ``RE[W+4]`` (``R`` after the points: resigned): the
  winner and the points, written as the game's last action.

Anything else (set-up nodes, comments, analysis) is skipped. Games come out as
``bgtrain.matfile.MatGame``s, actions keeping their lines, for ``bgtrain.analysis.games.walk_game``.
"""

from __future__ import annotations

import re

from bgtrain.matfile import DOUBLE, DROP, MOVE, TAKE, WIN, MatAction, MatGame

_PROPERTY = re.compile(r"([A-Z]+)((?:\s*\[(?:\\.|[^\]\\])*\])+)", re.DOTALL)
_VALUE = re.compile(r"\[((?:\\.|[^\]\\])*)\]", re.DOTALL)
_MOVE = re.compile(r"^([1-6])([1-6])((?:[a-z][a-z])*)$")
_RESULT = re.compile(r"^([WB])\+(\d+)")


def _letter_point(letter: str, black: bool) -> int:
    if letter == "y":
        return 25
    if letter == "z":
        return 0
    point = ord(letter) - ord("a") + 1
    if not 1 <= point <= 24:
        raise ValueError(f"{letter!r} is not a point (a..x), the bar (y) or off (z)")
    return 25 - point if black else point


def _games_text(text: str) -> list[tuple[int, str]]:
    """Each top-level game tree ``( ... )`` with the line it starts on (brackets inside values skipped)."""
    games, depth, start, in_value, escaped = [], 0, 0, False, False
    for index, character in enumerate(text):
        if in_value:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == "]":
                in_value = False
        elif character == "[":
            in_value = True
        elif character == "(":
            if depth == 0:
                start = index
            depth += 1
        elif character == ")":
            depth -= 1
            if depth == 0:
                games.append((text.count("\n", 0, start) + 1, text[start : index + 1]))
    return games


def parse_sgf(text: str, path: str = "<text>") -> tuple[int, list[MatGame], list[str]]:
    """(match length, the games that could be read, one error per game that could not)."""
    length, games, errors = None, [], []
    for first_line, tree in _games_text(text):
        try:
            game_length, game = _parse_game(tree, first_line, len(games) + 1)
        except ValueError as error:
            errors.append(f"{path}:{error}")
            continue
        length = game_length if length is None else length
        games.append(game)
    if length is None and not errors:
        errors.append(f"{path}: no game trees: not a GNU Backgammon .sgf file")
    return length or 0, games, errors


def _parse_game(tree: str, first_line: int, number: int) -> tuple[int, MatGame]:
    info: dict[str, list[str]] = {}
    actions: list[MatAction] = []
    cube = 1
    line, counted = first_line, 0
    # Properties in order; a W or B property is one node's action (nodes need no other boundary here).
    for match in _PROPERTY.finditer(tree):
        line += tree.count("\n", counted, match.start())
        counted = match.start()
        name, values = match.group(1), _VALUE.findall(match.group(2))
        if name not in ("W", "B"):
            info.setdefault(name, values)
            continue
        player, value = (0 if name == "W" else 1), values[0].strip()
        where = f"{line}: game {number}"
        if value == "double":
            cube *= 2
            actions.append(MatAction(player, DOUBLE, value=cube, line=line))
        elif value == "take":
            actions.append(MatAction(player, TAKE, line=line))
        elif value == "drop":
            actions.append(MatAction(player, DROP, line=line))
        else:
            move = _MOVE.match(value)
            if not move:
                raise ValueError(f"{where}: {name}[{value[:20]}] is not a roll and play, double, take or drop")
            letters = move.group(3)
            try:
                steps = [f"{_letter_point(letters[i], player == 1)}/{_letter_point(letters[i + 1], player == 1)}"
                         for i in range(0, len(letters), 2)]
            except ValueError as error:
                raise ValueError(f"{where}: {name}[{value}]: {error}") from None
            actions.append(MatAction(player, MOVE, (int(move.group(1)), int(move.group(2))), " ".join(steps),
                                     line=line))
    settings = dict(item.split(":", 1) for item in info.get("MI", []) if ":" in item)
    try:
        length = int(settings.get("length", 0))
        scores = (int(settings.get("ws", 0)), int(settings.get("bs", 0)))
    except ValueError:
        raise ValueError(f"{first_line}: game {number}: MI{info.get('MI')} is not a match length and scores") from None
    names = (info.get("PW", ["white"])[0] or "white", info.get("PB", ["black"])[0] or "black")
    result = _RESULT.match(info.get("RE", [""])[0])
    if result:
        actions.append(MatAction(0 if result.group(1) == "W" else 1, WIN, value=int(result.group(2)), line=first_line))
    game_number = int(settings.get("game", number - 1)) + 1 if settings.get("game", "").isdigit() else number
    return length, MatGame(game_number, names, scores, tuple(actions))
