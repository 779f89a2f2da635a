"""``bgtrain analyse`` against GNU Backgammon's ``analyse match``, decision by decision.

    python scripts/compare_analyse_gnubg.py FILE.mat... [--ply 0] [--gnubg-ply 0] [--model M] [--json OUT]
    python scripts/compare_analyse_gnubg.py --play 20 --out DIR     # first let gnubg play 20 5-point matches

Needs Debian's ``gnubg`` (``apt-get install gnubg``; the program, not the ``gnubg-nn`` module). GNU
Backgammon imports each file (``import mat``), analyses it at ``--gnubg-ply`` with cubeful equities
(``analyse match``) and hands its per-move analysis to a small script run inside it (``gnubg -p``,
``gnubg.match()``); bgtrain analyses the same files at ``--ply``. Then, over the checker plays both
analysed (aligned game by game, move by move; GNU's "left" player X is the file's left column):

* each player's error rate in each file (thousandths of equity lost per unforced move) and whether both
  programs rank the two players of the file the same way;
* the flagged errors (loss >= 0.04, GNU's "doubtful" or worse): how many each flags, how many both flag
  (agreement, precision and recall of bgtrain's flags taking GNU's as the reference), and the same for
  "bad or worse" (>= 0.08);
* whether both pick the same best play, and the correlation of the losses;
* cube errors per kind, counted by each program over all files (GNU: its statistics).

``--play N`` first makes gnubg play N 5-point matches non-interactively (a 0-ply player against a 0-ply
player with noise 0.12 in its checker play and cube decisions) and export them as ``.mat`` files.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from bgtrain.analysis.summary import analyse_files
from bgtrain.values.evaluator import Evaluator
from engine.notation import parse_play

FLAG, BAD = 0.04, 0.08

PLAY_SCRIPT = """
import gnubg
gnubg.command("set rng mersenne")
gnubg.command("set seed {seed}")
for player, noise in ((0, 0.0), (1, 0.12)):
    gnubg.command(f"set player {{player}} gnubg")
    gnubg.command(f"set player {{player}} chequerplay evaluation plies 0")
    gnubg.command(f"set player {{player}} chequerplay evaluation noise {{noise}}")
    gnubg.command(f"set player {{player}} chequerplay evaluation deterministic on")
    gnubg.command(f"set player {{player}} cubedecision evaluation plies 0")
    gnubg.command(f"set player {{player}} cubedecision evaluation noise {{noise}}")
gnubg.command("set display off")
for index in range({matches}):
    gnubg.command("new match 5")
    gnubg.command(f"export match mat {out}/gnubg_{{index:03d}}.mat")
"""

ANALYSE_SCRIPT = """
import gnubg, json
result = {{}}
for setting in ("chequerplay", "cubedecision"):
    gnubg.command(f"set analysis {{setting}} evaluation plies {plies}")
    gnubg.command(f"set analysis {{setting}} evaluation cubeful on")
    gnubg.command(f"set analysis {{setting}} evaluation prune off")
for path in {paths!r}:
    gnubg.command(f"import mat {{path}}")
    gnubg.command("analyse match")
    result[path] = gnubg.match(analysis=1, boards=0, statistics=1, verbose=0)
json.dump(result, open({out!r}, "w"), default=str)
"""


def run_gnubg(script: str, timeout: float) -> None:
    program = shutil.which("gnubg") or "/usr/games/gnubg"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(script)
    completed = subprocess.run([program, "-t", "-q", "-p", file.name], check=False, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=timeout)
    if completed.returncode:
        raise SystemExit(f"gnubg failed ({completed.returncode}): {completed.stderr.strip()[-300:]}")


def gnubg_moves(game: dict) -> list[dict]:
    """GNU's analysis of each checker play of a game: loss, candidates, best play and the played play."""
    moves = []
    for action in game["game"]:
        if action.get("action") != "move":
            continue
        analysis = action.get("analysis") or {}
        candidates = analysis.get("moves") or []
        played = analysis.get("imove")
        if not candidates or played is None:
            moves.append({"loss": None, "choices": 0})
            continue
        moves.append({"loss": max(0.0, candidates[0]["score"] - candidates[played]["score"]),
                      "choices": len(candidates), "best": candidates[0]["move"], "player": action["player"]})
    return moves


def afterstate(board: list[int], move: list) -> tuple[int, ...] | None:
    text = " ".join(f"{source}/{target}" for source, target in move)
    try:
        return tuple(parse_play(board, text))
    except ValueError:
        return None


def correlation(xs: list[float], ys: list[float]) -> float:
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    spread = math.sqrt(sum((x - mean_x) ** 2 for x in xs) * sum((y - mean_y) ** 2 for y in ys))
    return covariance / spread if spread else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*")
    parser.add_argument("--play", type=int, help="let gnubg play this many 5-point matches into --out first")
    parser.add_argument("--out", help="folder for the matches gnubg plays")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--ply", type=int, default=0, help="bgtrain's analysis ply (default 0)")
    parser.add_argument("--gnubg-ply", type=int, default=0, help="gnubg's analysis ply (default 0)")
    parser.add_argument("--model", default="checkpoints/bgtrain-distilled.pt")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the comparison as JSON here")
    parser.add_argument("--gnubg-json", help="gnubg's analysis saved by an earlier run (skips running gnubg)")
    parser.add_argument("--save-gnubg-json", help="save gnubg's analysis here for a later --gnubg-json")
    parser.add_argument("--bgtrain-json", help="bgtrain's report saved by an earlier run (bgtrain analyse --json)")
    parser.add_argument("--save-bgtrain-json", help="save bgtrain's report here for a later --bgtrain-json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    files = [str(Path(name).resolve()) for name in args.files]
    if args.play:
        if not args.out:
            raise SystemExit("--play needs --out DIR")
        out = Path(args.out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        run_gnubg(PLAY_SCRIPT.format(seed=args.seed, matches=args.play, out=out), 3600)
        files += sorted(str(path) for path in out.glob("gnubg_*.mat"))
    if not files:
        raise SystemExit("no files: give .mat files or --play N --out DIR")
    if args.gnubg_json:
        gnu = json.loads(Path(args.gnubg_json).read_text())
    else:
        with tempfile.TemporaryDirectory() as folder:
            output = str(Path(folder) / "gnubg.json")
            run_gnubg(ANALYSE_SCRIPT.format(plies=args.gnubg_ply, paths=files, out=output), 7200)
            gnu = json.loads(Path(output).read_text())
        if args.save_gnubg_json:
            Path(args.save_gnubg_json).write_text(json.dumps(gnu))
    if args.bgtrain_json:
        report = json.loads(Path(args.bgtrain_json).read_text())
    else:
        report = analyse_files(Evaluator.from_path(args.model), files, args.ply, luck="none")
        if args.save_bgtrain_json:
            Path(args.save_bgtrain_json).write_text(json.dumps(report))

    pairs = []  # (bgtrain row, gnu move) for every checker play both analysed with a choice
    ranking_same = ranking_total = skipped_games = 0
    rates = []
    for file in report["files"]:
        gnu_games = gnu[file["path"]]["games"]
        ours_by_number = {game["number"]: game for game in file["games"]}
        per_player = {"bgtrain": [[0.0, 0], [0.0, 0]], "gnubg": [[0.0, 0], [0.0, 0]]}
        for number, gnu_game in enumerate(gnu_games, 1):
            game = ours_by_number.get(number)
            gnu_moves = gnubg_moves(gnu_game)
            ours = [row for row in game["decisions"] if row["kind"] == "move"] if game else []
            if len(ours) != len(gnu_moves):
                skipped_games += 1
                continue
            for row, move in zip(ours, gnu_moves):
                if move["loss"] is None or row["forced"] or move["choices"] < 2:
                    continue
                pairs.append((row, move))
                for name, loss in (("bgtrain", row["loss"]), ("gnubg", move["loss"])):
                    per_player[name][row["player"]][0] += loss
                    per_player[name][row["player"]][1] += 1
        file_rates = {name: [1000 * total / count if count else 0.0 for total, count in sides]
                      for name, sides in per_player.items()}
        rates.append({"path": file["path"], **file_rates})
        if all(count for _, count in per_player["gnubg"]):
            ranking_total += 1
            ours_order = file_rates["bgtrain"][0] < file_rates["bgtrain"][1]
            ranking_same += ours_order == (file_rates["gnubg"][0] < file_rates["gnubg"][1])
    if not pairs:
        raise SystemExit("no checker play was analysed by both")

    def agreement(threshold: float) -> dict:
        ours = [row["loss"] >= threshold for row, _ in pairs]
        theirs = [move["loss"] >= threshold for _, move in pairs]
        both = sum(a and b for a, b in zip(ours, theirs))
        return {"bgtrain": sum(ours), "gnubg": sum(theirs), "both": both,
                "same_verdict": sum(a == b for a, b in zip(ours, theirs)) / len(pairs),
                "precision": both / sum(ours) if sum(ours) else float("nan"),
                "recall": both / sum(theirs) if sum(theirs) else float("nan")}

    same_best = 0
    for row, move in pairs:
        same_best += afterstate(row["board"], move["best"]) == tuple(row["best_board"])
    totals = {name: [sum(rate[name][player] for rate in rates) / len(rates) for player in (0, 1)]
              for name in ("bgtrain", "gnubg")}
    cube = {"bgtrain": {"missed_doubles": 0, "wrong_doubles": 0, "wrong_takes": 0, "wrong_passes": 0},
            "gnubg": {"missed_doubles": 0, "wrong_doubles": 0, "wrong_takes": 0, "wrong_passes": 0}}
    for file in report["files"]:
        for side in file["summary"]:
            for key in cube["bgtrain"]:
                cube["bgtrain"][key] += side["cube"][key]
        for stats in gnu[file["path"]]["stats"].values():
            numbers = stats["cube"]
            cube["gnubg"]["missed_doubles"] += numbers["missed-double-below-cp"] + numbers["missed-double-above-cp"]
            cube["gnubg"]["wrong_doubles"] += numbers["wrong-double-below-dp"] + numbers["wrong-double-above-tg"]
            cube["gnubg"]["wrong_takes"] += numbers["wrong-take"]
            cube["gnubg"]["wrong_passes"] += numbers["wrong-drop"]
    result = {
        "files": len(report["files"]), "bgtrain_ply": report["ply"], "gnubg_ply": args.gnubg_ply,
        "decisions": len(pairs), "skipped_games": skipped_games, "errors": report["errors"],
        "ranking_same": ranking_same, "ranking_files": ranking_total,
        "mean_error_rate": totals,
        "flagged": agreement(FLAG), "bad": agreement(BAD),
        "same_best_play": same_best / len(pairs),
        "loss_correlation": correlation([row["loss"] for row, _ in pairs], [move["loss"] for _, move in pairs]),
        "cube_errors": cube,
    }
    print(f"{result['files']} files, {len(pairs)} unforced checker plays analysed by both "
          f"(bgtrain {report['ply']}-ply, gnubg {args.gnubg_ply}-ply; {skipped_games} games not aligned)")
    print(f"  players ranked alike (by checker error rate) in {ranking_same} of {ranking_total} files")
    print("  mean error rate, left / right player: bgtrain {:.1f} / {:.1f}, gnubg {:.1f} / {:.1f}".format(
        *totals["bgtrain"], *totals["gnubg"]))
    for name, threshold in (("flagged", FLAG), ("bad", BAD)):
        numbers = result[name]
        print(f"  loss >= {threshold}: bgtrain {numbers['bgtrain']}, gnubg {numbers['gnubg']}, both {numbers['both']}; "
              f"same verdict {100 * numbers['same_verdict']:.1f}%, precision {100 * numbers['precision']:.1f}%, "
              f"recall {100 * numbers['recall']:.1f}%")
    print(f"  same best play {100 * result['same_best_play']:.1f}%, loss correlation {result['loss_correlation']:.3f}")
    print(f"  cube errors (missed doubles, wrong doubles, wrong takes, wrong passes): bgtrain "
          f"{tuple(cube['bgtrain'].values())}, gnubg {tuple(cube['gnubg'].values())}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
