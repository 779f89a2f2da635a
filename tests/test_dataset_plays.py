"""``bgtrain dataset plays``: the positions after a teacher's best plays and some others, labelled.

Checked against a reference that ranks each position's plays on its own, one play at a time."""

from __future__ import annotations

import pytest
import torch
from helpers import compile_mode, tiny_checkpoint, tiny_dataset, tiny_evaluator

from bgtrain.cli import main
from bgtrain.datasets import PlyLabeller, load_datasets, read_manifest
from bgtrain.datasets.generate import GenerationSettings, shard_seed
from bgtrain.datasets.plays import PlaySelection, plays_of
from bgtrain.datasets.relabel import relabel_dataset
from bgtrain.datasets.shards import SHARD_FIELDS
from bgtrain.outcomes import cubeless_equity
from bgtrain.values.evaluator import Evaluator
from engine.board import flip_board
from engine.movegen import legal_afterstates
from engine.position_facts import mover_finished

SOURCE = GenerationSettings(positions=60, shard_size=30, seed=5, games_in_parallel=24, burn_in_turns=10,
                            sample_rate=0.5, select_ply=0)


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):  # small batches: compiling the engine would cost more than it saves
        yield


@pytest.fixture(scope="module")
def teacher() -> Evaluator:
    return tiny_evaluator(1)


@pytest.fixture(scope="module")
def source(tmp_path_factory, teacher):
    directory = tmp_path_factory.mktemp("source")
    tiny_dataset(directory, teacher, SOURCE, ply=0)
    return directory


def reference_ranking(position: torch.Tensor, dice: tuple[int, int], teacher: Evaluator) -> list[tuple]:
    """``(equity, row, board)`` of each play of one position by the teacher's 0-ply, each valued alone,
    best first (ties in generation order)."""
    afterstates = legal_afterstates(position[None], torch.tensor([dice]), teacher.rules)
    valued = []
    for row in range(int(afterstates.counts[0])):
        board = afterstates.boards[row : row + 1]
        equity = float(cubeless_equity(teacher.afterstate_probabilities(board, 0))[0])
        valued.append((equity, row, board))
    return sorted(valued, key=lambda item: (-item[0], item[1]))


def reference_plays(position: torch.Tensor, dice: tuple[int, int], teacher: Evaluator, top: int) -> set[tuple]:
    """The ``top`` best plays of one position by the teacher's 0-ply, as the next side sees the position
    after it (games that the play ends left out)."""
    valued = reference_ranking(position, dice, teacher)
    return {tuple(flip_board(board)[0].tolist()) for _, _, board in valued[:top] if not bool(mover_finished(board)[0])}


def test_the_kept_plays_are_the_teachers_best_after_each_roll_grouped_by_position(source, teacher):
    positions = load_datasets([source]).positions
    kept, groups = plays_of(positions, teacher, PlaySelection(top=2, others=0), seed=11)
    # The rolls are the generator's first draws for a batch under PLAY_CHUNK positions.
    dice = torch.randint(1, 7, (positions.shape[0], 2), generator=torch.Generator().manual_seed(11))
    for index in range(positions.shape[0]):  # group g: the plays of source row g's roll, and only those
        expected = reference_plays(positions[index], tuple(dice[index].tolist()), teacher, 2)
        assert sorted(map(tuple, kept[groups == index].tolist())) == sorted(expected), index
    assert groups.dtype == torch.int32 and bool((groups >= 0).all())
    assert positions.shape[0] < kept.shape[0] <= 2 * positions.shape[0]


def test_every_play_or_the_best_and_about_others_more(source, teacher):
    positions = load_datasets([source]).positions
    dice = torch.randint(1, 7, (positions.shape[0], 2), generator=torch.Generator().manual_seed(3))
    afterstates = legal_afterstates(positions, dice, teacher.rules)
    every, _ = plays_of(positions, teacher, PlaySelection(top=1000, others=0), seed=3)
    assert every.shape[0] == int((~mover_finished(afterstates.boards)).sum())
    best_only, _ = plays_of(positions, teacher, PlaySelection(top=1, others=0), seed=3)
    assert best_only.shape[0] == positions.shape[0]
    more, _ = plays_of(positions, teacher, PlaySelection(top=1, others=2), seed=3)
    extra = (more.shape[0] - best_only.shape[0]) / positions.shape[0]
    assert 1.0 < extra < 3.0  # each of the rest with probability 2 / (count - 1): about 2 a position
    assert torch.equal(more, plays_of(positions, teacher, PlaySelection(top=1, others=2), seed=3)[0])  # seeded


def test_a_plays_dataset_is_labelled_by_the_teacher_and_resumes(tmp_path, source, teacher):
    selection = PlaySelection(top=3, others=1, seed=7)
    labeller = PlyLabeller(teacher, 0, "teacher")
    whole = relabel_dataset(tmp_path / "whole", source, labeller, plays=selection, progress=False)
    data = load_datasets([tmp_path / "whole"])
    sources = read_manifest(source)["shards"]
    first = load_datasets([source]).positions[: sources[0]["positions"]]
    first_plays, first_groups = plays_of(first, teacher, selection, shard_seed(7, 0))
    assert torch.equal(data.positions[: whole["shards"][0]["positions"]], first_plays)
    # The shards keep the groups, made distinct across shards; a relabelling keeps them row for row.
    assert torch.equal(data.groups[: first_plays.shape[0]], first_groups.long())
    assert int(data.groups[first_plays.shape[0]:].min()) > int(first_groups.max())
    relabel_dataset(tmp_path / "again", tmp_path / "whole", labeller, progress=False)
    assert torch.equal(load_datasets([tmp_path / "again"]).groups, data.groups)
    torch.testing.assert_close(data.targets, teacher.probabilities(data.positions, 0).clamp(0, 1))
    assert whole["plays"] == {"top": 3, "others": 1, "seed": 7} and whole["positions"] == len(data)

    relabel_dataset(tmp_path / "resumed", source, labeller, plays=selection, progress=False, stop_after_shards=1)
    relabel_dataset(tmp_path / "resumed", source, labeller, plays=selection, progress=False)
    for name in (*SHARD_FIELDS, "groups"):
        assert torch.equal(getattr(load_datasets([tmp_path / "resumed"]), name), getattr(data, name)), name
    with pytest.raises(ValueError, match="another plays"):
        relabel_dataset(tmp_path / "whole", source, labeller, plays=PlaySelection(top=4), progress=False)
    with pytest.raises(ValueError, match="top must be an integer >= 1"):
        PlaySelection(top=0)


def test_cli_plays(tmp_path, capsys, source):
    out = tmp_path / "plays"
    assert main(["dataset", "plays", str(source), "--out", str(out), "--model", "checkpoints/bgtrain-default.pt",
                 "--top", "2", "--others", "0", "--no-progress"]) == 0
    assert "the plays of the positions of" in capsys.readouterr().out
    manifest = read_manifest(out)
    assert manifest["plays"]["top"] == 2 and manifest["labeller"] == {"kind": "ply", "ply": 0,
                                                                         "model": "checkpoints/bgtrain-default.pt"}
    assert main(["dataset", "plays", str(source), "--out", str(tmp_path / "x"), "--top", "0"]) == 2
    assert "top must be an integer >= 1" in capsys.readouterr().err



def test_a_rival_keeps_only_the_rolls_where_it_plays_otherwise_with_its_play_among_them(source, teacher):
    from bgtrain.arena.agents import PubevalAgent
    from bgtrain.datasets.plays import rival_choices

    positions = load_datasets([source]).positions
    kept, groups = plays_of(positions, teacher, PlaySelection(top=2, others=0, rival="pubeval"), seed=11)
    dice = torch.randint(1, 7, (positions.shape[0], 2), generator=torch.Generator().manual_seed(11))
    rival, parted = PubevalAgent(teacher.rules), 0
    for index in range(positions.shape[0]):  # one position at a time: the rival's play and the teacher's best
        position, roll = positions[index][None], torch.tensor([dice[index].tolist()])
        afterstates = legal_afterstates(position, roll, teacher.rules)
        best = reference_ranking(positions[index], tuple(roll[0].tolist()), teacher)[0][1]
        chosen = int(rival_choices(rival, position, roll, afterstates)[0])
        expected = set()
        if chosen != best:
            parted += 1
            expected = reference_plays(positions[index], tuple(roll[0].tolist()), teacher, 2)
            play = afterstates.boards[chosen : chosen + 1]
            if not bool(mover_finished(play)[0]):
                expected.add(tuple(flip_board(play)[0].tolist()))
        assert sorted(map(tuple, kept[groups == index].tolist())) == sorted(expected), index
    assert 0 < parted < positions.shape[0]  # where the two always or never parted, this would prove nothing


def test_a_random_rival_draws_from_the_shards_own_stream(source, teacher):
    # The plays of shard k are a function of its positions and seed alone, so a resumed run remakes them.
    positions = load_datasets([source]).positions
    selection = PlaySelection(top=1, others=0, rival="random")
    first = plays_of(positions, teacher, selection, seed=12)
    again = plays_of(positions, teacher, selection, seed=12)
    assert all(torch.equal(a, b) for a, b in zip(first, again)) and first[0].shape[0] > 0
    other = plays_of(positions, teacher, selection, seed=13)
    assert not torch.equal(first[0], other[0])


def test_plays_with_a_rival_from_the_command_line(tmp_path, source):
    model = tiny_checkpoint(tmp_path / "model.pt")
    out = tmp_path / "parted"
    assert main(["dataset", "plays", str(source), "--out", str(out), "--model", str(model), "--top", "2",
                 "--others", "0", "--rival", "pubeval", "--no-progress"]) == 0
    data = load_datasets([out])
    assert read_manifest(out)["plays"]["rival"] == "pubeval" and 0 < len(data)
    assert int(torch.unique(data.groups, return_counts=True)[1].min()) >= 1
    assert int(torch.unique(data.groups, return_counts=True)[1].max()) >= 2  # the best and the rival's
    with pytest.raises(ValueError, match="rival must name an agent"):
        PlaySelection(rival=" ")
