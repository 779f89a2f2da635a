"""Supervised training: it fits a tiny dataset, resumes exactly from an epoch checkpoint, starts from a
TD checkpoint, and runs from the command line."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import compile_mode, random_boards

from bgtrain.cli import main
from bgtrain.commands.train import train
from bgtrain.datasets import load_datasets
from bgtrain.datasets.shards import FORMAT_VERSION, MANIFEST_FORMAT, write_manifest, write_shard
from bgtrain.model.loading import load_model
from bgtrain.training.config import load_config
from bgtrain.training.schedule import supervised_learning_rate as learning_rate_at
from engine.position_kinds import position_kinds


@pytest.fixture(autouse=True)
def op_by_op():
    with compile_mode("never"):
        yield


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory):
    """64 positions with arbitrary but fixed targets: a dataset to overfit."""
    directory = tmp_path_factory.mktemp("tiny")
    positions = random_boards(64, seed=1)
    targets = torch.rand(64, 5, generator=torch.Generator().manual_seed(0)).sort(dim=1, descending=True).values
    tensors = {"positions": positions, "targets": targets, "standard_errors": torch.zeros(64, 5),
               "zero_ply": targets, "kinds": position_kinds(positions).to(torch.int8)}
    entry = write_shard(directory, 0, tensors)
    write_manifest(directory, {"format": MANIFEST_FORMAT, "format_version": FORMAT_VERSION,
                               "labeller": {"kind": "test"}, "source_model": "", "shards": [entry]})
    return directory


def config_for(dataset, out, *overrides):
    return load_config("configs/supervised_gen1.toml", [
        f"supervised.datasets=['{dataset}']", f"run.out_dir={out.parent}", f"run.name={out.name}",
        "model.encoder=tesauro_plus", "model.hidden=[32]", "supervised.kinds=['contact','crashed','race','bearoff']",
        "supervised.heldout_fraction=0.0", "evaluation.games=2", "checkpoint.keep_last=0", *overrides])


def test_overfits_a_tiny_dataset(tmp_path, tiny_dataset):
    config = config_for(tiny_dataset, tmp_path / "fit", "supervised.epochs=150", "supervised.batch_size=32", "supervised.checkpoint_every_epochs=1000",
                        "supervised.learning_rate=2e-2", "supervised.loss=mse", "supervised.weight_decay=0.0",
                        "evaluation.benchmark=false")  # 150 benchmark scorings would be most of the test's time
    final = train(config, progress=False)
    loaded = load_model(final)
    network, payload = loaded.model, loaded.payload
    data = load_datasets(tiny_dataset)
    error = (network(data.positions) - data.targets).abs().mean()
    start = (data.targets - data.targets.mean(0)).abs().mean()
    assert error < 0.3 * start, (float(error), float(start))
    assert payload["counters"]["epochs"] == 150 and payload["counters"]["steps"] == 150 * 2
    assert payload["datasets"][0]["positions"] == 64


def test_resumes_exactly_from_an_epoch_checkpoint(tmp_path, tiny_dataset):
    config = config_for(tiny_dataset, tmp_path / "whole", "supervised.epochs=3", "supervised.batch_size=16")
    whole = load_model(train(config, progress=False)).model
    middle = tmp_path / "whole" / "checkpoints" / "epoch_0001.pt"
    resumed_config = config_for(tiny_dataset, tmp_path / "resumed", "supervised.epochs=3", "supervised.batch_size=16")
    loaded = load_model(train(resumed_config, resume=middle, progress=False))
    resumed, payload = loaded.model, loaded.payload
    for name, tensor in whole.state_dict().items():
        assert torch.equal(tensor, resumed.state_dict()[name]), name
    assert payload["counters"]["epochs"] == 3


def test_starts_from_a_td_checkpoint(tmp_path, tiny_dataset):
    config = config_for(tiny_dataset, tmp_path / "init", "supervised.epochs=1", "model.hidden=[128]",
                        "supervised.init_from=checkpoints/bgtrain-plus.pt", "supervised.learning_rate=1e-9")
    network = load_model(train(config, progress=False)).model
    shipped = load_model("checkpoints/bgtrain-plus.pt").model
    torch.testing.assert_close(network.output_layer.bias, shipped.output_layer.bias, atol=1e-5, rtol=0)
    wrong = config_for(tiny_dataset, tmp_path / "wrong", "supervised.init_from=checkpoints/bgtrain-plus.pt")
    with pytest.raises(ValueError, match="set \\[model\\] to match"):
        train(wrong, progress=False)


def test_schedules():
    config = load_config(None, ["supervised.lr_schedule=step", "supervised.lr_step_epochs=2",
                                "supervised.lr_step_factor=0.5", "supervised.learning_rate=1.0"])
    assert [learning_rate_at(config, step, 10) for step in (0, 19, 20, 40)] == [1.0, 1.0, 0.5, 0.25]
    cosine = load_config(None, ["supervised.epochs=2", "supervised.lr_final_fraction=0.1"])
    assert learning_rate_at(cosine, 0, 10) == pytest.approx(1e-3)
    assert learning_rate_at(cosine, 20, 10) == pytest.approx(1e-4)


def test_cli_smoke(tmp_path, tiny_dataset, capsys):
    out = tmp_path / "cli"
    code = main(["train", "--config", "configs/supervised_gen1.toml", "--out", str(out), "--no-progress",
                 f"supervised.datasets=['{tiny_dataset}']", "supervised.epochs=2", "evaluation.games=2",
                 "model.hidden=[8]", "supervised.kinds=['contact','crashed','race','bearoff']"])
    assert code == 0
    loaded = load_model(out / "final.pt")
    network, payload = loaded.model, loaded.payload
    assert network.encoder.name == "gnubg_contact" and "pubeval" in payload["strength"]
    assert (out / "tensorboard").is_dir()
    assert main(["train", "--config", "configs/supervised_gen1.toml", "--out", str(tmp_path / "none"),
                 "supervised.datasets=[]"]) == 2
    assert "datasets is empty" in capsys.readouterr().err


def test_logs_the_benchmark_error_rates(tmp_path, tiny_dataset):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = config_for(tiny_dataset, tmp_path / "bench", "supervised.epochs=1", "evaluation.benchmark=true",
                        "evaluation.benchmark_decisions=20")
    train(config, progress=False)
    events = EventAccumulator(str(tmp_path / "bench" / "tensorboard")).Reload()
    tags = set(events.Tags()["scalars"])
    assert {"eval/error_rate/contact", "eval/error_rate/crashed", "eval/error_rate/race"} <= tags
    assert events.Scalars("eval/error_rate/contact")[0].value > 0


def test_an_epoch_checkpoint_resumes_in_its_own_run_and_overwrite_clears_epochs(tmp_path, tiny_dataset, capsys):
    """``bgtrain train --resume RUN/checkpoints/epoch_0001.pt`` continues in RUN (not in ``checkpoints/``)
    to the weights of an uninterrupted run; ``--overwrite`` removes the old run's epoch checkpoints."""
    from bgtrain.cli import main
    from bgtrain.training.run_directory import resume_directory

    run = tmp_path / "run"
    config = config_for(tiny_dataset, run, "supervised.epochs=2", "supervised.batch_size=16")
    whole = load_model(train(config, progress=False)).model
    middle = run / "checkpoints" / "epoch_0001.pt"
    assert resume_directory(middle) == run
    assert main(["train", "--resume", str(middle), "--no-progress"]) == 0
    assert not (run / "checkpoints" / "latest.pt").exists() and not (run / "checkpoints" / "checkpoints").exists()
    resumed = load_model(run / "final.pt").model
    for name, tensor in whole.state_dict().items():
        assert torch.equal(tensor, resumed.state_dict()[name]), name
    assert sorted(path.name for path in (run / "checkpoints").iterdir()) == ["epoch_0001.pt", "epoch_0002.pt"]
    # A new run over it with --overwrite leaves none of the old run's checkpoints behind.
    assert main(["train", "--config", "configs/supervised_gen1.toml", "--out", str(run), "--overwrite",
                 "--no-progress", f"supervised.datasets=['{tiny_dataset}']", "model.encoder=tesauro_plus",
                 "model.hidden=[32]", "supervised.kinds=['contact','crashed','race','bearoff']",
                 "supervised.heldout_fraction=0.0", "evaluation.games=2", "supervised.epochs=1",
                 "supervised.checkpoint_every_epochs=5"]) == 0
    assert sorted(path.name for path in (run / "checkpoints").iterdir()) == ["epoch_0001.pt"]
    assert load_model(run / "final.pt").payload["counters"]["epochs"] == 1


def test_heldout_fraction_is_bounded_and_zero_records_no_heldout_loss(tmp_path, tiny_dataset):
    # S7: 0 recorded a NaN held-out loss; S9: 0.999 ended in a ZeroDivisionError traceback.
    final = train(config_for(tiny_dataset, tmp_path / "none", "supervised.epochs=1"), progress=False)
    assert "heldout_loss" not in torch.load(final, weights_only=False)["strength"]
    for fraction in ("0.999", "0.6", "-0.1", "nan"):
        with pytest.raises(ValueError, match=r"heldout_fraction = .*: must be in \[0, 0.5\]"):
            config_for(tiny_dataset, tmp_path / "x", f"supervised.heldout_fraction={fraction}")
    final = train(config_for(tiny_dataset, tmp_path / "half", "supervised.epochs=1", "supervised.heldout_fraction=0.5"),
                  progress=False)
    held = torch.load(final, weights_only=False)["strength"]["heldout_loss"]
    assert math.isfinite(held) and held > 0
