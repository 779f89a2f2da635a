"""The analysis report as one self-contained HTML page: per file the players' table, per game an equity
graph (the left player's equity after every play, marked errors in red) and the board at every marked
decision, drawn in inline SVG from the side to move (no script, no external file)."""

from __future__ import annotations

import html

from bgtrain.analysis.report import decision_line
from bgtrain.analysis.summary import marked

POINT_WIDTH, HEIGHT, BAR = 24, 220, 24
CHECKER = 22
MOVER_COLOUR, OPPONENT_COLOUR = "#f4f1e8", "#2b2b2b"
STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.decision { display: inline-block; vertical-align: top; margin: 0 1em 1em 0; max-width: 420px; font-size: 13px; }
.very.bad, .bad { color: #b00; } .doubtful { color: #b60; }
.errors { color: #b00; }
"""


def render_html(report: dict) -> str:
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>bgtrain analysis</title>",
             f"<style>{STYLE}</style></head><body>",
             f"<h1>Analysis at {report['ply']}-ply</h1>",
             (f"<p>{report['decisions']} decisions in {len(report['files'])} file(s); "
              f"{'cubeless' if report['cubeless'] else 'cubeful'} equities, luck: {html.escape(report['luck'])}. "
              "Error rate: thousandths of equity lost per decision (GNU Backgammon); PR: XG's scale.</p>")]
    if report["errors"]:
        parts.append("<ul class='errors'>" + "".join(f"<li>{html.escape(error)}</li>" for error in report["errors"])
                     + "</ul>")
    for file in report["files"]:
        parts.append(f"<h2>{html.escape(file['path'])}</h2>")
        parts.append(_summary_table(file["summary"]))
        for game in file["games"]:
            players = game["players"]
            parts.append(f"<h3>Game {game['number']}: {html.escape(players[0])} {game['scores'][0]}, "
                         f"{html.escape(players[1])} {game['scores'][1]}</h3>")
            parts.append(equity_graph(game))
            for row in marked(game["decisions"]):
                mark = row["mark"] or ("bad" if row.get("errors") else "")
                parts.append(f"<div class='decision'>{board_svg(row['board'], row.get('dice'))}"
                             f"<div class='{html.escape(mark)}'>{html.escape(decision_line(row, players))}</div></div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _summary_table(summaries: list[dict]) -> str:
    header = ("<tr><th>player</th><th>error rate</th><th>PR</th><th>checker</th><th>cube</th><th>doubtful</th>"
              "<th>bad</th><th>very bad</th><th>missed doubles</th><th>wrong doubles</th><th>wrong takes</th>"
              "<th>wrong passes</th><th>luck</th><th>result</th><th>luck-adjusted</th></tr>")
    rows = []
    for row in summaries:
        checker, cube, overall = row["checker"], row["cube"], row["overall"]
        luck = f"{row['luck']['total']:+.2f}" if row["luck"] else "-"
        result = row["result"]
        adjusted = f"{result['luck_adjusted']:+.2f}" if result["luck_adjusted"] is not None else "-"
        cells = [html.escape(row["name"]), f"{overall['error_rate']:.1f}", f"{overall['pr']:.2f}",
                 f"{checker['error_rate']:.1f}", f"{cube['error_rate']:.1f}", checker["marks"]["doubtful"],
                 checker["marks"]["bad"], checker["marks"]["very bad"], cube["missed_doubles"], cube["wrong_doubles"],
                 cube["wrong_takes"], cube["wrong_passes"], luck, f"{result['points_won'] - result['points_lost']:+d}",
                 adjusted]
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    return "<table>" + header + "".join(rows) + "</table>"


def equity_graph(game: dict, width: int = 640, height: int = 160) -> str:
    """The left player's equity after each play (cubeful or cubeless as analysed), -1.5 .. +1.5 clipped."""
    moves = [row for row in game["decisions"] if row["kind"] == "move" and row["played_equity"] is not None]
    if not moves:
        return ""
    step = width / max(len(moves) - 1, 1)

    def y(equity: float) -> float:
        return height / 2 - max(-1.5, min(1.5, equity)) / 1.5 * (height / 2 - 4)

    points, dots = [], []
    for index, row in enumerate(moves):
        equity = row["played_equity"] if row["player"] == 0 else -row["played_equity"]
        x, yy = index * step, y(equity)
        points.append(f"{x:.1f},{yy:.1f}")
        if row["mark"]:
            dots.append(f"<circle cx='{x:.1f}' cy='{yy:.1f}' r='3.5' fill='#c00'><title>line {row['line']}: "
                        f"{html.escape(row['mark'])}, loses {row['loss']:.3f}</title></circle>")
    return (f"<svg width='{width}' height='{height}' viewBox='-4 0 {width + 8} {height}' role='img' "
            f"aria-label='equity graph'><rect x='-4' width='{width + 8}' height='{height}' fill='#fafafa'/>"
            f"<line x1='0' x2='{width}' y1='{height / 2}' y2='{height / 2}' stroke='#bbb'/>"
            f"<polyline fill='none' stroke='#246' stroke-width='1.5' points='{' '.join(points)}'/>"
            + "".join(dots) + "</svg>")


def board_svg(board: list[int], dice: str | None = None) -> str:
    """A board (28 ints, from the side to move) in SVG: the mover's checkers light, at the bottom, moving
    from the top right (24) round to the bottom right (1)."""
    width = 12 * POINT_WIDTH + BAR
    shapes = [f"<svg width='{width}' height='{HEIGHT}' viewBox='0 0 {width} {HEIGHT}' role='img' aria-label='board'>",
              f"<rect width='{width}' height='{HEIGHT}' fill='#c9a66b'/>",
              f"<rect x='{6 * POINT_WIDTH}' width='{BAR}' height='{HEIGHT}' fill='#7a5230'/>"]
    for point in range(1, 25):
        x, top = _point_x(point)
        tip = HEIGHT * 0.4
        colour = "#8b3a2a" if point % 2 else "#e8d9b5"
        if top:
            shape = f"{x},0 {x + POINT_WIDTH},0 {x + POINT_WIDTH / 2},{tip}"
        else:
            shape = f"{x},{HEIGHT} {x + POINT_WIDTH},{HEIGHT} {x + POINT_WIDTH / 2},{HEIGHT - tip}"
        shapes.append(f"<polygon points='{shape}' fill='{colour}'/>")
        count = board[point]
        if count:
            shapes.extend(_stack(x + POINT_WIDTH / 2, top, abs(count), count > 0))
    bar_x = 6 * POINT_WIDTH + BAR / 2
    if board[25] > 0:  # the mover's bar: drawn in the top half, where its checkers enter from
        shapes.extend(_stack(bar_x, True, board[25], True, offset=HEIGHT * 0.25))
    if board[0] < 0:
        shapes.extend(_stack(bar_x, False, -board[0], False, offset=HEIGHT * 0.25))
    if dice:
        shapes.append(f"<text x='{9 * POINT_WIDTH + BAR}' y='{HEIGHT / 2 + 5}' font-size='14' text-anchor='middle' "
                      f"fill='#222'>{html.escape(dice)}</text>")
    shapes.append("</svg>")
    return "".join(shapes)


def _point_x(point: int) -> tuple[float, bool]:
    """The left edge of a point and whether it is in the top half (13..24 top, left to right)."""
    if point >= 13:
        column = point - 13
        top = True
    else:
        column = 12 - point
        top = False
    x = column * POINT_WIDTH + (BAR if column >= 6 else 0)
    return x, top


def _stack(center_x: float, top: bool, count: int, mover: bool, offset: float = 0.0) -> list[str]:
    colour = MOVER_COLOUR if mover else OPPONENT_COLOUR
    text_colour = OPPONENT_COLOUR if mover else MOVER_COLOUR
    shapes = []
    for index in range(min(count, 5)):
        distance = offset + CHECKER / 2 + index * CHECKER
        y = distance if top else HEIGHT - distance
        shapes.append(f"<circle cx='{center_x}' cy='{y}' r='{CHECKER / 2 - 1}' fill='{colour}' stroke='#555'/>")
    if count > 5:
        distance = offset + CHECKER / 2 + 4 * CHECKER
        y = distance if top else HEIGHT - distance
        shapes.append(f"<text x='{center_x}' y='{y + 4}' font-size='11' text-anchor='middle' "
                      f"fill='{text_colour}'>{count}</text>")
    return shapes
