"""A round robin between agents: every pair plays a seat-swapped match (``bgtrain.arena.duel``), then a
rating per agent is fitted to the pairwise points per game, and the whole is written as JSON and a plot.

Rating method (``fit_ratings``): weighted least squares on the points-per-game scale. Each agent gets
a rating ``r`` such that ``r_i - r_j`` predicts ``i``'s points per game against ``j``; the ratings
minimise ``sum over pairs of w_ij (ppg_ij - (r_i - r_j))^2`` with ``w_ij = 1 / sigma_ij^2`` (``sigma``
the standard error of the pair's result, from its 95% interval) and sum to zero, so a rating reads
as "points per game against the league average". With two agents it is half the match result each
way. Each rating's 95% interval comes from the covariance ``(X' W X)^+`` of the fit. Points per game
are not exactly transitive (rock-paper-scissors agents exist), so the matrix is shown beside it.

Every pair plays on the same dice seed: the dice sequences are common to all pairings, which makes
the comparison of two agents' results against a third sharper.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bgtrain.arena.agents import Agent
from bgtrain.arena.duel import DuelResult, play_duel
from engine.rules import STANDARD, Rules

METHOD = (
    "weighted least squares on points per game: r_i - r_j predicts i's points per game against j, "
    "weights 1/se^2 from each match's paired interval, ratings sum to zero (points per game against "
    "the league average); intervals are 95% from the fit's covariance"
)
MIN_STANDARD_ERROR = 1e-3  # a match with no spread (deterministic agents, identical pairs) is not infinitely sure


@dataclass(frozen=True)
class LeagueResult:
    names: tuple[str, ...]
    matches: tuple[DuelResult, ...]
    ratings: tuple[float, ...]
    rating_intervals95: tuple[float, ...]
    games_per_pair: int
    seed: int

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(points per game of row against column, its 95% half-width), NaN on the diagonal."""
        count = len(self.names)
        ppg = np.full((count, count), np.nan)
        interval = np.full((count, count), np.nan)
        index = {name: i for i, name in enumerate(self.names)}
        for match in self.matches:
            i, j = index[match.agent_a], index[match.agent_b]
            ppg[i, j], ppg[j, i] = match.points_per_game, -match.points_per_game
            interval[i, j] = interval[j, i] = match.interval95
        return ppg, interval

    def order(self) -> list[int]:
        """Agent indices from the highest rating down."""
        return sorted(range(len(self.names)), key=lambda i: -self.ratings[i])

    def as_dict(self) -> dict:
        ppg, interval = self.matrix()
        order = self.order()

        def clean(value: float) -> float | None:
            return None if math.isnan(value) else round(float(value), 6)

        return {
            "method": METHOD,
            "games_per_pair": self.games_per_pair,
            "seed": self.seed,
            "agents": [self.names[i] for i in order],
            "ratings": {
                self.names[i]: {"rating": round(self.ratings[i], 6), "interval95": round(self.rating_intervals95[i], 6)}
                for i in order
            },
            "points_per_game": [[clean(ppg[i, j]) for j in order] for i in order],
            "interval95": [[clean(interval[i, j]) for j in order] for i in order],
            "matches": [match.as_dict() for match in self.matches],
        }


def fit_ratings(names: list[str] | tuple[str, ...], matches: list[DuelResult]) -> tuple[list[float], list[float]]:
    """(ratings, their 95% half-widths) by the weighted least squares of the module docstring."""
    count = len(names)
    index = {name: i for i, name in enumerate(names)}
    if count == 1:
        return [0.0], [0.0]
    rows, targets, weights = [], [], []
    for match in matches:
        row = np.zeros(count)
        row[index[match.agent_a]], row[index[match.agent_b]] = 1.0, -1.0
        standard_error = match.interval95 / 1.96 if math.isfinite(match.interval95) else 1.0
        rows.append(row)
        targets.append(match.points_per_game)
        weights.append(1.0 / max(standard_error, MIN_STANDARD_ERROR) ** 2)
    design, target, weight = np.array(rows), np.array(targets), np.array(weights)
    normal = design.T @ (weight[:, None] * design)
    # The sum-to-zero constraint fixes the free offset: the minimum-norm solution of the normal
    # equations has it, since the offset direction (all ones) is their null space when every agent
    # is connected.
    covariance = np.linalg.pinv(normal)
    ratings = covariance @ (design.T @ (weight * target))
    ratings -= ratings.mean()
    intervals = 1.96 * np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    return [float(r) for r in ratings], [float(h) for h in intervals]


def play_league(agents: list[Agent], games: int, seed: int = 0, rules: Rules = STANDARD,
                device: torch.device | str = "cpu", batch_pairs: int = 16384, progress=None) -> LeagueResult:
    """Every pair of ``agents`` plays ``games`` seat-swapped games on the dice of ``seed``.
    ``progress(match_result)`` is called after each match."""
    names = [agent.name for agent in agents]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"agent {duplicates[0]!r} is named twice: a league needs different agents")
    if len(agents) < 2:
        raise ValueError("a league needs at least two agents")
    matches = []
    for i in range(len(agents)):
        for j in range(i + 1, len(agents)):
            result = play_duel(agents[i], agents[j], games, seed, rules, device, batch_pairs)
            matches.append(result)
            if progress is not None:
                progress(result)
    ratings, intervals = fit_ratings(names, matches)
    return LeagueResult(tuple(names), tuple(matches), tuple(ratings), tuple(intervals),
                        matches[0].games, seed)


def format_table(league: LeagueResult) -> str:
    """The ppg matrix (row agent's points per game against the column agent) and the ratings."""
    ppg, interval = league.matrix()
    order = league.order()
    labels = [f"{rank}. {league.names[i]}" for rank, i in enumerate(order, 1)]
    width = max(len(label) for label in labels)
    cell = 15
    header = " " * (width + 2) + "".join(f"{str(rank) + '.':>{cell}}" for rank in range(1, len(order) + 1))
    title = (f"points per game of the row agent against the column agent (± 95%), "
             f"{league.games_per_pair:,} games per pair")
    lines = [title, header]
    for label, i in zip(labels, order):
        cells = []
        for j in order:
            cells.append(f"{'—':>{cell}}" if i == j else f"{f'{ppg[i, j]:+.3f}±{interval[i, j]:.3f}':>{cell}}")
        lines.append(f"{label:<{width}}  " + "".join(cells))
    lines.append("")
    lines.append("rating (points per game against the league average, ± 95%):")
    for label, i in zip(labels, order):
        lines.append(f"  {label:<{width}}  {league.ratings[i]:+.3f} ± {league.rating_intervals95[i]:.3f}")
    return "\n".join(lines)


def write_json(league: LeagueResult, path: str | Path) -> Path:
    from bgtrain.files import atomic_write

    return atomic_write(path, json.dumps(league.as_dict(), indent=2) + "\n")


# --- plots ------------------------------------------------------------------------------------------


def write_plot(league: LeagueResult, directory: str | Path, stem: str = "league") -> Path:
    """``stem.png`` with matplotlib when it is installed, else ``stem.svg`` drawn by hand: a heat map
    of the points-per-game matrix (rows against columns, best agent first) beside the ratings."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib
    except ImportError:
        return write_svg(league, directory / f"{stem}.svg")
    matplotlib.use("Agg")
    return _write_png(league, directory / f"{stem}.png")


def _limit(ppg: np.ndarray) -> float:
    finite = np.abs(ppg[np.isfinite(ppg)])
    return max(float(finite.max()) if finite.size else 0.0, 0.1)


def _write_png(league: LeagueResult, path: Path) -> Path:
    import matplotlib.pyplot as plt

    ppg, interval = league.matrix()
    order = league.order()
    names = [league.names[i] for i in order]
    matrix = ppg[np.ix_(order, order)]
    half = interval[np.ix_(order, order)]
    count = len(order)
    limit = _limit(matrix)
    size = max(3.0, 1.1 * count + 1.5)
    figure, (heat, bars) = plt.subplots(1, 2, figsize=(2 * size + 1.5, size),
                                        gridspec_kw={"width_ratios": [1.15, 1.0]})
    image = heat.imshow(matrix, cmap="RdBu", vmin=-limit, vmax=limit)
    heat.set_xticks(range(count), [f"{k + 1}" for k in range(count)])
    heat.set_yticks(range(count), [f"{k + 1}. {name}" for k, name in enumerate(names)])
    heat.set_xlabel("opponent (rank)")
    heat.set_title(f"points per game, row vs column\n({league.games_per_pair:,} games per pair, ±95%)")
    for r in range(count):
        for c in range(count):
            if r == c:
                heat.text(c, r, "—", ha="center", va="center", color="grey")
                continue
            value = matrix[r, c]
            color = "white" if abs(value) > 0.6 * limit else "black"
            heat.text(c, r, f"{value:+.2f}\n±{half[r, c]:.2f}", ha="center", va="center", fontsize=9, color=color)
    figure.colorbar(image, ax=heat, fraction=0.046, pad=0.04)
    ratings = [league.ratings[i] for i in order]
    errors = [league.rating_intervals95[i] for i in order]
    colors = ["#2166ac" if value >= 0 else "#b2182b" for value in ratings]
    positions = list(range(count))
    bars.barh(positions, ratings, xerr=errors, color=colors, capsize=4)
    bars.set_yticks(positions, [f"{k + 1}. {name}" for k, name in enumerate(names)])
    bars.invert_yaxis()
    bars.axvline(0.0, color="black", linewidth=0.8)
    for position, value, error in zip(positions, ratings, errors):
        end = value + error if value >= 0 else value - error
        bars.text(end, position, f"  {value:+.2f}  ", va="center", ha="left" if value >= 0 else "right", fontsize=9)
    bars.set_xlabel("points per game against\nthe league average (±95%)")
    bars.set_title("ratings")
    span = max(abs(r) + e for r, e in zip(ratings, errors)) * 1.35 + 0.05
    bars.set_xlim(-span, span)
    figure.tight_layout()
    from bgtrain.files import atomic_write

    atomic_write(path, lambda handle: figure.savefig(handle, dpi=110, format=Path(path).suffix.lstrip(".") or "png"))
    plt.close(figure)
    return path


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _color(value: float, limit: float) -> str:
    """Blue for the row agent winning, red for losing, white at zero (a diverging scale)."""
    t = max(-1.0, min(1.0, value / limit))
    blue, red, white = (33, 102, 172), (178, 24, 43), (247, 247, 247)
    end = blue if t > 0 else red
    mix = [round(w + (e - w) * abs(t)) for w, e in zip(white, end)]
    return "#{:02x}{:02x}{:02x}".format(*mix)


def write_svg(league: LeagueResult, path: str | Path) -> Path:
    """The same picture as the PNG, as an SVG written without plotting libraries."""
    path = Path(path)
    ppg, interval = league.matrix()
    order = league.order()
    names = [league.names[i] for i in order]
    count = len(order)
    limit = _limit(ppg)
    cell, label_width, top = 78, 12 + 7 * max(len(f"{k + 1}. {n}") for k, n in enumerate(names)), 70
    heat_width = label_width + count * cell
    bar_left = heat_width + 60 + label_width
    bar_width = 320
    height = top + count * cell + 60
    width = bar_left + bar_width + 40
    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="sans-serif" font-size="13">'),
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{label_width}" y="22" font-size="15" font-weight="bold">points per game, row vs column</text>',
        (f'<text x="{label_width}" y="40" fill="#444">{league.games_per_pair:,} games per pair, ±95%; '
         f'blue: row agent wins</text>'),
    ]
    for k, name in enumerate(names):
        y = top + k * cell + cell / 2 + 5
        parts.append(f'<text x="{label_width - 8}" y="{y}" text-anchor="end">{_escape(f"{k + 1}. {name}")}</text>')
        parts.append(f'<text x="{label_width + k * cell + cell / 2}" y="{top - 8}" text-anchor="middle">{k + 1}</text>')
    for r, i in enumerate(order):
        for c, j in enumerate(order):
            x, y = label_width + c * cell, top + r * cell
            if i == j:
                parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#dddddd" stroke="white"/>')
                continue
            value = ppg[i, j]
            fill = _color(value, limit)
            ink = "white" if abs(value) > 0.6 * limit else "black"
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="white"/>')
            parts.append(f'<text x="{x + cell / 2}" y="{y + cell / 2 - 2}" text-anchor="middle" fill="{ink}" '
                         f'font-size="14">{value:+.2f}</text>')
            parts.append(f'<text x="{x + cell / 2}" y="{y + cell / 2 + 15}" text-anchor="middle" fill="{ink}" '
                         f'font-size="11">±{interval[i, j]:.2f}</text>')
    ratings = [league.ratings[i] for i in order]
    errors = [league.rating_intervals95[i] for i in order]
    span = max(abs(r) + e for r, e in zip(ratings, errors)) * 1.35 + 0.05
    zero = bar_left + bar_width / 2
    scale = (bar_width / 2) / span
    parts.append(f'<text x="{bar_left}" y="22" font-size="15" font-weight="bold">ratings</text>')
    parts.append(f'<text x="{bar_left}" y="40" fill="#444">points per game against the league average, ±95%</text>')
    parts.append(f'<line x1="{zero}" y1="{top - 4}" x2="{zero}" y2="{top + count * cell}" stroke="black"/>')
    for k, (name, value, error) in enumerate(zip(names, ratings, errors)):
        y = top + k * cell + cell * 0.25
        x0, x1 = sorted((zero, zero + value * scale))
        fill = "#2166ac" if value >= 0 else "#b2182b"
        parts.append(f'<text x="{bar_left - 8}" y="{y + cell * 0.25 + 5}" text-anchor="end">'
                     f'{_escape(f"{k + 1}. {name}")}</text>')
        parts.append(f'<rect x="{x0}" y="{y}" width="{max(x1 - x0, 1)}" height="{cell * 0.5}" fill="{fill}"/>')
        ey = y + cell * 0.25
        left, right = zero + (value - error) * scale, zero + (value + error) * scale
        parts.append(f'<line x1="{left}" y1="{ey}" x2="{right}" y2="{ey}" stroke="black"/>')
        parts.append(f'<line x1="{left}" y1="{ey - 6}" x2="{left}" y2="{ey + 6}" stroke="black"/>')
        parts.append(f'<line x1="{right}" y1="{ey - 6}" x2="{right}" y2="{ey + 6}" stroke="black"/>')
        anchor = "start" if value >= 0 else "end"
        parts.append(f'<text x="{max(right, x1) + 8 if value >= 0 else min(left, x0) - 8}" y="{ey + 5}" '
                     f'text-anchor="{anchor}">{value:+.2f}</text>')
    parts.append("</svg>")
    from bgtrain.files import atomic_write

    return atomic_write(path, "\n".join(parts) + "\n")
