"""The move-error benchmark: GNU Backgammon's .bm format, the scorer's arithmetic on hand-computed
cases, the shipped data against its manifest, the training hook and the command line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from helpers import random_boards

from bgtrain.arena.agents import PubevalAgent
from bgtrain.arena.gnubg import locate_afterstates
from bgtrain.benchmark.bm_format import (
    decode_position_key,
    encode_position_key,
    format_bm,
    parse_bm,
    read_bm,
)
from bgtrain.benchmark.decisions import (
    CLASSES,
    DEFAULT_DATA,
    GNUBG_2PLY_DATA,
    GNUBG_2PLY_NAME,
    PLUS_ROLLOUTS_NAME,
    STAGES,
    DecisionSet,
    classes_of,
    content_hash,
    load_decisions,
    named_set,
    read_manifest,
    save_decisions,
    stages_of,
)
from bgtrain.benchmark.scorer import Z95, class_sample, decision_losses, log_error_rates, score_agents
from bgtrain.cli import main
from engine.board import flip_board
from engine.movegen import legal_afterstates
from engine.notation import parse_play
from engine.position_id import decode_position_id
from engine.position_kinds import PHASES, PositionKind
from engine.rules import STANDARD

SAMPLE = Path(__file__).parent / "data" / "sample.bm"
OPENING = "OAHDPAABDAOAHDPAABDA"
RACE_KEY = "LLLLANAAAAGMOPDJAAAA"
CRASHED_KEY = "GOAAEAAALIOHOAABBAAA"


class ScriptedAgent:
    """Plays, in each (position key, roll), the play named in ``plays``; index 0 elsewhere."""

    def __init__(self, plays: dict[tuple[str, tuple[int, int]], str], name: str = "scripted") -> None:
        self.plays = plays
        self.name = name

    def choose(self, state, afterstates):
        choice = torch.zeros_like(afterstates.counts)
        for index, (board, dice) in enumerate(zip(state.board, state.dice.tolist())):
            notation = self.plays.get((encode_position_key(board), tuple(dice)))
            if notation is not None:
                chosen = torch.tensor([parse_play(board.tolist(), notation, dice=tuple(dice))], dtype=torch.int8)
                choice[index] = locate_afterstates(chosen, afterstates, torch.tensor([index]))[0]
        return choice


# The sample's plays (tests/data/sample.bm): listed 0.166; unlisted (worst listed 0.110); best; unlisted
# (worst listed 0.050).
SCRIPT = {
    (OPENING, (3, 1)): "24/23 13/10",
    (OPENING, (6, 1)): "24/23 24/18",
    (RACE_KEY, (2, 1)): "8/7 8/6",
    (CRASHED_KEY, (6, 4)): "13/7* 8/4",
}


# ---------------------------------------------------------------------------------------------------
# GNU Backgammon's .bm format


def test_position_key_of_the_start_position_and_round_trips():
    start = decode_position_id("4HPwATDgc/ABMA")
    assert encode_position_key(start) == OPENING
    assert torch.equal(decode_position_key(OPENING), start)
    for row in random_boards(200, seed=4):
        assert torch.equal(decode_position_key(encode_position_key(row)), row)


def test_position_key_agrees_with_gnubg():
    gnubg_nn = pytest.importorskip("gnubg_nn")
    from bgtrain.arena.gnubg import to_gnubg_board

    for row in random_boards(100, seed=5):
        assert encode_position_key(row) == gnubg_nn.key_of_board(to_gnubg_board(row.tolist()))
    # gnubg's key of a chosen play is the position after it seen by the opponent, now on roll.
    _steps, key = gnubg_nn.best_move(gnubg_nn.board_from_position_id("4HPwATDgc/ABMA"), 3, 1, n=0, b=1)
    assert key == "LAGHPAABDAOAHDPAABDA"
    assert torch.equal(flip_board(decode_position_key(key)),
                       torch.tensor(parse_play(decode_position_id("4HPwATDgc/ABMA").tolist(), "8/5 6/5"),
                                    dtype=torch.int8))


def test_sample_bm_reads_with_classes_and_losses():
    decisions = read_bm(SAMPLE)
    assert len(decisions) == 4
    assert decisions.kind.tolist() == [PositionKind.CONTACT, PositionKind.CONTACT, PositionKind.RACE, PositionKind.CRASHED]
    assert decisions.counts.tolist() == [3, 3, 3, 3]
    assert decisions.loss[:3].tolist() == pytest.approx([0.0, 0.166, 0.173])
    assert decisions.worst_loss.tolist() == pytest.approx([0.173, 0.110, 0.012, 0.050])
    assert decisions.dice.tolist() == [[3, 1], [6, 1], [2, 1], [6, 4]]
    best = decisions.candidate[0]
    assert torch.equal(best, torch.tensor(parse_play(decode_position_id("4HPwATDgc/ABMA").tolist(), "8/5 6/5"),
                                          dtype=torch.int8))


def test_sample_bm_scored_by_hand():
    """contact: 24/23 13/10 loses 0.166 and the unlisted 24/23 24/18 is charged the worst listed loss,
    0.110: (0.166 + 0.110) / 2 * 1000 = 138; crashed: unlisted, 0.050 -> 50; race: the best -> 0."""
    report = score_agents([ScriptedAgent(SCRIPT)], read_bm(SAMPLE))
    rates = {rate.position_class: rate for rate in report.rates}
    assert rates["contact"].error_rate == pytest.approx(138.0, abs=1e-4)
    assert rates["crashed"].error_rate == pytest.approx(50.0, abs=1e-4)
    assert rates["race"].error_rate == pytest.approx(0.0, abs=1e-9)
    assert rates["contact"].unlisted == pytest.approx(0.5)
    # two values 166 and 110: standard deviation 28 * sqrt(2), interval 1.96 * 28 * sqrt(2) / sqrt(2)
    assert rates["contact"].interval95 == pytest.approx(Z95 * 28.0, abs=1e-3)
    assert rates["crashed"].interval95 == 0.0


def test_unlisted_plays_are_charged_the_worst_listed_loss_even_when_unsorted():
    lines = [f"m {OPENING} 6 1 OANLOAABDAOAHDPAABDA OAOHOAABDAOAHDPAABDA 0.110 OAOLOAABCIOAHDPAABDA 0.090"]
    decisions = parse_bm(lines)
    assert decisions.loss.tolist() == pytest.approx([0.0, 0.090, 0.110])  # sorted best first on reading
    loss, listed = decision_losses(ScriptedAgent({(OPENING, (6, 1)): "24/23 24/18"}), decisions)
    assert not bool(listed[0]) and float(loss[0]) == pytest.approx(0.110)
    loss, listed = decision_losses(ScriptedAgent({(OPENING, (6, 1)): "24/23 13/7"}), decisions)
    assert bool(listed[0]) and float(loss[0]) == pytest.approx(0.090)


def test_bm_write_and_read_round_trip(tmp_path):
    decisions = read_bm(SAMPLE)
    again = parse_bm(format_bm(decisions).splitlines())
    for name in ("board", "dice", "kind", "counts", "candidate"):
        assert torch.equal(getattr(again, name), getattr(decisions, name))
    assert torch.allclose(again.loss, decisions.loss)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (f"m {OPENING} 3 1", "a move line is"),
        (f"m {OPENING} 3 1 LAGHPAABDAOAHDPAABDA OAHDOCABCIOAHDPAABDA", "a move line is"),
        (f"m {OPENING} 7 1 LAGHPAABDAOAHDPAABDA", "the dice"),
        (f"m {OPENING} 3 1 LAGHPAABDAOAHDPAABDA OAHDOCABCIOAHDPAABDA x", "not a number"),
        (f"m {OPENING} 3 1 LAGHPAABDAOAHDPAABDA OAHDOCABCIOAHDPAABDA -0.1", ">= 0"),
        (f"m {OPENING[:-1]}Z 3 1 LAGHPAABDAOAHDPAABDA", "20 letters A to P"),
        (f"m {OPENING} 3 1 {OPENING}", "not a legal play"),  # not reachable with 31
        (f"m {OPENING} 3 1 LAGHPAABDAOAHDPAABDA LAGHPAABDAOAHDPAABDA 0.1", "listed twice"),
        ("x something", "unknown record"),
    ],
)
def test_malformed_bm_lines_name_the_line(line, message):
    with pytest.raises(ValueError, match=message) as caught:
        parse_bm(["# a comment", line], "bad.bm")
    assert str(caught.value).startswith("bad.bm:2: ")


# ---------------------------------------------------------------------------------------------------
# The scorer on synthetic decisions


def synthetic_decisions() -> DecisionSet:
    """Three random positions with at least four legal plays; every legal play listed, with loss
    0.01 * (its index in the engine's order), except the last play of each position, left unlisted."""
    board = random_boards(40, seed=11)
    dice = torch.randint(1, 7, (40, 2), generator=torch.Generator().manual_seed(12))
    dice = torch.sort(dice, dim=1, descending=True).values.to(torch.int8)
    afterstates = legal_afterstates(board, dice)
    keep = ((afterstates.counts > 3) & (classes_of(board) != PositionKind.OVER)).nonzero(as_tuple=True)[0][:3]
    board, dice = board[keep], dice[keep]
    afterstates = legal_afterstates(board, dice)
    candidates, losses, counts = [], [], []
    for start, count in zip(afterstates.offsets.tolist(), afterstates.counts.tolist()):
        candidates.append(afterstates.boards[start:start + count - 1])
        losses += [0.01 * index for index in range(count - 1)]
        counts.append(count - 1)
    candidate = torch.cat(candidates)
    return DecisionSet(board, dice, classes_of(board).to(torch.int8), torch.zeros(3, dtype=torch.int8),
                       torch.tensor(counts), candidate, torch.tensor(losses), torch.zeros(candidate.shape[0]))


class IndexAgent:
    """Plays the afterstate at a fixed index of each position (clamped to the last)."""

    def __init__(self, index: int, name: str) -> None:
        self.index, self.name = index, name

    def choose(self, state, afterstates):
        return torch.minimum(torch.full_like(afterstates.counts, self.index), afterstates.counts - 1)


def test_synthetic_set_error_rates_by_hand():
    decisions = synthetic_decisions()
    counts = decisions.counts.tolist()
    loss, listed = decision_losses(IndexAgent(1, "second"), decisions)
    assert loss.tolist() == pytest.approx([0.01] * 3) and bool(listed.all())
    # The last legal play is never listed: charged the worst listed loss, 0.01 * (count - 1).
    loss, listed = decision_losses(IndexAgent(99, "last"), decisions)
    assert loss.tolist() == pytest.approx([0.01 * (count - 1) for count in counts])
    assert not bool(listed.any())


def test_paired_interval_by_hand():
    """Plays 2 and 0 of each position lose 0.02 and 0: the difference is 20 (×1000) on every
    decision, so its paired interval is 0."""
    decisions = synthetic_decisions()
    decisions = DecisionSet(decisions.board, decisions.dice, torch.full((3,), PositionKind.CONTACT, dtype=torch.int8),
                            decisions.source,
                            decisions.counts, decisions.candidate, decisions.loss, decisions.equity)
    report = score_agents([IndexAgent(2, "third"), IndexAgent(0, "first"), IndexAgent(99, "last")], decisions)
    differences = {(d.agent_a, d.agent_b): d for d in report.differences}
    assert differences[("third", "first")].difference == pytest.approx(20.0)
    assert differences[("third", "first")].interval95 == pytest.approx(0.0, abs=1e-9)
    # first - last: -10 * (count - 1) per decision (the last play is charged the worst listed loss,
    # 0.01 * (count - 1)); the interval is 1.96 standard deviations of those over sqrt(3).
    values = torch.tensor([-10.0 * (count - 1) for count in decisions.counts.tolist()], dtype=torch.float64)
    expected = Z95 * float(values.std()) / math.sqrt(3)
    assert differences[("first", "last")].difference == pytest.approx(float(values.mean()))
    assert differences[("first", "last")].interval95 == pytest.approx(expected)
    assert expected > 0
    assert [rate.position_class for rate in report.rates] == ["contact"] * 3


def race_board(mover: dict[int, int], opponent: dict[int, int]) -> list[int]:
    """A board from each side's checkers by its own point numbers (home board 1..6); the rest borne off."""
    board = [0] * 28
    for point, count in mover.items():
        board[point] = count
    for point, count in opponent.items():
        board[25 - point] = -count
    return board


def test_stages_by_who_has_borne_off():
    boards = torch.tensor([
        # The mover (15 checkers: 6-point 5, 8-point 5, 11-point 5) against an opponent with 3 left on its
        # 1-point (12 off): the mover must save the gammon.
        race_board({6: 5, 8: 5, 11: 5}, {1: 3}),
        # The same seen from the other side: the mover, 12 off, may win a gammon.
        race_board({1: 3}, {6: 5, 8: 5, 11: 5}),
        # Nobody off: 15 against 15.
        race_board({6: 5, 8: 5, 11: 5}, {6: 5, 7: 5, 12: 5}),
        # Both bearing off: 10 off against 12 off.
        race_board({2: 5}, {1: 3}),
    ], dtype=torch.int8)
    assert [STAGES[stage] for stage in stages_of(boards).tolist()] == list(STAGES)
    assert torch.equal(stages_of(flip_board(boards)), torch.tensor([1, 0, 2, 3]))


def test_stage_shares_add_up_to_the_class_error_rate():
    decisions = read_bm(SAMPLE)
    report = score_agents([PubevalAgent(), IndexAgent(99, "last")], decisions, by_stage=True)
    assert report.stages
    for rate in report.rates:
        mine = [s for s in report.stages if (s.agent, s.position_class) == (rate.agent, rate.position_class)]
        assert sum(s.decisions for s in mine) == rate.decisions
        assert sum(s.share for s in mine) == pytest.approx(rate.error_rate)
        for stage in mine:
            assert stage.share == pytest.approx(stage.error_rate * stage.decisions / rate.decisions)
    assert not score_agents([PubevalAgent()], decisions).stages  # only when asked


def test_save_load_and_hash(tmp_path):
    decisions = read_bm(SAMPLE)
    path = save_decisions(decisions, tmp_path / "set.npz")
    loaded = load_decisions(path)
    assert content_hash(loaded) == content_hash(decisions)
    assert torch.equal(loaded.candidate, decisions.candidate)
    assert content_hash(decisions.select(torch.tensor([1, 0, 2, 3]))) != content_hash(decisions)


# ---------------------------------------------------------------------------------------------------
# The shipped benchmark


def test_shipped_data_matches_its_manifest():
    decisions = load_decisions()
    manifest = read_manifest(DEFAULT_DATA)
    assert content_hash(decisions) == manifest["content_sha256"]
    assert decisions.class_counts() == manifest["counts"]
    counts = decisions.class_counts()
    assert counts["contact"] + counts["crashed"] >= 5000 and counts["race"] >= 2000
    # Each class names its reference: rollouts of the top candidates, or GNU Backgammon at 2-ply.
    assert set(manifest["reference"]) == set(CLASSES)
    # A rollout reference's losses are precise to about a hundredth of a point, and no model it grades
    # taught its roller: bgtrain-plus.pt labelled the supervised models' data, so it rolls out no longer.
    for reference in manifest["reference"].values():
        assert reference.get("ply") == 2 or (reference["mean_loss_standard_error"] <= 0.01
                                             and reference["model"] != "checkpoints/bgtrain-plus.pt")
    # The set it was relabelled from is shipped too, matches its own manifest and holds the same
    # decisions (boards and rolls) with at least as many candidates.
    built = load_decisions(GNUBG_2PLY_NAME)
    assert content_hash(built) == read_manifest(GNUBG_2PLY_DATA)["content_sha256"]
    assert manifest["relabelled_from"]["content_sha256"] == content_hash(built)
    order = torch.cat([torch.nonzero(built.kind == kind).flatten() for kind in PHASES])
    assert torch.equal(built.board[order], decisions.board) and torch.equal(built.dice[order], decisions.dice)
    assert bool((built.counts[order] >= decisions.counts).all())
    # Every decision has a choice; its class is GNU's classification of its board; the best loses 0.
    afterstates = legal_afterstates(decisions.board, decisions.dice)
    assert int(afterstates.counts.min()) >= 2
    assert torch.equal(classes_of(decisions.board).to(torch.int8), decisions.kind)
    assert float(decisions.loss[decisions.offsets].abs().max()) == 0.0


def test_shipped_candidates_are_legal_plays():
    decisions = class_sample(load_decisions(), 300)
    afterstates = legal_afterstates(decisions.board, decisions.dice)
    owner = decisions.owner
    for decision in range(len(decisions)):  # a check of the data, not a hot path
        start, count = int(afterstates.offsets[decision]), int(afterstates.counts[decision])
        plays = afterstates.boards[start:start + count]
        rows = decisions.candidate[owner == decision]
        assert bool((rows.unsqueeze(1) == plays.unsqueeze(0)).all(-1).any(1).all())


def test_training_hook_logs_three_error_rates():
    from bgtrain.model.network import ValueNetwork

    class Writer:
        def __init__(self):
            self.scalars = {}

        def add_scalar(self, name, value, step):
            self.scalars[name] = (value, step)

    torch.manual_seed(0)
    network = ValueNetwork(hidden=(8,))
    writer = Writer()
    values = log_error_rates(writer, network, STANDARD, 1234, per_class=50)
    assert set(writer.scalars) == {"eval/error_rate/contact", "eval/error_rate/crashed", "eval/error_rate/race"}
    assert all(step == 1234 and value >= 0 for value, step in writer.scalars.values())
    assert values["contact"] == writer.scalars["eval/error_rate/contact"][0]


# ---------------------------------------------------------------------------------------------------
# The command line


def test_cli_scores_the_sample_and_writes_json(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert main(["benchmark", "pubeval", "random", "--data", str(SAMPLE), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "contact (2)" in printed and "paired differences" in printed
    report = json.loads(out.read_text())
    rates = {(r["agent"], r["position_class"]): r["error_rate"] for r in report["error_rates"]}
    expected = score_agents([PubevalAgent()], read_bm(SAMPLE)).rates
    for rate in expected:
        assert rates[("pubeval", rate.position_class)] == pytest.approx(rate.error_rate)
    assert len(report["differences"]) == 3


def test_cli_by_stage(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert main(["benchmark", "pubeval", "--data", str(SAMPLE), "--by-stage", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "by stage: share of the class's error rate" in printed
    stages = json.loads(out.read_text())["stages"]
    assert {stage["position_class"] for stage in stages} == {"contact", "crashed", "race"}
    assert all(stage["stage"] in STAGES for stage in stages)


def test_cli_one_class(capsys):
    assert main(["benchmark", "pubeval", "--data", str(SAMPLE), "--class", "race"]) == 0
    printed = capsys.readouterr().out
    assert "race (1)" in printed and "contact" not in printed


def test_cli_scores_the_set_as_built_by_name(capsys):
    """``--data gnubg-2ply``: the GNU Backgammon 2-ply set; its race class is the shipped one's."""
    assert main(["benchmark", "pubeval", "--data", GNUBG_2PLY_NAME, "--class", "race"]) == 0
    built = capsys.readouterr().out
    assert main(["benchmark", "pubeval", "--class", "race"]) == 0
    shipped = capsys.readouterr().out
    assert "from gnubg-2ply" in built and "race (2000)" in built

    def rate(printed: str) -> str:
        return next(line for line in printed.splitlines() if line.startswith("pubeval"))

    assert rate(built) == rate(shipped)


def test_the_earlier_reference_stays_by_name():
    """``--data plus-rollouts``: the set shipped before, the same decisions under the rollouts of
    ``bgtrain-plus.pt``; its race class, GNU 2-ply's, is the shipped one's."""
    earlier, shipped = load_decisions(PLUS_ROLLOUTS_NAME), load_decisions()
    assert content_hash(earlier) == read_manifest(named_set(PLUS_ROLLOUTS_NAME))["content_sha256"]
    assert torch.equal(earlier.board, shipped.board) and torch.equal(earlier.dice, shipped.dice)
    race = earlier.kind == PositionKind.RACE
    assert torch.equal(earlier.counts[race], shipped.counts[race])
    assert not torch.equal(earlier.loss, shipped.loss)  # contact and crashed were rolled out again
    with pytest.raises(ValueError, match="unknown benchmark set 'plus'"):
        named_set("plus")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["pubeval", "--class", "middle"], "unknown class 'middle'"),
        (["pubeval", "--data", "no/such/file.bm"], "does not exist"),
        (["pubeval", "--data", "no/such/file.npz"], "does not exist"),
        (["nobody"], "unknown agent"),
        (["pubeval", "pubeval"], "named once"),
    ],
)
def test_cli_errors_are_one_line(arguments, message, capsys):
    assert main(["benchmark", *arguments, *([] if "--data" in arguments else ["--data", str(SAMPLE)])]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("bgtrain benchmark: error: ") and message in error and "\n" not in error


def test_cli_malformed_bm_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.bm"
    bad.write_text(f"m {OPENING} 3 1 LAGHPAABDAOAHDPAABDA OAHDOCABCIOAHDPAABDA\n")
    assert main(["benchmark", "pubeval", "--data", str(bad)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("bgtrain benchmark: error: bad.bm:1: a move line is")


# ---------------------------------------------------------------------------------------------------
# Choosing the decisions


def test_choose_decisions_mixes_disputed_and_a_random_sample_of_the_rest():
    from bgtrain.benchmark.sampling import choose_decisions

    generator = torch.Generator().manual_seed(0)
    kind = torch.randint(0, 3, (6000,), generator=generator)
    is_disputed = torch.rand(6000, generator=generator) < 0.4
    is_repeat = torch.rand(6000, generator=generator) < 0.05
    index, as_disputed = choose_decisions(kind, is_disputed, [800, 300, 500], 0.5, seed=1, is_repeat=is_repeat)
    assert index.unique().numel() == index.numel() == 1600
    assert not bool(is_repeat[index].any())
    assert torch.bincount(kind[index], minlength=3).tolist() == [800, 300, 500]
    assert bool(is_disputed[index[as_disputed]].all()) and int(as_disputed.sum()) == 800
    # The rest is a sample of what remained: disputed in about the remaining share (0.4 of the pool
    # with half the disputed ones taken: about 0.25), not none of them.
    rest = index[~as_disputed]
    share = float(is_disputed[rest].double().mean())
    assert 0.18 < share < 0.32
    again = choose_decisions(kind, is_disputed, [800, 300, 500], 0.5, seed=1, is_repeat=is_repeat)
    assert torch.equal(again[0], index)


def test_repeated_marks_later_occurrences_only():
    from bgtrain.benchmark.sampling import repeated

    board = random_boards(4, seed=2)
    board = torch.cat([board, board[:2]])
    dice = torch.tensor([[3, 1], [6, 1], [2, 2], [5, 4], [3, 1], [6, 2]], dtype=torch.int8)
    assert repeated(board, dice).tolist() == [False, False, False, False, True, False]
