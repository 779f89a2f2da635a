"""The analysis of match files as one report (plain data): per decision, per player of each file, and per
player name over all files.

The statistics, as GNU Backgammon and eXtreme Gammon count them:

* **error rate**: equity lost per decision, in thousandths (GNU's mEMG per decision), over the
  unforced checker plays and the counted cube decisions (``bgtrain.analysis.evaluate.CLOSE_CUBE``);
  checker play and cube reported apart as well;
* **PR** (XG's performance rating): 500 times the equity lost per decision, over the same decisions.
  XG's own count leaves out a few more "obvious" decisions, so this PR reads slightly above XG's;
* **marks**: doubtful / bad / very bad plays by GNU's thresholds (``bgtrain.analysis.marks``);
* **cube errors**: missed doubles, wrong doubles, wrong takes, wrong passes;
* **luck**: the luck of each roll times the cube then (points), its total and mean per roll; the
  **luck-adjusted result** is the points won minus the points lost minus (own luck minus the
  opponent's), GNU's "luck adjusted result".
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import torch

from bgtrain.analysis.evaluate import analyse_cube, analyse_turns
from bgtrain.analysis.games import GameRecord, read_match_file
from bgtrain.analysis.marks import DOUBTFUL, MARKS, error_mark
from bgtrain.values.evaluator import Evaluator
from engine.position_id import encode_position_ids


def analyse_files(evaluator: Evaluator, paths: list[str | Path], ply: int = 0, cubeless: bool = False,
                  luck: str = "rolls", jacoby: bool = False) -> dict:
    """Read every file, analyse all their decisions in shared batches, and build the report."""
    started = time.perf_counter()
    files = [read_match_file(path, jacoby) for path in paths]
    turns = [(f, g, turn) for f, match in enumerate(files) for g, game in enumerate(match.games) for turn in game.turns]
    points = [(f, g, point) for f, match in enumerate(files) for g, game in enumerate(match.games)
              for point in game.cube_points]
    if cubeless:
        points = []
    read_seconds = time.perf_counter() - started
    turn_analysis = analyse_turns(evaluator, [turn for _, _, turn in turns], ply, cubeless, luck)
    cube_analysis = analyse_cube(evaluator, [point for _, _, point in points], ply)
    position_ids = encode_position_ids(torch.tensor([turn.board for _, _, turn in turns], dtype=torch.int8)
                                       .reshape(-1, 28)) if turns else []

    # Games with a play that is not legal for its roll are dropped whole, with one error each.
    bad_games: dict[tuple[int, int], str] = {}
    for index, (f, g, turn) in enumerate(turns):
        if not turn_analysis.legal[index] and (f, g) not in bad_games:
            game = files[f].games[g]
            bad_games[(f, g)] = (f"{files[f].path}:{turn.line}: game {game.number}: {turn.dice[0]}{turn.dice[1]}: "
                                 f"{turn.play or '(no move)'!r} is not a legal play of the roll here")
    decisions: dict[tuple[int, int], list[dict]] = {}
    for index, (f, g, turn) in enumerate(turns):
        if (f, g) in bad_games:
            continue
        decisions.setdefault((f, g), []).append(_move_row(turn, turn_analysis, index, position_ids[index]))
    for index, (f, g, point) in enumerate(points):
        if (f, g) in bad_games:
            continue
        decisions.setdefault((f, g), []).append(_cube_row(point, cube_analysis, index))
    for rows in decisions.values():
        rows.sort(key=lambda row: (row["line"], row["player"], row["kind"] == "move"))

    report_files, errors = [], []
    for f, match in enumerate(files):
        errors.extend(match.errors)
        errors.extend(message for (file_index, _), message in sorted(bad_games.items()) if file_index == f)
        games = [_game_row(game, decisions.get((f, g), [])) for g, game in enumerate(match.games)
                 if (f, g) not in bad_games]
        if not games:
            continue
        names = games[0]["players"]
        report_files.append({
            "path": match.path, "match_length": match.length, "players": names, "games": games,
            "summary": [_player_summary(names[player], player, games) for player in (0, 1)],
        })
    analysed = sum(len(rows) for rows in decisions.values())
    seconds = time.perf_counter() - started
    return {
        "ply": ply, "cubeless": cubeless, "luck": luck,
        "files": report_files,
        "players": _by_name(report_files),
        "errors": errors,
        "decisions": analysed,
        "seconds": round(seconds, 3),
        "read_seconds": round(read_seconds, 3),
    }


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else round(value, 6)


def _move_row(turn, analysis, index: int, position_id: str) -> dict:
    forced = int(analysis.choices[index]) <= 1
    loss = 0.0 if forced else float(analysis.loss[index])
    return {
        "kind": "move", "player": turn.player, "line": turn.line, "position_id": position_id,
        "board": list(turn.board), "cube": turn.cube.value,
        "dice": f"{turn.dice[0]}{turn.dice[1]}", "played": turn.play, "played_equity": _number(analysis.played[index]),
        "best": analysis.best_play[index], "best_equity": _number(analysis.best[index]),
        "best_board": [int(v) for v in analysis.best_board[index]],
        "loss": round(loss, 6), "mark": "" if forced else error_mark(loss), "forced": forced,
        "choices": int(analysis.choices[index]), "luck": _number(analysis.luck[index]),
        "rolled_equity": _number(analysis.rolled[index]),
    }


def _cube_row(point, analysis, index: int) -> dict:
    loss = float(analysis.double_loss[index])
    response_loss = float(analysis.response_loss[index])
    return {
        "kind": "cube", "player": point.player, "line": point.line, "board": list(point.board),
        "cube": point.cube.value, "owner": point.cube.owner,
        "action": "double" if point.doubled else "no double", "response": point.response,
        "proper": analysis.action[index], "no_double": _number(analysis.no_double[index]),
        "double_take": _number(analysis.double_take[index]), "double_pass": _number(analysis.double_pass[index]),
        "loss": round(loss, 6), "response_loss": round(response_loss, 6),
        "errors": analysis.errors[index], "mark": error_mark(max(loss, response_loss)),
        "counted": bool(analysis.counted[index]),
    }


def _game_row(game: GameRecord, rows: list[dict]) -> dict:
    return {
        "number": game.number, "line": game.line, "players": list(game.players), "scores": list(game.scores),
        "crawford": game.crawford, "winner": game.winner, "points": game.points, "resigned": game.resigned,
        "decisions": rows,
    }


def _player_summary(name: str, player: int, games: list[dict]) -> dict:
    """One player's statistics over ``games`` (rows of ``_game_row``): see the module docstring."""
    checker_loss = cube_loss = 0.0
    checker_count = cube_count = 0
    marks = dict.fromkeys(MARKS, 0)
    cube_errors = {"missed double": 0, "wrong double": 0, "wrong take": 0, "wrong pass": 0}
    luck_total = opponent_luck = 0.0
    rolls = 0
    won = lost = 0
    for game in games:
        if game["winner"] == player:
            won += game["points"]
        elif game["winner"] == 1 - player:
            lost += game["points"]
        for row in game["decisions"]:
            mine = row["player"] == player
            if row["kind"] == "move":
                if row["luck"] is not None:
                    if mine:
                        luck_total += row["luck"] * row["cube"]
                        rolls += 1
                    else:
                        opponent_luck += row["luck"] * row["cube"]
                if mine and not row["forced"]:
                    checker_count += 1
                    checker_loss += row["loss"]
                    if row["mark"]:
                        marks[row["mark"]] += 1
                continue
            # A cube point: the doubling side's decision, and the doubled side's answer.
            if mine and row["counted"]:
                cube_count += 1
                cube_loss += row["loss"]
            if not mine and row["action"] == "double":
                cube_count += 1
                cube_loss += row["response_loss"]
            for error in row["errors"]:
                if (error in ("missed double", "wrong double")) == mine:
                    cube_errors[error] += 1
    decisions = checker_count + cube_count
    total = checker_loss + cube_loss

    def rate(loss: float, count: int) -> float:
        return round(1000.0 * loss / count, 3) if count else 0.0

    luck_known = any(row["kind"] == "move" and row["luck"] is not None for game in games for row in game["decisions"])
    return {
        "name": name,
        "checker": {"decisions": checker_count, "total_loss": round(checker_loss, 6),
                    "error_rate": rate(checker_loss, checker_count), "marks": marks},
        "cube": {"decisions": cube_count, "total_loss": round(cube_loss, 6), "error_rate": rate(cube_loss, cube_count),
                 "missed_doubles": cube_errors["missed double"], "wrong_doubles": cube_errors["wrong double"],
                 "wrong_takes": cube_errors["wrong take"], "wrong_passes": cube_errors["wrong pass"]},
        "overall": {"decisions": decisions, "total_loss": round(total, 6), "error_rate": rate(total, decisions),
                    "pr": round(500.0 * total / decisions, 3) if decisions else 0.0},
        "luck": ({"rolls": rolls, "total": round(luck_total, 4),
                  "per_roll": round(1000.0 * luck_total / rolls, 3) if rolls else 0.0} if luck_known else None),
        "result": {"games": len(games), "points_won": won, "points_lost": lost,
                   "luck_adjusted": (round(won - lost - (luck_total - opponent_luck), 4) if luck_known else None)},
    }


def _by_name(files: list[dict]) -> list[dict]:
    """Every player name over all files: decisions, losses and luck added up, rates recomputed."""
    totals: dict[str, dict] = {}
    for report in files:
        for summary in report["summary"]:
            total = totals.setdefault(summary["name"], {"name": summary["name"], "files": 0, "decisions": 0,
                                                        "checker_decisions": 0, "total_loss": 0.0,
                                                        "checker_loss": 0.0, "marks": dict.fromkeys(MARKS, 0),
                                                        "cube_errors": 0, "luck": 0.0, "points": 0,
                                                        "luck_adjusted": 0.0})
            total["files"] += 1
            total["decisions"] += summary["overall"]["decisions"]
            total["total_loss"] += summary["overall"]["total_loss"]
            total["checker_decisions"] += summary["checker"]["decisions"]
            total["checker_loss"] += summary["checker"]["total_loss"]
            for mark, count in summary["checker"]["marks"].items():
                total["marks"][mark] += count
            cube = summary["cube"]
            total["cube_errors"] += cube["missed_doubles"] + cube["wrong_doubles"] + cube["wrong_takes"] + cube["wrong_passes"]
            total["luck"] += (summary["luck"] or {}).get("total", 0.0)
            total["points"] += summary["result"]["points_won"] - summary["result"]["points_lost"]
            total["luck_adjusted"] += summary["result"]["luck_adjusted"] or 0.0
    rows = []
    for total in totals.values():
        decisions = total["decisions"]
        total["error_rate"] = round(1000.0 * total["total_loss"] / decisions, 3) if decisions else 0.0
        total["checker_error_rate"] = (round(1000.0 * total["checker_loss"] / total["checker_decisions"], 3)
                                       if total["checker_decisions"] else 0.0)
        total["pr"] = round(500.0 * total["total_loss"] / decisions, 3) if decisions else 0.0
        for key in ("total_loss", "checker_loss", "luck", "luck_adjusted"):
            total[key] = round(total[key], 4)
        rows.append(total)
    return sorted(rows, key=lambda row: row["error_rate"])


def marked(decisions: list[dict]) -> list[dict]:
    """The decisions worth a look: a mark (doubtful or worse) or a cube error."""
    return [row for row in decisions if row["mark"] or (row["kind"] == "cube" and row["errors"])
            or row["loss"] >= DOUBTFUL]

