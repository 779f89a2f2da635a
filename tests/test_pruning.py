"""Pruning networks and the pruned search: the pruned search is the exact one when pruning keeps every
play; a pruned reply is a legal play, among the pruning networks' best few, and the full model's best of
those; a checkpoint carries its pruning networks through save, load and export; ``bgtrain prune``
fits and attaches them."""

from __future__ import annotations

import pytest
import torch
from helpers import compile_mode

from bgtrain.benchmark.decisions import load_decisions
from bgtrain.cli import main
from bgtrain.datasets.shards import write_manifest, write_shard
from bgtrain.model.checkpoint import checkpoint_payload, load_checkpoint, save_checkpoint
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from bgtrain.model.pruning import PRUNING
from bgtrain.outcomes import cubeless_equity
from bgtrain.training.config import Config
from bgtrain.training.pruning import PruningTraining, attach_pruning, fit_pruning_networks
from bgtrain.values.evaluator import Evaluator
from bgtrain.values.pruning import PlayPruning, pruned_best_plays, pruning_scores
from bgtrain.values.static_value import NetworkValue, StaticValue
from engine.dice import ALL_ROLLS
from engine.movegen import legal_afterstates, rank_per_position
from engine.position_id import decode_position_id
from engine.position_kinds import PositionKind, position_phases
from engine.random_play import sample_positions
from engine.rules import STANDARD


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):  # small batches: compiling the engine would cost more than it saves
        yield


def phase_model(encoder: str, hidden: int, seed: int) -> PhaseNetwork:
    torch.manual_seed(seed)
    return PhaseNetwork({name: ValueNetwork(encoder, [hidden]) for name in ("contact", "crashed", "race")}).eval()


@pytest.fixture(scope="module")
def model() -> PhaseNetwork:
    return phase_model("tesauro_plus", 12, seed=1)


@pytest.fixture(scope="module")
def pruning() -> PhaseNetwork:
    # Different weights from the model's: the networks disagree, so pruning changes some choices.
    return phase_model("tesauro198", 4, seed=2)


@pytest.fixture(scope="module")
def positions() -> torch.Tensor:
    boards, _ = sample_positions(12, seed=9, games=12, turns=40)
    return boards[torch.randperm(boards.shape[0], generator=torch.Generator().manual_seed(1))[:12]]


def searches(model, pruning, play_pruning):
    return Evaluator.from_network(model, bearoff=False, pruning=pruning, play_pruning=play_pruning)


def test_keeping_every_play_is_the_exact_search(model, pruning, positions):
    exact = searches(model, None, None)
    keep_all = searches(model, pruning, PlayPruning(keep=1000, more_than=0))  # every roll pruned, all kept
    for ply in (1, 2):
        assert torch.equal(keep_all.probabilities(positions[:4] if ply == 2 else positions, ply),
                           exact.probabilities(positions[:4] if ply == 2 else positions, ply)), ply
    dice = torch.tensor([[6, 5]] * positions.shape[0])
    afterstates = legal_afterstates(positions, dice)
    assert torch.equal(keep_all.choose(afterstates, 1), exact.choose(afterstates, 1))
    # Off, or without pruning networks, the evaluator searches exactly too.
    assert searches(model, pruning, None).play_pruning is None and searches(model, None, PlayPruning()).play_pruning is None


def test_pruning_changes_the_search_only_where_rolls_have_many_plays(model, pruning, positions):
    exact = searches(model, None, None).probabilities(positions, 1)
    pruned = searches(model, pruning, PlayPruning(keep=1, more_than=0)).probabilities(positions, 1)
    assert not torch.equal(pruned, exact)  # the disagreeing networks keep other plays
    never = searches(model, pruning, PlayPruning(keep=1, more_than=10_000)).probabilities(positions, 1)
    assert torch.equal(never, exact)


def test_a_pruned_reply_is_legal_among_the_pruning_best_and_the_models_best_of_those(model, pruning, positions):
    rolls = torch.tensor(ALL_ROLLS, dtype=torch.int8)
    boards = positions.repeat_interleave(len(ALL_ROLLS), 0)
    afterstates = legal_afterstates(boards, rolls.repeat(positions.shape[0], 1))
    full = StaticValue(NetworkValue(model))
    cheap = NetworkValue(pruning)
    settings = PlayPruning(keep=3, more_than=8)
    choice, outcomes = pruned_best_plays(afterstates, full, cheap, settings, STANDARD)
    counts = afterstates.counts
    assert bool(((choice >= 0) & (choice < counts)).all())  # an index of one of its own legal plays
    rows = afterstates.offsets + choice
    # The same values, up to the rounding of a different batch.
    torch.testing.assert_close(outcomes, full.afterstates(afterstates.boards[rows]), rtol=0, atol=1e-6)
    cheap_rank = rank_per_position(pruning_scores(cheap, afterstates.boards, STANDARD), afterstates)
    full_equity = cubeless_equity(full.afterstates(afterstates.boards))
    crowded = counts > settings.more_than
    assert bool(crowded.any()) and bool((~crowded).any())
    for position in range(counts.shape[0]):
        start, count = int(afterstates.offsets[position]), int(counts[position])
        candidates = range(start, start + count)
        if crowded[position]:
            candidates = [row for row in candidates if cheap_rank[row] < settings.keep]
            assert int(cheap_rank[rows[position]]) < settings.keep
        best = max(candidates, key=lambda row: (float(full_equity[row]), -row))
        assert int(rows[position]) == best, position


def test_play_pruning_settings_are_checked():
    with pytest.raises(ValueError, match="keep must be an integer >= 1"):
        PlayPruning(keep=0)
    with pytest.raises(ValueError, match="more_than must be an integer >= 0"):
        PlayPruning(more_than=-1)


@pytest.fixture
def checkpoint(tmp_path, model):
    return save_checkpoint(tmp_path / "model.pt", checkpoint_payload(model, Config()))


def test_a_checkpoint_with_pruning_networks_round_trips(tmp_path, checkpoint, pruning, positions):
    assert load_model(checkpoint).pruning is None
    path = attach_pruning(checkpoint, pruning, {"note": "test"}, tmp_path / "pruned.pt")
    loaded = load_model(path)
    assert loaded.pruning is not None and loaded.payload[PRUNING]["trained"] == {"note": "test"}
    assert torch.equal(loaded.pruning.evaluate(positions), pruning.evaluate(positions))
    assert torch.equal(loaded.model.evaluate(positions), load_model(checkpoint).model.evaluate(positions))
    evaluator = Evaluator.from_path(path, bearoff=False)
    assert evaluator.play_pruning == PlayPruning()
    assert Evaluator.from_path(path, bearoff=False, play_pruning=None).play_pruning is None
    with pytest.raises(ValueError, match="new file"):
        attach_pruning(path, pruning, {}, path)


def test_a_damaged_pruning_entry_is_one_line(tmp_path, checkpoint):
    payload = load_checkpoint(checkpoint)
    payload[PRUNING] = {"model": {"kind": "phases", "phases": {}}, "weights": {}}
    save_checkpoint(tmp_path / "bad.pt", payload)
    with pytest.raises(ValueError, match="pruning networks: weights do not fit"):
        load_model(tmp_path / "bad.pt")
    payload[PRUNING] = [1, 2]
    save_checkpoint(tmp_path / "bad.pt", payload)
    with pytest.raises(ValueError, match="'pruning' entry is not a model"):
        load_model(tmp_path / "bad.pt")


# Each export takes about 10 s on a quiet 2-core machine: TorchScript's, the same path past the loading, is slow.
@pytest.mark.parametrize("file_format", ["onnx", pytest.param("torchscript", marks=pytest.mark.slow)])
def test_a_model_with_pruning_networks_exports_its_main_networks(tmp_path, checkpoint, pruning, file_format):
    if file_format == "onnx":
        pytest.importorskip("onnx")
    from bgtrain.export import export_checkpoint

    path = attach_pruning(checkpoint, pruning, {}, tmp_path / "pruned.pt")
    plain = export_checkpoint(checkpoint, tmp_path / f"plain.{file_format}", file_format)
    exported = export_checkpoint(path, tmp_path / f"pruned.{file_format}", file_format)
    # The export holds the main networks only: the same graph and metadata as the model without pruning.
    assert {key: value for key, value in exported.items() if not key.startswith("source")} == \
        {key: value for key, value in plain.items() if not key.startswith("source")}


def test_fitted_pruning_networks_follow_the_model(model):
    boards, _ = sample_positions(3000, seed=4, games=64, turns=60)
    settings = PruningTraining(hidden=8, epochs=3, batch_size=64, learning_rate=0.01, heldout=0.2, min_positions=10)
    networks, report = fit_pruning_networks(model, boards, settings, STANDARD)
    assert set(report) == {"contact", "crashed", "race"}
    test = sample_positions(500, seed=5, games=32, turns=40)[0]
    fitted = (cubeless_equity(networks.evaluate(test)) - cubeless_equity(model.evaluate(test))).pow(2).mean()
    untrained = (cubeless_equity(phase_model("tesauro198", 8, seed=7).evaluate(test))
                 - cubeless_equity(model.evaluate(test))).pow(2).mean()
    assert fitted < 0.25 * untrained
    assert report["contact"]["equity_rms"] < float(untrained.sqrt())


def test_cli_prune_fits_attaches_and_eval_uses_it(tmp_path, capsys, checkpoint):
    boards, _ = sample_positions(1000, seed=6, games=32, turns=40)
    directory = tmp_path / "plays"
    directory.mkdir()
    rows = boards.shape[0]
    tensors = {"positions": boards, "targets": torch.full((rows, 5), 0.5), "standard_errors": torch.zeros(rows, 5),
               "zero_ply": torch.full((rows, 5), 0.5), "kinds": torch.zeros(rows, dtype=torch.int8)}
    entry = write_shard(directory, 0, tensors)
    write_manifest(directory, {"format": "bgtrain-dataset", "format_version": 1, "shards": [entry]})
    out = tmp_path / "pruned.pt"
    # A phase with fewer positions than a pruning network needs to rank its plays is refused by name.
    assert main(["prune", str(checkpoint), "--positions", str(directory), "--out", str(out), "--hidden", "4",
                 "--epochs", "1", "--threads", "1"]) == 2
    refusal = capsys.readouterr().err
    assert "position(s), fewer than the 10,000 a phase needs" in refusal and "Traceback" not in refusal
    assert not out.exists()
    assert main(["prune", str(checkpoint), "--positions", str(directory), "--out", str(out), "--hidden", "4",
                 "--epochs", "1", "--threads", "1", "--min-positions", "10"]) == 0
    printed = capsys.readouterr().out
    assert "contact" in printed and "race" in printed and f"wrote {out}" in printed
    assert load_model(out).pruning is not None
    assert main(["eval", "4HPwATDgc/ABMA", "--dice", "31", "--ply", "1", "--model", str(out), "--json"]) == 0
    assert '"play_pruning": {"keep": 5, "more_than": 16}' in capsys.readouterr().out
    assert main(["eval", "4HPwATDgc/ABMA", "--dice", "31", "--ply", "1", "--model", str(out), "--no-pruning",
                 "--json"]) == 0
    assert "play_pruning" not in capsys.readouterr().out
    assert main(["prune", str(checkpoint), "--positions", str(directory), "--out", str(tmp_path / "x.onnx")]) == 2
    assert "named .pt" in capsys.readouterr().err


def plays_dataset(directory, boards: torch.Tensor):
    """A plays dataset of ``boards`` (its labels unused by pruning)."""
    directory.mkdir()
    rows = boards.shape[0]
    tensors = {"positions": boards, "targets": torch.full((rows, 5), 0.5), "standard_errors": torch.zeros(rows, 5),
               "zero_ply": torch.full((rows, 5), 0.5), "kinds": torch.zeros(rows, dtype=torch.int8)}
    write_manifest(directory, {"format": "bgtrain-dataset", "format_version": 1,
                               "shards": [write_shard(directory, 0, tensors)]})
    return directory


def test_a_phase_network_the_model_shares_keeps_that_checkpoints_pruning_network(tmp_path, capsys, model, pruning):
    # The start: the model with pruning networks; the student: its contact and crashed networks retrained
    # (other weights), its race network the start's. No race positions: only keeping race's network can do.
    start = attach_pruning(save_checkpoint(tmp_path / "start.pt", checkpoint_payload(model, Config())), pruning,
                           {"phases": {"race": {"positions": 50_000, "equity_rms": 0.05}}}, tmp_path / "start-pruned.pt")
    retrained = phase_model("tesauro_plus", 12, seed=3)
    student = PhaseNetwork({"contact": retrained.phases["contact"], "crashed": retrained.phases["crashed"],
                            "race": model.phases["race"]})
    student_path = save_checkpoint(tmp_path / "student.pt", checkpoint_payload(student, Config()))
    boards, _ = sample_positions(1000, seed=6, games=32, turns=40)
    boards = boards[position_phases(boards) != PositionKind.RACE]
    directory = plays_dataset(tmp_path / "plays", boards)
    out = tmp_path / "student-pruned.pt"
    fit = ["prune", str(student_path), "--positions", str(directory), "--out", str(out), "--hidden", "4",
           "--epochs", "1", "--threads", "1", "--min-positions", "10"]
    assert main(fit) == 2
    assert "0 race position(s), fewer than the 10" in capsys.readouterr().err and not out.exists()
    assert main([*fit, "--keep", f"race={start}"]) == 0
    assert f"race     kept from {start}" in capsys.readouterr().out
    kept = load_model(out)
    test = sample_positions(200, seed=8, games=16, turns=80)[0]
    assert torch.equal(kept.pruning.phases["race"].evaluate(test), pruning.phases["race"].evaluate(test))
    assert not torch.equal(kept.pruning.phases["contact"].evaluate(test), pruning.phases["contact"].evaluate(test))
    phases = kept.payload[PRUNING]["trained"]["phases"]
    assert phases["race"] == {"positions": 50_000, "equity_rms": 0.05, "kept_from": str(start)}
    assert phases["contact"]["positions"] == int((position_phases(boards) == PositionKind.CONTACT).sum())
    # A network the student does not share is refused by name, as is a checkpoint without pruning networks.
    for keep, message in [(["--keep", f"contact={start}"], "the model's contact network is not"),
                          (["--keep", f"race={student_path}"], "is not a phase model with pruning networks"),
                          (["--keep", "racing=x.pt"], "write PHASE=CHECKPOINT"),
                          (["--keep", f"race={start}", "--keep", f"race={start}"], "already kept")]:
        assert main([*fit, *keep]) == 2
        refusal = capsys.readouterr().err
        assert message in refusal and len(refusal.strip().splitlines()) == 1
    # Every phase kept: no positions needed, and the networks are the start's.
    every = ["prune", str(start), "--out", str(tmp_path / "again.pt"),
             *[word for phase in ("contact", "crashed", "race") for word in ("--keep", f"{phase}={start}")]]
    assert main(every) == 0
    assert torch.equal(load_model(tmp_path / "again.pt").pruning.evaluate(test), pruning.evaluate(test))
    assert main(every[:4] + ["--keep", f"race={start}"]) == 2
    assert "--positions: name the datasets" in capsys.readouterr().err


def test_pruning_networks_travel_to_workers(tmp_path, checkpoint, pruning, positions):
    from bgtrain.distributed.payloads import model_file_recipe, pruning_from_recipe
    from bgtrain.distributed.rollouts import evaluator_from_recipe

    assert pruning_from_recipe(model_file_recipe(checkpoint), "cpu") is None
    path = attach_pruning(checkpoint, pruning, {}, tmp_path / "pruned.pt")
    for in_process in (False, True):
        recipe = model_file_recipe(path, in_process=in_process)
        assert torch.equal(pruning_from_recipe(recipe, "cpu").evaluate(positions), pruning.evaluate(positions))
    worker = evaluator_from_recipe(model_file_recipe(path), "cpu")
    assert worker.play_pruning == PlayPruning()


def test_the_shipped_models_pruned_search_finds_the_opponents_escape_from_a_backgammon():
    # X on roll bears off his last four checkers in one roll only with 22, 33, 44, 55 or 66 (11 leaves one);
    # O escapes both checkers from X's home board with any roll he gets. So X wins a backgammon with 5/36.
    #  +13-14-15-16-17-18------19-20-21-22-23-24-+     O: 147 pips, 0 off
    #  |                  |   | O  O     O  O    |
    #  |                  |   | O  O     O  O    |
    #  |                  |   |                  |
    #  |                  |BAR|                  |     X on roll
    #  |                  |   |                X | XX
    #  | O                |   | O              X | XX
    #  | O        O  O  O |   | O           X  X | XXX
    #  +12-11-10--9--8--7-------6--5--4--3--2--1-+     X: 5 pips, 11 off
    # The 2-ply search values O's replies through the pruning networks' best five: the default's race network
    # fitted on 3,525 positions kept none of the escapes and put the backgammon at 0.95.
    board = decode_position_id("NhswqgEXAAAAAA").unsqueeze(0)
    for model in ("checkpoints/bgtrain-gen9-deep.pt", "checkpoints/bgtrain-gen9.pt"):
        evaluator = Evaluator.from_path(model)
        assert evaluator.pruning_networks is not None
        for ply in (1, 2):
            outcomes = evaluator.probabilities(board, ply)[0]
            assert outcomes[1] == pytest.approx(1.0, abs=1e-4), (model, ply)  # every game a gammon
            assert outcomes[2] == pytest.approx(5 / 36, abs=0.01), (model, ply)


@pytest.mark.parametrize("model", ["checkpoints/bgtrain-gen9-deep.pt", "checkpoints/bgtrain-gen9.pt"])
def test_the_shipped_models_pruned_2_ply_is_the_exact_search_in_races(model):
    # The fast search against its reference: on 30 race positions of the move-error benchmark, valuing only the
    # pruning networks' best five replies must give the exact 2-ply's equities. Race pruning networks fitted on
    # too few positions were off by 0.004 on average and 0.043 at most here.
    decisions = load_decisions()
    boards = decisions.board[(decisions.kind == int(PositionKind.RACE)).nonzero().squeeze(1)[:300:10]]
    pruned = cubeless_equity(Evaluator.from_path(model).probabilities(boards, 2))
    exact = cubeless_equity(Evaluator.from_path(model, play_pruning=None).probabilities(boards, 2))
    difference = (pruned - exact).abs()
    assert float(difference.mean()) < 0.001 and float(difference.max()) < 0.01
