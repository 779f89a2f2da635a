"""Configs: the shipped files load, unknown keys and wrong types are named, overrides are typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bgtrain.training.config import Config, config_from_dict, config_to_dict, load_config, to_toml_text

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.mark.parametrize("name", sorted(path.stem for path in CONFIGS.glob("*.toml")))
def test_shipped_configs_load_and_round_trip(name: str, tmp_path: Path) -> None:
    config = load_config(CONFIGS / f"{name}.toml")
    assert config.run.name == name
    assert config_from_dict(config_to_dict(config)) == config
    written = tmp_path / "resolved.toml"
    written.write_text(to_toml_text(config))
    assert load_config(written) == config


def test_default_values() -> None:
    config = load_config(CONFIGS / "default.toml")
    assert config.model.encoder == "tesauro198" and config.model.hidden == (80,)
    assert config.selfplay.games_in_parallel == 4096 and config.train.minibatch_size == 512
    assert config.train.td_lambda == 0.7 and config.train.method == "lambda_return"
    assert config.evaluation.opponent == "pubeval" and config.evaluation.games == 2000
    assert config.run_dir == Path("runs/default")
    assert config.states_per_update == 4096 * config.train.update_every_turns
    quick = load_config(CONFIGS / "quick.toml")
    assert quick.train.total_games < config.train.total_games
    assert quick.train.td_lambda == 0.7  # omitted keys take the defaults
    assert load_config() == Config()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_unknown_key_is_named_with_its_section_and_the_valid_keys(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"learning_rat'.*\[train\].*learning_rate") as error:
        load_config(write(tmp_path, "[train]\nlearning_rat = 0.1\n"))
    assert "td_lambda" in str(error.value)
    with pytest.raises(ValueError, match=r"\[trian\]"):
        load_config(write(tmp_path, "[trian]\nlearning_rate = 0.1\n"))
    with pytest.raises(ValueError, match=r"'hiden'.*\[model\]"):
        load_config(overrides=["--model.hiden", "[40]"])


def test_wrong_types_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\[train\] learning_rate: expected float, got str"):
        load_config(write(tmp_path, '[train]\nlearning_rate = "fast"\n'))
    with pytest.raises(ValueError, match=r"\[selfplay\] games_in_parallel: expected int, got bool"):
        load_config(write(tmp_path, "[selfplay]\ngames_in_parallel = true\n"))
    with pytest.raises(ValueError, match=r"\[selfplay\] games_in_parallel: expected int, got float"):
        load_config(write(tmp_path, "[selfplay]\ngames_in_parallel = 51.2\n"))
    with pytest.raises(ValueError, match=r"\[model\] hidden\[1\]: expected int"):
        load_config(write(tmp_path, '[model]\nhidden = [80, "x"]\n'))
    with pytest.raises(ValueError, match=r"\[train\] learning_rate"):
        load_config(overrides=["--train.learning_rate", "fast"])


def test_bad_values_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\[train\] optimizer = 'adamw'"):
        load_config(overrides=["train.optimizer=adamw"])
    with pytest.raises(ValueError, match="td_lambda"):
        load_config(overrides=["--train.td_lambda", "1.5"])
    with pytest.raises(ValueError, match="activation"):
        load_config(write(tmp_path, '[model]\nactivation = "gelu"\n'))
    with pytest.raises(ValueError, match="games"):
        load_config(overrides=["--evaluation.games", "2001"])


def test_overrides_are_typed() -> None:
    config = load_config(
        CONFIGS / "default.toml",
        [
            "--train.learning_rate", "0.05",
            "--selfplay.games_in_parallel", "1024",
            "model.hidden=[40, 40]",
            "--run.device", "cuda",  # bare text for a text field
            "--run.name=quoted",
            "--train.lr_schedule", '"cosine"',  # or a TOML string
            "--checkpoint.every_seconds", "60",  # an int for a float field
        ],
    )  # fmt: skip
    assert config.train.learning_rate == 0.05
    assert config.selfplay.games_in_parallel == 1024
    assert config.model.hidden == (40, 40)
    assert config.run.device == "cuda" and config.run.name == "quoted"
    assert config.train.lr_schedule == "cosine"
    assert config.checkpoint.every_seconds == 60.0 and isinstance(config.checkpoint.every_seconds, float)
    # everything else is as in the file
    assert config.train.td_lambda == 0.7


def test_override_syntax_errors() -> None:
    with pytest.raises(ValueError, match="no value"):
        load_config(overrides=["--train.learning_rate"])
    with pytest.raises(ValueError, match="section.key"):
        load_config(overrides=["--learning_rate", "0.1"])


def test_configs_are_frozen() -> None:
    config = Config()
    with pytest.raises(AttributeError):
        config.train.learning_rate = 1.0  # type: ignore[misc]
