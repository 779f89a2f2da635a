"""Measure how closely the two-sided bear-off database (``bgtrain.values.bearoff_two_sided``) agrees with GNU
Backgammon's own two-sided database (``gnubg_ts0.bd``: six checkers a side on six points).

Needs the optional dependency ``gnubg`` (PyPI package "gnubg"). For random pairs of bear-off positions
of 1..6 checkers a side, GNU Backgammon gives its 0-ply cubeless P(win) (``gnubg.evaluate``, read from
its database) and its 0-ply money cube hint (no double, double/take, double/pass and the proper action,
from its database's cubeful equities) with the cube centred and owned by the side on roll; bgtrain's
answers come from ``TwoSidedBearoffDatabase.win_probability`` and ``money_cube_decision``. GNU stores
its tables in 16 bits, so agreement is to about 3e-5, and actions can differ at exact ties (an
indifferent take: GNU's rounded equities decide).

    python scripts/compare_bearoff_gnubg.py --positions 2000 --seed 1 [--all-pairs]

``--all-pairs`` compares P(win) on every pair of the database as well (851,929; about a minute).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_cube_gnubg import Gnubg, Scenario

from bgtrain.cube import CubeState, MoneyGame, action_label
from bgtrain.values.bearoff import all_positions
from bgtrain.values.bearoff_two_sided import load_two_sided_database
from engine.position_id import encode_position_id

SCENARIOS = (
    Scenario("money, centred", CubeState(), MoneyGame()),
    Scenario("money, mover owns 2", CubeState(2, "mover"), MoneyGame()),
)
FIELDS = (("No double", "no_double"), ("Double, take", "double_take"), ("Double, pass", "double_pass"))


def all_pairs(max_checkers: int) -> torch.Tensor:
    """``int8[N, 28]``: every pair of 1..max_checkers checkers a side on their home points."""
    home = all_positions(max_checkers)[1:]
    board = torch.zeros(home.shape[0] ** 2, 28, dtype=torch.int8)
    board[:, 1:7] = home.repeat_interleave(home.shape[0], 0).to(torch.int8)
    board[:, 19:25] = -home.repeat(home.shape[0], 1).flip(-1).to(torch.int8)
    return board


def random_pairs(count: int, seed: int, max_checkers: int) -> torch.Tensor:
    """``int8[count, 28]``: random pairs of 1..max_checkers checkers a side on their home points."""
    home = all_positions(max_checkers)[1:]
    generator = torch.Generator().manual_seed(seed)
    mover = home[torch.randint(home.shape[0], (count,), generator=generator)]
    opponent = home[torch.randint(home.shape[0], (count,), generator=generator)]
    board = torch.zeros(count, 28, dtype=torch.int8)
    board[:, 1:7] = mover.to(torch.int8)
    board[:, 19:25] = -opponent.flip(-1).to(torch.int8)
    return board


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=1000, help="random pairs of positions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=5, help="disagreements to print")
    parser.add_argument("--all-pairs", action="store_true", help="compare P(win) on every pair too")
    args = parser.parse_args(argv)
    try:
        engine = Gnubg()
    except ImportError:
        print("compare_bearoff_gnubg: the optional dependency 'gnubg' is not installed (pip install gnubg)")
        return 2
    started = time.time()
    database = load_two_sided_database()
    boards = random_pairs(args.positions, args.seed, database.max_checkers)
    ids = [encode_position_id(board) for board in boards]
    classes = Counter(engine.classify(pid) for pid in ids)
    theirs = torch.tensor([engine.probabilities(pid)[0] for pid in ids], dtype=torch.float64)
    ours = database.win_probability(boards).double()
    error = (theirs - ours).abs()
    print(f"{len(ids)} pairs (seed {args.seed}); gnubg's position classes {dict(classes)} (4: its two-sided database)")
    print(f"P(win): max |difference| {float(error.max()):.2e}, mean {float(error.mean()):.2e}")
    if args.all_pairs:
        every = all_pairs(database.max_checkers)
        cube, context = engine.gnubg.cubeinfo(1, -1, 0), engine.gnubg.evalcontext(0, 0, 1, 0, 0.0)
        theirs_all = torch.tensor([engine.gnubg.evaluate(engine.gnubg.positionfromid(encode_position_id(board)),
                                                         cube, context)[0] for board in every], dtype=torch.float64)
        error_all = (theirs_all - database.win_probability(every).double()).abs()
        print(f"P(win) on all {every.shape[0]:,} pairs: max |difference| {float(error_all.max()):.2e}, "
              f"mean {float(error_all.mean()):.2e}")
    for scenario in SCENARIOS:
        decision = database.money_cube_decision(boards, scenario.cube, scenario.game)
        agree, shown = 0, 0
        largest = dict.fromkeys((key for key, _ in FIELDS[:2]), 0.0)
        for index, pid in enumerate(ids):
            hint = engine.hint(pid, scenario)
            ours_text = action_label(int(decision.action[index]), scenario.cube)
            for key, field in FIELDS[:2]:  # double/pass is +1 for both
                largest[key] = max(largest[key], abs(float(getattr(decision, field)[index]) - hint[key]))
            if ours_text == hint["action"]:
                agree += 1
            elif shown < args.show:
                shown += 1
                print(f"   disagree: {pid} gnubg {hint['action']!r} {[hint[key] for key, _ in FIELDS]}, "
                      f"bgtrain {ours_text!r} {[round(float(getattr(decision, f)[index]), 6) for _, f in FIELDS]}")
        worst = ", ".join(f"{key} {value:.2e}" for key, value in largest.items())
        print(f"{scenario.name:22s} actions agree {agree}/{len(ids)}; equities, max |difference|: {worst}")
    print(f"{time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
