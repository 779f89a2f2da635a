"""Measure how often bgtrain.cube agrees with GNU Backgammon's 0-ply cube analysis.

Needs the optional dependency ``gnubg`` (PyPI package "gnubg": GNU Backgammon built as a Python module;
not "gnubg-nn", which has no cubeful analysis of given probabilities).

For random reachable positions (``engine.random_play.sample_positions``) and a set of cube states and
match scores, GNU Backgammon is given the position (position ID + match ID) and asked for its 0-ply cube
hint; its 0-ply cubeless probabilities for the same position (``gnubg.evaluate``) go to
``bgtrain.cube.cube_decision`` with the cube efficiency of our own position classifier. Compared:

* the proper cube action, as text ("Double, take", "Too good to redouble, pass", ...), and whether GNU
  refuses the double ("You cannot double.") exactly where bgtrain says the cube is not available;
* the cubeful equities of no double, double/take and double/pass (EMG, normalised to the cube), which
  GNU prints with 6 decimals;
* for one match score, the same equities as match winning chances;
* the match equity table GNU Backgammon loaded against ours.

Positions whose small two-sided bear-offs GNU evaluates with exact cubeful databases (its classes
BEAROFF2 and BEAROFF_TS) are counted but left out of the comparison: bgtrain uses Janowski's formula
there (a deliberate difference, see docs/cube.md).

    python scripts/compare_cube_gnubg.py --positions 2000 --seed 1
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass

import torch

from bgtrain.cube import (
    DEFAULT_EFFICIENCY,
    CubeAction,
    CubeState,
    MatchGame,
    MoneyGame,
    PositionKind,
    action_label,
    cube_decision,
    match_id_owner,
)
from bgtrain.cube.met import default_met
from engine.board import pip_counts
from engine.match_id import MatchState, encode_match_id
from engine.position_id import encode_position_id
from engine.position_kinds import position_kinds
from engine.random_play import sample_positions

# gnubg positionclass (eval.h): OVER, HYPERGAMMON1-3, BEAROFF2, BEAROFF_TS, BEAROFF1, BEAROFF_OS, RACE,
# CRASHED, CONTACT.
GNUBG_KIND = {0: PositionKind.OVER, 6: PositionKind.BEAROFF, 7: PositionKind.BEAROFF, 8: PositionKind.RACE}
GNUBG_KIND |= {
    9: PositionKind.CRASHED,
    10: PositionKind.CONTACT,
    4: PositionKind.BEAROFF,
    5: PositionKind.BEAROFF,
}
GNUBG_EXACT_BEAROFF = (4, 5)
EQUITY_TOLERANCE = 5e-5  # GNU prints 6 decimals and computes in float32

OPTION = re.compile(
    r"^\s*\d\.\s+(No double|No redouble|Double, pass|Double, take|Redouble, pass|Redouble, take)"
    r"\s+([+-]?\d+\.\d+)(%?)",
    re.MULTILINE,
)
PROPER = re.compile(r"^Proper cube action: (.*?)(?: \(\d+(?:\.\d+)?%\))?\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Scenario:
    name: str
    cube: CubeState
    game: MoneyGame | MatchGame
    beavers: int = 0  # GNU's "set beavers N"
    mwc: bool = False  # also compare match winning chances


def scenarios() -> list[Scenario]:
    money = [
        Scenario("money, Jacoby, centred", CubeState(), MoneyGame(jacoby=True)),
        Scenario("money, no Jacoby, centred", CubeState(), MoneyGame(jacoby=False)),
        Scenario(
            "money, Jacoby, beavers, centred", CubeState(), MoneyGame(jacoby=True, beavers=True), beavers=3
        ),
        Scenario("money, mover owns 2", CubeState(2, "mover"), MoneyGame(jacoby=True)),
        Scenario("money, no Jacoby, mover owns 4", CubeState(4, "mover"), MoneyGame(jacoby=False)),
        Scenario("money, opponent owns 2", CubeState(2, "opponent"), MoneyGame(jacoby=True)),
    ]
    match = [
        ("7pt 0-0", 7, (0, 0), False, CubeState(), True),
        ("7pt mover 2, opponent 4", 7, (2, 4), False, CubeState(), False),
        ("7pt mover 4, opponent 2", 7, (4, 2), False, CubeState(), False),
        ("7pt 5-5 (2-away, 2-away)", 7, (5, 5), False, CubeState(), False),
        ("7pt 4-4, mover owns 2", 7, (4, 4), False, CubeState(2, "mover"), False),
        ("7pt 3-3, opponent owns 2", 7, (3, 3), False, CubeState(2, "opponent"), False),
        ("7pt 3-6 post-Crawford, mover trails", 7, (3, 6), False, CubeState(), False),
        ("7pt 6-2 post-Crawford, mover leads", 7, (6, 2), False, CubeState(), False),
        ("7pt 2-6 Crawford game", 7, (2, 6), True, CubeState(), False),
        ("5pt 2-3", 5, (2, 3), False, CubeState(), False),
        ("3pt 0-0", 3, (0, 0), False, CubeState(), False),
        ("11pt 3-7", 11, (3, 7), False, CubeState(), False),
        ("11pt 8-8, mover owns 2", 11, (8, 8), False, CubeState(2, "mover"), False),
    ]
    return money + [
        Scenario(f"match {name}", cube, MatchGame(length, score, crawford), mwc=mwc)
        for name, length, score, crawford, cube, mwc in match
    ]


class Gnubg:
    """GNU Backgammon's command interface, with its standard output captured."""

    def __init__(self):
        import gnubg

        self.gnubg = gnubg
        self.libc = ctypes.CDLL(None)
        # Threads: gnubg's hint hangs with worker threads in the library build.
        for command in (
            "set threads 1",
            "set evaluation cubedecision evaluation plies 0",
            "set evaluation cubedecision evaluation prune off",
            "set output digits 6",
            "set output mwc off",
            "new session",
        ):
            self.run(command)

    def run(self, command: str) -> str:
        """Run a gnubg command; what it writes to standard output or error comes back as text."""
        sys.stdout.flush()
        sys.stderr.flush()
        handle, path = tempfile.mkstemp()
        saved = os.dup(1), os.dup(2)
        os.dup2(handle, 1)
        os.dup2(handle, 2)
        try:
            self.gnubg.command(command)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            self.libc.fflush(None)  # gnubg writes through C's buffered streams
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            os.close(handle)
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read()
        os.unlink(path)
        return text

    def hint(self, position_id: str, scenario: Scenario, mwc: bool = False) -> dict:
        game, cube = scenario.game, scenario.cube
        # The mover is gnubg's player 1 (on roll); player 0 is the opponent.
        owner = match_id_owner(cube.owner, player_on_roll=1)
        if isinstance(game, MatchGame):
            state = MatchState(
                cube_value=cube.value,
                cube_owner=owner,
                player_on_roll=1,
                turn=1,
                crawford=game.crawford,
                match_length=game.length,
                score=(game.score[1], game.score[0]),
            )
        else:
            state = MatchState(
                cube_value=cube.value, cube_owner=owner, player_on_roll=1, turn=1, jacoby=game.jacoby
            )
        self.run(f"set beavers {scenario.beavers}")
        self.run(f"set output mwc {'on' if mwc else 'off'}")
        self.run(f"set gnubgid {position_id}:{encode_match_id(state)}")
        text = self.run("hint")
        if "You cannot double" in text:
            return {"can_double": False}
        options = {}
        for label, value, percent in OPTION.findall(text):
            key = label.replace("Redouble", "Double").replace("No redouble", "No double")
            options[key] = float(value) / (100.0 if percent else 1.0)
        proper = PROPER.search(text)
        if proper is None or len(options) != 3:
            raise RuntimeError(f"cannot parse GNU Backgammon's hint:\n{text}")
        return {"can_double": True, "action": proper.group(1).strip(), **options}

    def probabilities(self, position_id: str) -> list[float]:
        board = self.gnubg.positionfromid(position_id)
        context = self.gnubg.evalcontext(0, 0, 1, 0, 0.0)
        return list(self.gnubg.evaluate(board, self.gnubg.cubeinfo(1, -1, 0), context)[:5])

    def classify(self, position_id: str) -> int:
        return int(self.gnubg.classify(self.gnubg.positionfromid(position_id)))


def compare_met(engine: Gnubg) -> float:
    ours = default_met()
    theirs = engine.gnubg.met(ours.native_length)
    pre = max(
        abs(theirs[0][i][j] - ours.pre(i + 1, j + 1))
        for i in range(ours.native_length)
        for j in range(ours.native_length)
    )
    post = max(abs(theirs[1][n] - ours.post(n + 1)) for n in range(ours.native_length - 1))
    return max(pre, post)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=1000, help="random positions per scenario")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write the summary and every disagreement here")
    parser.add_argument("--show", type=int, default=5, help="disagreements to print per scenario")
    args = parser.parse_args(argv)
    try:
        engine = Gnubg()
    except ImportError:
        print("compare_cube_gnubg: the optional dependency 'gnubg' is not installed (pip install gnubg)")
        return 2

    started = time.time()
    boards, _ = sample_positions(args.positions, seed=args.seed, games=max(4, args.positions // 64))
    ids = [encode_position_id(board) for board in boards]
    probs = torch.tensor([engine.probabilities(pid) for pid in ids], dtype=torch.float64)
    classes = [engine.classify(pid) for pid in ids]
    kinds = position_kinds(boards)
    mover_pips = pip_counts(boards)[0]
    efficiency = DEFAULT_EFFICIENCY.of(kinds, mover_pips)
    classifier_agreement = sum(int(GNUBG_KIND[c]) == int(k) for c, k in zip(classes, kinds.tolist()))
    exact = [c in GNUBG_EXACT_BEAROFF for c in classes]
    print(
        f"{len(ids)} positions (seed {args.seed}); position classes agree with gnubg on "
        f"{classifier_agreement}/{len(ids)}; {sum(exact)} exact two-sided bear-offs left out"
    )
    print(f"match equity table: largest difference from gnubg's loaded table {compare_met(engine):.2e}")

    summary, disagreements = [], []
    totals = {"decisions": 0, "agree": 0, "equities": 0, "equities_close": 0, "max_error": 0.0}
    for scenario in scenarios():
        decision = cube_decision(probs, scenario.cube, scenario.game, efficiency)
        rows = {"decisions": 0, "agree": 0, "equities": 0, "equities_close": 0, "max_error": 0.0}
        actions: Counter[str] = Counter()
        shown = 0
        for index, pid in enumerate(ids):
            if exact[index]:
                continue
            theirs = engine.hint(pid, scenario)
            action = int(decision.action[index])
            rows["decisions"] += 1
            if not theirs["can_double"]:
                agree = action in (CubeAction.NOT_AVAILABLE, CubeAction.NO_DOUBLE_DEAD_CUBE)
                ours_text = action_label(action, scenario.cube)
                theirs_text = "You cannot double"
            else:
                ours_text = action_label(action, scenario.cube)
                theirs_text = theirs["action"]
                agree = ours_text == theirs_text
                for key, field in (
                    ("No double", "no_double"),
                    ("Double, take", "double_take"),
                    ("Double, pass", "double_pass"),
                ):
                    error = abs(float(getattr(decision, field)[index]) - theirs[key])
                    rows["equities"] += 1
                    rows["equities_close"] += error <= EQUITY_TOLERANCE
                    rows["max_error"] = max(rows["max_error"], error)
                if scenario.mwc:
                    theirs_mwc = engine.hint(pid, scenario, mwc=True)
                    for key, field in (
                        ("No double", "no_double_mwc"),
                        ("Double, take", "double_take_mwc"),
                        ("Double, pass", "double_pass_mwc"),
                    ):
                        error = abs(float(getattr(decision, field)[index]) - theirs_mwc[key])
                        rows["equities"] += 1
                        rows["equities_close"] += error <= EQUITY_TOLERANCE
                        rows["max_error"] = max(rows["max_error"], error)
            rows["agree"] += agree
            actions[theirs_text] += 1
            if not agree:
                record = {
                    "scenario": scenario.name,
                    "position_id": pid,
                    "gnubg": theirs_text,
                    "bgtrain": ours_text,
                    "gnubg_equities": {k: v for k, v in theirs.items() if k not in ("can_double", "action")},
                    "bgtrain_equities": {
                        "No double": float(decision.no_double[index]),
                        "Double, take": float(decision.double_take[index]),
                        "Double, pass": float(decision.double_pass[index]),
                    },
                    "probabilities": probs[index].tolist(),
                    "efficiency": float(efficiency[index]),
                }
                disagreements.append(record)
                if shown < args.show:
                    print("   disagree:", json.dumps(record))
                    shown += 1
        for key, total in totals.items():
            totals[key] = max(total, rows[key]) if key == "max_error" else total + rows[key]
        summary.append({"scenario": scenario.name, **rows, "gnubg_actions": dict(actions)})
        print(
            f"{scenario.name:42s} decisions {rows['agree']:5d}/{rows['decisions']:5d}  "
            f"equities within {EQUITY_TOLERANCE:g}: {rows['equities_close']:5d}/{rows['equities']:5d}  "
            f"max |error| {rows['max_error']:.2e}"
        )
        print("    gnubg's actions:", ", ".join(f"{text} {count}" for text, count in actions.most_common()))
    rate = totals["agree"] / max(totals["decisions"], 1)
    print(
        f"TOTAL decisions agree {totals['agree']}/{totals['decisions']} ({100 * rate:.3f}%); equities within "
        f"{EQUITY_TOLERANCE:g}: {totals['equities_close']}/{totals['equities']}; max |error| "
        f"{totals['max_error']:.2e}; {time.time() - started:.0f} s"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(
                {"totals": totals, "scenarios": summary, "disagreements": disagreements}, file, indent=1
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
