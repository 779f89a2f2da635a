"""scripts/generation.py and bgtrain.generation: the tiny plan end to end (configs/generation/tiny.toml),
stopped after a stage and resumed without redoing what finished, a stage that was running resumed, a changed
plan run again from its first changed stage (or refused where it would make a finished dataset again), a
plan's mistakes refused in one line, and --executor ray given to the commands that take it."""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path

import pytest
import torch

from bgtrain.cli import main as bgtrain_main
from bgtrain.datasets import load_datasets
from bgtrain.directory_lock import directory_lock
from bgtrain.generation.reading import load_plan, plan_from_dict
from bgtrain.generation.runner import run_generation as run_plan
from bgtrain.generation.runner import stage_names
from bgtrain.generation.stages import Context, RunOptions, StageFailed, plan_stages
from bgtrain.generation.state import STATE_FILE, file_sha256
from bgtrain.model.loading import load_model
from bgtrain.model.phases import PhaseNetwork

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "configs" / "generation" / "tiny.toml"


def tiny_data(directory: Path) -> dict:
    data = tomllib.loads(TINY.read_text())
    data["generation"].update(directory=str(directory), model=str(directory / "tiny.pt"),
                              lineage=str(directory / "tiny.json"))
    return data


def load_script():
    spec = importlib.util.spec_from_file_location("generation_script", ROOT / "scripts" / "generation.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


class Recorder:
    """Runs each bgtrain command in this process (or only records it), keeping the words of each."""

    def __init__(self, really: bool = True) -> None:
        self.commands: list[list[str]] = []
        self.really = really

    def __call__(self, words: list[str]) -> int:
        self.commands.append(list(words))
        return bgtrain_main(words) if self.really else 0

    def names(self) -> list[str]:
        return [" ".join(words[:2]) for words in self.commands]


def run(plan, launch, lines=None, **options):
    return run_plan(plan, str(TINY), launch, RunOptions(threads=1), echo=(lines.append if lines is not None else print),
                    **options)


@pytest.fixture(scope="module")
def generation(tmp_path_factory):
    """The tiny generation, run in two starts: stopped after its dataset, then to the end."""
    directory = tmp_path_factory.mktemp("generation") / "tiny"
    plan = plan_from_dict(tiny_data(directory))
    first, second, lines = Recorder(), Recorder(), []
    state = run(plan, first, lines, stop_after="dataset:selfplay-s1")
    assert [record["name"] for record in state.stages] == ["dataset:selfplay-s1"]
    run(plan, second, lines)
    return plan, directory, first, second, lines


def test_tiny_generation_end_to_end(generation):
    _plan, directory, first, second, lines = generation
    assert first.names() == ["dataset generate"]
    # The second start skipped the finished dataset and ran every other command once.
    assert second.names() == ["dataset relabel", "dataset relabel", "dataset select",
                              "train --config", "train --config", "train --config", "prune " + str(directory / "model.pt"),
                              "benchmark " + str(directory / "model-pruned.pt"),
                              *["bench " + str(directory / "model-pruned.pt")] * 3]
    assert any(line.startswith("$ bgtrain dataset generate --model checkpoints/bgtrain-default.pt") for line in lines)
    assert any(line.startswith("$ python -c ") and "write_member" in line for line in lines)
    assert "[dataset:selfplay-s1] finished earlier" in "\n".join(lines)

    shipped = load_model(directory / "tiny.pt")
    model = shipped.model
    assert isinstance(model, PhaseNetwork)
    # The phase networks as combined, with pruning networks beside them.
    combined = load_model(directory / "model.pt")
    assert combined.pruning is None and shipped.pruning is not None
    assert all(torch.equal(ours, theirs) for ours, theirs in
               zip(model.state_dict().values(), combined.model.state_dict().values(), strict=True))
    assert model.phases["race"].model_args()["encoder"] == "gnubg_race"  # started from the distilled member
    lineage = json.loads((directory / "tiny.json").read_text())
    assert lineage["sha256"] == file_sha256(directory / "tiny.pt")
    assert lineage["self_play_model"]["sha256"] == file_sha256(ROOT / "checkpoints" / "bgtrain-default.pt")
    assert lineage["datasets"]["selfplay-s1"]["manifest"]["positions"] == 400
    assert lineage["relabelled"]["relabelled-s1"]["manifest"]["relabelled"]["kinds"] == ["crashed", "race"]
    selected = lineage["selected"]["disputed-s1"]["manifest"]
    assert selected["settings"]["selected"]["from"] == str(directory / "datasets" / "selfplay-p1")
    assert 0 < selected["positions"] < 400 and selected["labeller"]["ply"] == 1
    resolved_contact = lineage["networks"]["contact"]["resolved_config"]["supervised"]["datasets"]
    assert resolved_contact[1] == str(directory / "datasets" / "disputed-s1")
    order = lineage["stage_order"]
    assert order.index("relabel:selfplay-p1") < order.index("select:disputed-s1") < order.index("train:contact")
    assert set(lineage["networks"]) == {"contact", "crashed", "race"}
    for phase, network in lineage["networks"].items():
        assert network["epochs"] == 2 and network["sha256"] == file_sha256(directory / "runs" / f"tiny-{phase}" / "final.pt")
    assert "write_member" in lineage["networks"]["race"]["init_commands"][0]
    resolved = lineage["networks"]["race"]["resolved_config"]["supervised"]
    assert resolved["kinds"] == ["race"] and resolved["init_from"] == str(directory / "init" / "race.pt")
    pruning = lineage["pruning"]
    assert pruning["commands"][0].startswith(f"bgtrain prune {directory / 'model.pt'} --positions ")
    assert pruning["trained"]["settings"]["hidden"] == 4 and pruning["trained"]["phases"]["contact"]["positions"] > 0
    rates = lineage["benchmark"]["results"]["error_rates"]
    assert {rate["position_class"] for rate in rates} == {"race"} and len(rates) == 2
    bench = {row["opponent"]: row for row in lineage["head_to_head"]}
    assert set(bench) == {"checkpoints/bgtrain-default.pt", "pubeval", "gnubg:0ply"}
    gnubg = importlib.util.find_spec("gnubg_nn") or importlib.util.find_spec("gnubg")
    for opponent, row in bench.items():
        if opponent.startswith("gnubg") and not gnubg:
            assert "gnubg-nn" in row["skipped"]
            continue
        assert row["result"]["games"] == 8 and -3 <= row["points_per_game"] <= 3 and row["interval95"] > 0
    assert [stage["name"] for stage in lineage["stages"]] == lineage["stage_order"][: len(lineage["stages"])]


def test_a_finished_generation_runs_nothing_again(generation):
    plan, _directory, *_ = generation
    again = Recorder(really=False)
    state = run(plan, again)
    assert again.commands == []
    assert state.running is None and [stage["name"] for stage in state.stages] == stage_names(plan, RunOptions(threads=1))


def test_the_stage_that_was_running_resumes_and_later_stages_run_again(generation):
    plan, directory, *_ = generation
    state_file = directory / STATE_FILE
    state = json.loads(state_file.read_text())
    names = [stage["name"] for stage in state["stages"]]
    # As if killed while the race network trained: its record and every later one not yet written.
    state["stages"] = state["stages"][: names.index("train:race")]
    state["running"] = "train:race"
    (directory / "runs" / "tiny-race" / "final.pt").unlink()
    state_file.write_text(json.dumps(state))
    recorder = Recorder()
    run(plan, recorder, stop_after="prune")
    assert recorder.commands[0][:3] == ["train", "--resume", str(directory / "runs" / "tiny-race" / "latest.pt")]
    # Combine is a library call, pruning its model the one later command; nothing before train:race ran again.
    assert recorder.names()[1:] == ["prune " + str(directory / "model.pt")]
    # An output changed behind the state's back: that stage and every later one run again.
    (directory / "results" / "benchmark.json").write_text("{}")
    recorder = Recorder(really=False)
    run(plan, recorder, stop_after="benchmark")
    assert recorder.names() == ["benchmark " + str(directory / "model-pruned.pt")]


@pytest.fixture
def edited(generation):
    """The finished tiny generation's plan data, to edit; its state file and training configs are put
    back afterwards."""
    _plan, directory, *_ = generation
    kept = {path: path.read_text() for path in [directory / STATE_FILE, *(directory / "configs").glob("*.toml")]}
    yield directory, tiny_data(directory)
    for path, text in kept.items():
        path.write_text(text)


def test_a_plan_changed_after_its_datasets_runs_again_from_the_first_changed_stage(edited):
    directory, data = edited
    data["pruning"]["hidden"] = 5
    data["head_to_head"][0]["games"] = 10
    recorder, lines = Recorder(really=False), []
    state = run(plan_from_dict(data), recorder, lines)
    # Datasets, trainings and the combined model kept; the pruning and every later stage run again.
    assert recorder.names() == ["prune " + str(directory / "model.pt"),
                                "benchmark " + str(directory / "model-pruned.pt"),
                                *["bench " + str(directory / "model-pruned.pt")] * 3]
    assert recorder.commands[0][recorder.commands[0].index("--hidden") + 1] == "5"
    assert recorder.commands[2][recorder.commands[2].index("--games") + 1] == "10"
    assert "finished stages kept, running prune and every later stage again" in "\n".join(lines)
    assert "[train:contact] finished earlier" in "\n".join(lines)
    saved = json.loads((directory / STATE_FILE).read_text())
    assert saved["plan_sha256"] == plan_from_dict(data).digest
    assert [stage["name"] for stage in saved["stages"]] == [stage["name"] for stage in state.stages]
    # Run again, the edited plan is the directory's own: nothing runs.
    again = Recorder(really=False)
    run(plan_from_dict(data), again)
    assert again.commands == []


def test_a_changed_training_runs_again_with_its_new_settings(edited):
    directory, data = edited
    data["phases"]["crashed"]["epochs"] = 3
    recorder = Recorder(really=False)
    run(plan_from_dict(data), recorder, stop_after="train:crashed")
    assert recorder.names() == ["train --config"]
    assert "epochs = 3" in (directory / "configs" / "crashed.toml").read_text()


@pytest.mark.parametrize(("change", "message"), [
    (lambda data: data["relabel"][0].update(labeller="ply:1"),
     r"relabel:relabelled-s1 would be made again \(its settings changed\): move \S+relabelled-s1 away"),
    (lambda data: data["datasets"].append({**data["datasets"][0], "name": "selfplay-s2", "seed": 2}),
     r"relabel:relabelled-s1 would be made again \(dataset:selfplay-s2 comes before it and must run\)"),
    (lambda data: data["generation"].update(name="another"), "holds the state of another generation plan"),
])
def test_a_changed_plan_that_would_make_a_finished_dataset_again_is_refused(edited, change, message):
    _directory, data = edited
    change(data)
    recorder = Recorder(really=False)
    with pytest.raises(ValueError, match=message):
        run(plan_from_dict(data), recorder)
    assert recorder.commands == []


def test_a_state_whose_plan_cannot_be_read_is_another_plans(edited):
    directory, data = edited
    state = json.loads((directory / STATE_FILE).read_text())
    state.update(plan={"generation": {}}, plan_sha256="0" * 64)
    (directory / STATE_FILE).write_text(json.dumps(state))
    with pytest.raises(ValueError, match="another generation plan"):
        run(plan_from_dict(data), Recorder(really=False))


def test_a_failed_command_names_its_stage(tmp_path):
    plan = plan_from_dict(tiny_data(tmp_path / "gen"))
    with pytest.raises(StageFailed, match="dataset:selfplay-s1 stopped with status 130") as failed:
        run(plan, lambda words: 130)
    assert failed.value.status == 130
    assert json.loads((tmp_path / "gen" / STATE_FILE).read_text())["running"] == "dataset:selfplay-s1"


def test_executor_goes_to_generate_relabel_and_bench_only(tmp_path):
    plan = plan_from_dict(tiny_data(tmp_path / "gen"))
    options = RunOptions(threads=1, executor=("--executor", "ray", "--address", "auto"))
    recorder = Recorder(really=False)
    context = Context(plan, options, recorder, echo=lambda line: None)
    stages = {stage.name: stage for stage in plan_stages(plan, options)}
    for name in ("dataset:selfplay-s1", "relabel:relabelled-s1", "select:disputed-s1", "prune", "benchmark",
                 "bench:pubeval"):
        stages[name].execute(context, False)
    with_ray = {" ".join(words[:2]): "--executor" in words for words in recorder.commands}
    assert with_ray == {"dataset generate": True, "dataset relabel": True, "dataset select": False,
                        "prune " + str(tmp_path / "gen" / "model.pt"): False,
                        "benchmark " + str(tmp_path / "gen" / "model-pruned.pt"): False,
                        "bench " + str(tmp_path / "gen" / "model-pruned.pt"): True}
    # The lineage's commands are those of one machine, as a user would type them.
    assert all("--executor" not in words for stage in stages.values() for words in stage.commands)


def test_a_dataset_made_from_another_runs_after_its_source(tmp_path):
    data = tiny_data(tmp_path / "gen")
    # Written before the selection it relabels: it still runs after it.
    data["relabel"].insert(0, {"name": "disputed-p2", "source": "disputed-s1", "labeller": "ply:2"})
    plan = plan_from_dict(data)
    names = [stage.name for stage in plan_stages(plan, RunOptions())]
    assert names[:5] == ["dataset:selfplay-s1", "relabel:relabelled-s1", "relabel:selfplay-p1", "select:disputed-s1",
                         "relabel:disputed-p2"]
    select = {stage.name: stage for stage in plan_stages(plan, RunOptions())}["select:disputed-s1"]
    datasets = tmp_path / "gen" / "datasets"
    assert select.commands == (["bgtrain", "dataset", "select", str(datasets / "selfplay-p1"), "--out",
                                str(datasets / "disputed-s1"), "--parts", "1", "--threshold", "0.03", "--keep", "0.5",
                                "--shard-size", "100", "--seed", "1"],)
    # A selection between two teachers waits for both: here the second is made from another selection.
    data["select"].insert(0, {"name": "teachers-s1", "source": "selfplay-p1", "against": "disputed-p2",
                              "threshold": 0.1, "keep": 0.0})
    stages = {stage.name: stage for stage in plan_stages(plan_from_dict(data), RunOptions())}
    names = list(stages)
    assert names.index("relabel:disputed-p2") < names.index("select:teachers-s1")
    assert stages["select:teachers-s1"].commands[0][6:10] == ["--parts", "1", "--against", str(datasets / "disputed-p2")]
    data["select"][0]["against"] = "nowhere"
    with pytest.raises(ValueError, match=r"\[\[select\]\] teachers-s1: source 'nowhere' is no dataset given before it"):
        plan_from_dict(data)
    del data["select"][0]
    data["select"][0]["source"] = "disputed-p2"  # a cycle: neither can be made first
    with pytest.raises(ValueError, match=r"\[\[relabel\]\] disputed-p2: source 'disputed-s1' is no dataset given before it"):
        plan_from_dict(data)
    # A relabel of a dataset's first shards waits for that dataset; a selection reads whole datasets.
    data["select"][0]["source"] = "selfplay-p1"
    data["relabel"][0]["source"] = "disputed-s1@2"
    stages = {stage.name: stage for stage in plan_stages(plan_from_dict(data), RunOptions())}
    names = list(stages)
    assert names.index("select:disputed-s1") < names.index("relabel:disputed-p2")
    assert stages["relabel:disputed-p2"].commands[0][3] == str(datasets / "disputed-s1@2")
    data["select"][0]["source"] = "selfplay-p1@2"
    with pytest.raises(ValueError, match=r"\[select\] disputed-s1: 'selfplay-p1@2': a selection reads whole datasets"):
        plan_from_dict(data)
    data["select"][0].update(source="selfplay-p1", keep=2.0)
    with pytest.raises(ValueError, match="disputed-s1: select: keep must be a probability in \\[0, 1\\]"):
        plan_from_dict(data)


@pytest.mark.parametrize(("change", "message"), [
    (lambda data: data["generation"].update(colour="white"), "unknown key 'colour' in [generation]"),
    (lambda data: data["phases"]["race"].update(epochs="many"), "[phases.race] epochs: expected int"),
    (lambda data: data["phases"].pop("crashed"), "[phases.crashed] is missing"),
    (lambda data: data["phases"]["contact"].update(datasets=["nowhere"]), "'nowhere' is no dataset of this plan"),
    (lambda data: data["datasets"][0].update(labeller="ply2"), "must be ply:N, rollout:TRIALS[:truncate=K][:luck=pruned][:batch=B] or gnubg:N"),
    (lambda data: data["phases"]["contact"].update(lr_schedule="wavy"), "[supervised] lr_schedule"),
    (lambda data: data.update(extra={}), "unknown section [extra]"),
    (lambda data: data["phases"]["contact"].update(init_from="network:race"), "name a network trained before"),
    (lambda data: data["pruning"].update(positions=["elsewhere@2"]), "[pruning] positions: 'elsewhere' is no dataset"),
    (lambda data: data["pruning"].update(hidden=0), "[pruning] hidden, epochs and min_positions must be >= 1"),
    (lambda data: data["pruning"].update(min_positions=0), "[pruning] hidden, epochs and min_positions must be >= 1"),
    (lambda data: data["phases"]["race"].update(train=False, init_from="", init_member=-1),
     "[phases.race] train = false keeps its start: give init_from"),
    (lambda data: data["pruning"].update(keep=["racing"]), "[pruning] keep: 'racing' is no phase"),
    (lambda data: data["pruning"].update(keep=["race"]), "[pruning] keep: [phases.race] must be one network kept"),
    (lambda data: (data["phases"]["race"].update(train=False), data["pruning"].update(keep=["race", "race"])),
     "[pruning] keep: a phase is named twice"),
    (lambda data: (data["phases"]["race"].update(train=False), data["pruning"].update(keep=["race"], positions=[])),
     "[pruning] positions: name the datasets the contact, crashed pruning networks are fitted on"),
])
def test_plan_mistakes_are_refused_by_name(tmp_path, change, message):
    data = tiny_data(tmp_path)
    change(data)
    with pytest.raises(ValueError) as refused:
        plan_from_dict(data)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_softmax_move_choice_term_reaches_the_training_and_plans_without_it_keep_their_digest(tmp_path):
    data = tiny_data(tmp_path)
    plain = plan_from_dict(data)
    assert "sibling_loss" not in plain.to_dict()["phases"]["contact"][0]
    assert plain.phase_training("contact", 0).supervised.sibling_loss == "mse"
    data["phases"]["contact"].update(sibling_loss="softmax", sibling_temperature=0.05)
    plan = plan_from_dict(data)
    supervised = plan.phase_training("contact", 0).supervised
    assert (supervised.sibling_loss, supervised.sibling_temperature) == ("softmax", 0.05)
    assert plan.digest != plain.digest
    data["phases"]["contact"]["sibling_loss"] = "hinge"
    with pytest.raises(ValueError, match="sibling_loss = 'hinge': must be one of 'mse', 'softmax'"):
        plan_from_dict(data)


def test_the_draw_by_position_reaches_the_training_and_plans_without_it_keep_their_digest(tmp_path):
    data = tiny_data(tmp_path)
    plain = plan_from_dict(data)
    assert "heldout_by" not in plain.to_dict()["phases"]["contact"][0]
    assert plain.phase_training("contact", 0).supervised.heldout_by == "row"
    data["phases"]["contact"]["heldout_by"] = "position"
    plan = plan_from_dict(data)
    assert plan.phase_training("contact", 0).supervised.heldout_by == "position"
    assert plan.phase_training("race", 0).supervised.heldout_by == "row"
    assert plan.digest != plain.digest
    data["phases"]["contact"]["heldout_by"] = "group"
    with pytest.raises(ValueError, match="heldout_by = 'group': must be one of 'row', 'position'"):
        plan_from_dict(data)


def test_a_phase_kept_from_a_checkpoint_keeps_its_pruning_network(tmp_path):
    data = tiny_data(tmp_path)
    digest = plan_from_dict(data).digest
    prune = {stage.name: stage for stage in plan_stages(plan_from_dict(data), RunOptions())}["prune"]
    assert "--keep" not in prune.commands[0]
    data["phases"]["race"].update(train=False)
    unkept = plan_from_dict(data)
    assert "keep" not in unkept.to_dict()["pruning"]  # plans that keep none keep their digests
    data["pruning"]["keep"] = ["race"]
    plan = plan_from_dict(data)
    assert plan.digest not in (digest, unkept.digest)
    words = {stage.name: stage for stage in plan_stages(plan, RunOptions())}["prune"].commands[0]
    assert words[words.index("--keep") + 1] == "race=checkpoints/bgtrain-distilled.pt"


def test_the_script_says_a_mistake_in_one_line_with_status_2(tmp_path, capsys):
    script = load_script()
    config = tmp_path / "bad.toml"
    config.write_text(TINY.read_text().replace('name = "tiny"', 'name = "tiny"\ncolour = "white"', 1))
    assert script.main(["--config", str(config)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "unknown key 'colour' in [generation]" in error
    assert script.main(["--config", str(TINY), "--stop-after", "nothing", "--in-process"]) == 2
    assert "no such stage" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["gen9", "distilled", "gen8"])
def test_the_real_plans_read_with_every_network_trained_and_shipped(name):
    plan = load_plan(ROOT / "configs" / "generation" / f"{name}.toml")
    names = stage_names(plan, RunOptions())
    assert {f"train:{key}" for _, _, key in plan.networks()} | {"combine", "benchmark", "ship"} <= set(names)
    if name == "gen8":  # three networks a phase; the crashed ones start from networks trained before them
        assert [key for _, _, key in plan.networks()][3:6] == ["crashed.0", "crashed.1", "crashed.2"]
        assert plan.start("crashed", 1) == str(plan.generation.home / "runs" / "gen8-crashed.0" / "final.pt")
    else:  # students start from a phase model's members: generation 8's, or the default's for generation 9
        assert {f"init:{key}" for _, member, key in plan.networks() if member == 0} <= set(names)
        start = {"gen9": "checkpoints/bgtrain-distilled.pt", "distilled": "checkpoints/bgtrain-supervised.pt"}[name]
        assert all(plan.phases[phase][0].init_from == start for phase in plan.phases)
    if name == "gen9":  # 1-ply self-play, selected, relabelled at 2-ply: each step after its source
        assert names.index("dataset:d2p1-all-s901") < names.index("select:sel-s901") < names.index("relabel:d2p2-sel-s901")


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "generation").glob("*.toml")), ids=lambda path: path.stem)
def test_every_plan_in_configs_reads_and_plans_its_stages(path):
    plan = load_plan(path)  # refuses a dataset, source or network that the plan does not make
    names = stage_names(plan, RunOptions())
    assert names[-1] == "ship" and names.count("combine") == 1
    assert {f"train:{key}" for phase, member, key in plan.networks() if plan.phases[phase][member].train} <= set(names)


def test_generation_9_attempt_7_is_taught_by_attempt_6s_model():
    attempt6 = load_plan(ROOT / "configs" / "generation" / "gen9_attempt6.toml")
    attempt7 = load_plan(ROOT / "configs" / "generation" / "gen9_attempt7.toml")
    teacher = attempt6.generation.model
    assert attempt7.generation.labelling_model == attempt7.generation.self_play_model == teacher
    assert all(attempt7.phases[phase][0].init_from == teacher for phase in attempt7.phases)
    assert all(entry.labeller == "ply:1" for entry in (*attempt7.datasets, *attempt7.plays))


def test_generation_9_attempt_8_is_taught_by_attempt_7_with_its_pruning_networks():
    attempt8 = load_plan(ROOT / "configs" / "generation" / "gen9_attempt8.toml")
    teacher = "checkpoints/bgtrain-iterated.pt"
    assert attempt8.generation.labelling_model == attempt8.generation.self_play_model == teacher
    assert all(attempt8.phases[phase][0].init_from == teacher for phase in attempt8.phases)
    assert load_model(ROOT / teacher).pruning is not None  # its 1-ply labels cost what the default's do
    assert "prune" in stage_names(attempt8, RunOptions())


def test_generation_9_attempt_14_teaches_the_two_teacher_model_by_itself_and_gnu_on_every_position():
    attempt14 = load_plan(ROOT / "configs" / "generation" / "gen9_attempt14.toml")
    teacher = "checkpoints/bgtrain-two-teachers.pt"
    assert attempt14.generation.labelling_model == attempt14.generation.self_play_model == teacher
    assert all(attempt14.phases[phase][0].init_from == teacher for phase in attempt14.phases)
    own = {entry.name for entry in (*attempt14.datasets, *attempt14.plays)}
    second = {entry.source: entry.name for entry in attempt14.relabel if entry.labeller == "gnubg:1"}
    assert set(second) == own  # every row our 1-ply labels, GNU Backgammon's 1-ply labels again
    for phase, (settings, *_) in attempt14.phases.items():
        taught = set(settings.datasets)
        assert {second[name] for name in taught & own} <= taught, phase  # each label beside its twin


def test_one_process_a_generation(tmp_path):
    plan = plan_from_dict(tiny_data(tmp_path / "gen"))
    with (directory_lock(tmp_path / "gen", "generation.lock", "scripts/generation.py"),
          pytest.raises(ValueError, match="in use by another scripts/generation.py process")):
        run(plan, Recorder(really=False))


def test_a_command_in_a_child_process_gives_its_status(tmp_path):
    assert load_script().in_subprocess(["dataset", "info", str(tmp_path / "none")]) == 2


def test_a_plays_dataset_runs_bgtrain_dataset_plays(tmp_path):
    data = tiny_data(tmp_path / "gen")
    data["plays"] = [{"name": "plays-s1", "source": "selfplay-s1", "top": 4, "seed": 9}]
    data["phases"]["contact"]["datasets"] = ["selfplay-s1", "plays-s1"]
    plan = plan_from_dict(data)
    stage = {stage.name: stage for stage in plan_stages(plan, RunOptions())}["plays:plays-s1"]
    recorder = Recorder(really=False)
    context = Context(plan, RunOptions(), recorder, echo=lambda line: None)
    datasets = tmp_path / "gen" / "datasets"
    expected = ["dataset", "plays", str(datasets / "selfplay-s1"), "--out", str(datasets / "plays-s1"),
                "--model", "checkpoints/bgtrain-default.pt", "--labeller", "ply:0", "--top", "4", "--others", "3.0",
                "--seed", "9", "--no-progress"]
    assert stage.commands == (["bgtrain", *expected],)
    stage.execute(context, False)
    assert recorder.commands == [expected]
    digest = plan.digest
    data["plays"][0]["rival"] = "gnubg:0ply"
    rival = plan_from_dict(data)
    words = {stage.name: stage for stage in plan_stages(rival, RunOptions())}["plays:plays-s1"].commands[0]
    assert words[-3:] == ["--rival", "gnubg:0ply", "--no-progress"]
    assert rival.digest != digest  # a plan without a rival keeps the digest it had before rivals existed
    assert "rival" not in plan.to_dict()["plays"][0] and rival.to_dict()["plays"][0]["rival"] == "gnubg:0ply"
    del data["plays"][0]["rival"]
    data["plays"][0]["source"] = "plays-s1"
    with pytest.raises(ValueError, match="no dataset given before it"):
        plan_from_dict(data)
    data["plays"][0].update(source="selfplay-s1", top=0)
    with pytest.raises(ValueError, match="top must be >= 1"):
        plan_from_dict(data)


def test_a_dataset_against_an_opponent_runs_generate_with_it(tmp_path):
    data = tiny_data(tmp_path / "gen")
    plan = plan_from_dict(data)
    data["datasets"][0]["opponent"] = "gnubg:0ply"
    against = plan_from_dict(data)
    words = {stage.name: stage for stage in plan_stages(against, RunOptions())}["dataset:selfplay-s1"].commands[0]
    assert words[words.index("--opponent") + 1] == "gnubg:0ply"
    plain = {stage.name: stage for stage in plan_stages(plan, RunOptions())}["dataset:selfplay-s1"].commands[0]
    assert "--opponent" not in plain
    # A plan of self-play datasets keeps the digest it had before opponents existed.
    assert "opponent" not in plan.to_dict()["datasets"][0] and against.digest != plan.digest


def test_gnubg_opponents_are_skipped_without_its_bindings(tmp_path, monkeypatch):
    plan = plan_from_dict(tiny_data(tmp_path / "gen"))
    stages = {stage.name: stage for stage in plan_stages(plan, RunOptions())}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert "pip install gnubg-nn" in stages["bench:gnubg-0ply"].skip()
    assert stages["bench:pubeval"].skip() == ""


def test_a_damaged_state_file_is_refused_in_one_line(tmp_path):
    plan = plan_from_dict(tiny_data(tmp_path / "gen"))
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / STATE_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="not a generation state file") as refused:
        run(plan, Recorder(really=False))
    assert "\n" not in str(refused.value)


def _networks_only(generation, tmp_path):
    """A tiny plan with no dataset, benchmark or bench stage, and the finished generation's datasets
    folder, whose datasets its networks name by path."""
    _plan, finished, *_ = generation
    data = tiny_data(tmp_path / "gen")
    data.update(datasets=[], relabel=[], select=[], head_to_head=[], benchmark={"enabled": False}, pruning={})
    return data, finished / "datasets"


def test_a_phase_of_several_networks_is_an_ensemble(generation, tmp_path):
    """[[phases.crashed]] twice: two trainings, one started from the plan's contact network, one from a
    member of a phase model, combined into the phase's ensemble (on the finished generation's datasets, named by path: no dataset stage)."""
    data, datasets = _networks_only(generation, tmp_path)
    data["phases"]["contact"]["datasets"] = [str(datasets / "selfplay-s1")]
    data["phases"]["race"]["datasets"] = [str(datasets / "relabelled-s1")]
    crashed = {**data["phases"]["crashed"], "datasets": [str(datasets / "relabelled-s1")],
               "init_from": "network:contact"}
    data["phases"]["crashed"] = [crashed, {**crashed, "seed": 7, "encoder": "gnubg_contact", "hidden": [512],
                                           "init_from": "checkpoints/bgtrain-distilled.pt", "init_member": 0,
                                           "epochs": 1}]
    plan = plan_from_dict(data)
    assert stage_names(plan, RunOptions()) == ["init:crashed.1", "init:race", "train:contact", "train:crashed.0",
                                               "train:crashed.1", "train:race", "combine", "ship"]
    run(plan, Recorder())
    model = load_model(tmp_path / "gen" / "tiny.pt").model
    members = model.phases["crashed"].members
    assert [member.model_args()["hidden"] for member in members] == [[8], [512]]
    lineage = json.loads((tmp_path / "gen" / "tiny.json").read_text())
    assert set(lineage["networks"]) == {"contact", "crashed.0", "crashed.1", "race"}
    assert lineage["networks"]["crashed.1"]["phase"] == "crashed" and lineage["networks"]["crashed.1"]["epochs"] == 1
    assert lineage["networks"]["crashed.0"]["start"] == str(tmp_path / "gen" / "runs" / "tiny-contact" / "final.pt")


def test_a_phase_kept_untrained_is_its_starts_network_in_the_model(generation, tmp_path):
    """train = false: the race network is the distilled model's, as it is (no training, no datasets), while
    the contact and crashed ones are trained; the lineage says which."""
    data, datasets = _networks_only(generation, tmp_path)
    data["phases"]["contact"]["datasets"] = [str(datasets / "selfplay-s1")]
    data["phases"]["crashed"]["datasets"] = [str(datasets / "relabelled-s1")]
    source = "checkpoints/bgtrain-distilled.pt"
    data["phases"]["race"] = {"train": False, "init_from": source, "init_member": 0}
    plan = plan_from_dict(data)
    assert stage_names(plan, RunOptions()) == ["init:race", "train:contact", "train:crashed", "combine", "ship"]
    run(plan, Recorder())
    race = load_model(tmp_path / "gen" / "tiny.pt").model.phases["race"]
    kept = load_model(ROOT / source).model.phases["race"]
    assert race.model_args() == kept.model_args()
    assert all(torch.equal(ours, theirs) for ours, theirs in zip(race.state_dict().values(), kept.state_dict().values()))
    networks = json.loads((tmp_path / "gen" / "tiny.json").read_text())["networks"]
    assert networks["race"]["trained"] is False and networks["contact"]["trained"] is True
    assert networks["race"]["sha256"] == file_sha256(plan.init_path("race"))


DEEPENED_SOURCE = "checkpoints/bgtrain-distilled.pt"


def _deepened_contact_plan(generation, tmp_path, **contact):
    """A plan whose contact network starts from the distilled model's contact network deepened as ``contact``
    says (one epoch on a self-play dataset), crashed trained, race kept: its data, datasets and stages."""
    data, datasets = _networks_only(generation, tmp_path)
    data["phases"]["contact"] = {**data["phases"]["contact"], "datasets": [str(datasets / "selfplay-s1")],
                                 "encoder": "gnubg_contact", "activation": "sigmoid-relu", "init_from": DEEPENED_SOURCE,
                                 "init_member": 0, "deepen": 1, "epochs": 1, **contact}
    data["phases"]["crashed"]["datasets"] = [str(datasets / "relabelled-s1")]
    data["phases"]["race"] = {"train": False, "init_from": DEEPENED_SOURCE, "init_member": 0}
    plan = plan_from_dict(data)
    return data, datasets, plan, {stage.name: stage for stage in plan_stages(plan, RunOptions())}


def test_a_phase_started_from_a_deepened_member_trains_the_deeper_network(generation, tmp_path):
    """deepen = 1: the contact network starts from the distilled model's contact network with one more hidden
    layer that passes it through (its function at the start), and the model holds the trained deeper one."""
    data, datasets, plan, stages = _deepened_contact_plan(generation, tmp_path, hidden=[512, 512])
    assert "deeper=1" in stages["init:contact"].commands[0][-1]
    run(plan, Recorder())
    start = load_model(plan.init_path("contact")).model
    member = load_model(ROOT / DEEPENED_SOURCE).model.phases["contact"]
    board = load_datasets([str(datasets / "selfplay-s1")]).positions[:64]
    torch.testing.assert_close(start.evaluate(board), member.evaluate(board), rtol=0, atol=1e-6)
    contact = load_model(tmp_path / "gen" / "tiny.pt").model.phases["contact"]
    assert contact.hidden_sizes == (512, 512) and contact.activation_name == "sigmoid-relu"
    assert not torch.equal(contact.hidden_layers[1].weight, start.hidden_layers[1].weight)  # trained
    networks = json.loads((tmp_path / "gen" / "tiny.json").read_text())["networks"]
    assert networks["contact"]["init_from"].endswith("1 hidden layer(s) deeper")
    data["phases"]["race"] = {**data["phases"]["race"], "init_member": -1, "deepen": 1}
    with pytest.raises(ValueError, match=r"\[phases.race\] deepen = 1: .* init_member names"):
        plan_from_dict(data)
    data["phases"]["race"] = {**data["phases"]["race"], "init_member": 0, "deepen": 0, "deepen_width": 128}
    with pytest.raises(ValueError, match=r"\[phases.race\] deepen_width = 128: .* give deepen too"):
        plan_from_dict(data)


def test_a_narrower_deepened_start_is_written_from_the_phase_seed_and_named_in_the_lineage(generation, tmp_path):
    """deepen_width: the init stage writes the member with a narrower random layer under the phase's seed (its
    command says so), and training starts from it."""
    _, _, plan, stages = _deepened_contact_plan(generation, tmp_path, hidden=[512, 8], deepen_width=8, seed=31)
    assert "deeper=1, width=8, seed=31" in stages["init:contact"].commands[0][-1]
    run(plan, Recorder())
    start = load_model(plan.init_path("contact")).model
    member = load_model(ROOT / DEEPENED_SOURCE).model.phases["contact"]
    assert start.hidden_sizes == (512, 8)
    assert torch.equal(start.hidden_layers[0].weight, member.hidden_layers[0].weight)
    contact = load_model(tmp_path / "gen" / "tiny.pt").model.phases["contact"]
    assert contact.hidden_sizes == (512, 8) and not torch.equal(contact.output_layer.weight, start.output_layer.weight)
    networks = json.loads((tmp_path / "gen" / "tiny.json").read_text())["networks"]
    assert networks["contact"]["init_from"].endswith("1 hidden layer(s) deeper, 8 wide, random")


def test_a_widened_start_keeps_the_members_units_and_is_named_in_the_lineage(generation, tmp_path):
    """widen: the init stage gives the member more first-layer units (its own kept) before the narrower random
    layer of deepen_width, under the phase's seed, and the lineage says so; widen needs init_member."""
    data, _, plan, stages = _deepened_contact_plan(generation, tmp_path, hidden=[520, 8], widen=520, deepen_width=8,
                                                   seed=31)
    assert "deeper=1, width=8, seed=31, wider=520" in stages["init:contact"].commands[0][-1]
    run(plan, Recorder())
    start = load_model(plan.init_path("contact")).model
    member = load_model(ROOT / DEEPENED_SOURCE).model.phases["contact"]
    assert start.hidden_sizes == (520, 8) and member.hidden_sizes == (512,)
    assert torch.equal(start.hidden_layers[0].weight[:512], member.hidden_layers[0].weight)
    assert start.hidden_layers[0].weight[512:].abs().sum() > 0  # the new units see the inputs from the start
    assert load_model(tmp_path / "gen" / "tiny.pt").model.phases["contact"].hidden_sizes == (520, 8)
    networks = json.loads((tmp_path / "gen" / "tiny.json").read_text())["networks"]
    assert networks["contact"]["init_from"].endswith("widened to 520 units, 1 hidden layer(s) deeper, 8 wide, random")
    data["phases"]["race"] = {**data["phases"]["race"], "init_member": -1, "widen": 1024}
    with pytest.raises(ValueError, match=r"\[phases.race\] widen = 1024: .* init_member names"):
        plan_from_dict(data)


def test_a_network_out_of_the_model_is_a_step_a_later_one_starts_from(tmp_path):
    """A distillation's first round: trained, started from by the next network, left out of the model."""
    data = tiny_data(tmp_path / "gen")
    first = {**data["phases"]["crashed"], "in_model": False}
    data["phases"]["crashed"] = [first, {**first, "in_model": True, "init_from": "network:crashed.0", "seed": 9}]
    plan = plan_from_dict(data)
    stages = {stage.name: stage for stage in plan_stages(plan, RunOptions())}
    assert {"train:crashed.0", "train:crashed.1"} <= set(stages)
    combine = " ".join(stages["combine"].commands[0])
    assert "tiny-crashed.1/final.pt" in combine and "tiny-crashed.0" not in combine
    assert plan.start("crashed", 1).endswith("tiny-crashed.0/final.pt")
    data["phases"]["crashed"][1]["in_model"] = False
    with pytest.raises(ValueError, match=r"\[phases.crashed\]: every network has in_model = false"):
        plan_from_dict(data)
