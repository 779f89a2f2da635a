"""The analysis report as text: per file, a table of both players and the marked decisions; then,
with more than one file, every player over all files. (``--json`` prints the report itself;
``bgtrain.analysis.html`` draws it as a page.)"""

from __future__ import annotations

from bgtrain.analysis.summary import marked


def render_text(report: dict, all_decisions: bool = False) -> str:
    cube_note = "cubeless" if report["cubeless"] else "cubeful"
    title = (f"Analysis at {report['ply']}-ply ({cube_note}; luck: {report['luck']}): "
             f"{report['decisions']} decisions in {len(report['files'])} file(s), {report['seconds']:.1f} s")
    lines = [title, ""]
    for file in report["files"]:
        kind = "money session" if not file["match_length"] else f"{file['match_length']}-point match"
        lines.append(f"{file['path']}: {kind}, {len(file['games'])} game(s)")
        lines.extend(_player_table(file["summary"]))
        for game in file["games"]:
            rows = game["decisions"] if all_decisions else marked(game["decisions"])
            if not rows:
                continue
            lines.append(f"  Game {game['number']} ({game['players'][0]} {game['scores'][0]}, "
                         f"{game['players'][1]} {game['scores'][1]}):")
            lines.extend("    " + decision_line(row, game["players"]) for row in rows)
        lines.append("")
    if len(report["files"]) > 1:
        lines.append("All files, by error rate (thousandths of equity lost per decision):")
        lines.append(f"  {'player':<24} {'decisions':>9} {'error rate':>10} {'PR':>7} {'checker':>8} "
                     f"{'doubtful':>8} {'bad':>5} {'v.bad':>5} {'cube err':>8} {'luck':>8} {'points':>7} {'adjusted':>9}")
        for row in report["players"]:
            lines.append(f"  {row['name']:<24} {row['decisions']:>9} {row['error_rate']:>10.1f} {row['pr']:>7.2f} "
                         f"{row['checker_error_rate']:>8.1f} {row['marks']['doubtful']:>8} {row['marks']['bad']:>5} "
                         f"{row['marks']['very bad']:>5} {row['cube_errors']:>8} {row['luck']:>+8.2f} "
                         f"{row['points']:>+7} {row['luck_adjusted']:>+9.2f}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _player_table(summaries: list[dict]) -> list[str]:
    header = (f"  {'':<24} {'error rate':>10} {'PR':>7} {'checker':>8} {'cube':>7} {'doubtful':>8} {'bad':>5} "
              f"{'v.bad':>5} {'missed':>6} {'w.dbl':>5} {'w.take':>6} {'w.pass':>6} {'luck':>8} {'/roll':>7} "
              f"{'result':>7} {'adjusted':>8}")
    lines = [header]
    for row in summaries:
        checker, cube, overall, luck, result = row["checker"], row["cube"], row["overall"], row["luck"], row["result"]
        luck_text = f"{luck['total']:>+8.2f} {luck['per_roll']:>+7.1f}" if luck else f"{'-':>8} {'-':>7}"
        adjusted = f"{result['luck_adjusted']:>+8.2f}" if result["luck_adjusted"] is not None else f"{'-':>8}"
        lines.append(
            f"  {row['name']:<24} {overall['error_rate']:>10.1f} {overall['pr']:>7.2f} {checker['error_rate']:>8.1f} "
            f"{cube['error_rate']:>7.1f} {checker['marks']['doubtful']:>8} {checker['marks']['bad']:>5} "
            f"{checker['marks']['very bad']:>5} {cube['missed_doubles']:>6} {cube['wrong_doubles']:>5} "
            f"{cube['wrong_takes']:>6} {cube['wrong_passes']:>6} {luck_text} "
            f"{result['points_won'] - result['points_lost']:>+7} {adjusted}")
    return lines


def decision_line(row: dict, players: list[str]) -> str:
    """One decision in a line: where, who, what was done and what was best, with the equities."""
    who = players[row["player"]]
    if row["kind"] == "move":
        text = (f"line {row['line']:>4}  {who}  {row['dice']}: {row['played'] or '(no move)'}"
                f" ({_equity(row['played_equity'])})")
        if row["forced"]:
            return text + "  forced"
        if row["loss"] > 0:
            text += f"; best {row['best']} ({_equity(row['best_equity'])}), loses {row['loss']:.3f}"
        return text + (f"  {row['mark']}" if row["mark"] else "")
    acted = row["action"] + (f", {row['response']}" if row["response"] else "")
    text = (f"line {row['line']:>4}  {who}  cube {row['cube']}: {acted}; proper: {row['proper']} (no double "
            f"{_equity(row['no_double'])}, double/take {_equity(row['double_take'])}, double/pass "
            f"{_equity(row['double_pass'])})")
    for error in row["errors"]:
        cost = row["response_loss"] if error in ("wrong take", "wrong pass") else row["loss"]
        text += f"; {error} {cost:.3f}"
    return text


def _equity(value) -> str:
    return "n/a" if value is None else f"{value:+.3f}"
