"""Environment process configuration: config_init() < run YAML < command line, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hermes_rl_mcp.sdk.run_config import ConfigError, resolve
from hermes_rl_mcp.sdk.runtime import main

ENV_DIR = Path(__file__).resolve().parent.parent / "environments"
sys.path.insert(0, str(ENV_DIR))

from arithmetic import ArithmeticEnv  # noqa: E402
from navigation import NavigationEnv  # noqa: E402


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_command_line_beats_yaml_beats_config_init(tmp_path: Path) -> None:
    defaults, _ = ArithmeticEnv.config_init()
    path = write(tmp_path, {"env": {"group_size": 6, "steps_per_eval": 7}})
    settings = resolve(ArithmeticEnv, path, ["--env.group_size", "8"])
    assert settings.env.group_size == 8  # command line
    assert settings.env.steps_per_eval == 7  # YAML
    assert settings.env.total_steps == defaults.total_steps == 250  # config_init(), not the class default 1000
    assert settings.env.exploration_rate == 0.1


def test_values_are_parsed_by_field_type(tmp_path: Path) -> None:
    settings = resolve(
        NavigationEnv,
        None,
        ["--env.discount_factor=0.5", "--env.use_wandb", "false", "--env.wandb_name", "123", "--env.min_batch_allocation", "null"],
    )
    assert settings.env.discount_factor == 0.5
    assert settings.env.use_wandb is False
    assert settings.env.wandb_name == "123"  # a str field keeps the text as typed
    assert settings.env.min_batch_allocation is None


def test_run_section_points_at_the_servers_and_openai_section_wins(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "run": {"dir": str(tmp_path / "r"), "api_url": "http://127.0.0.1:9100", "policy_url": "http://127.0.0.1:9101/v1"},
            "trainer": {"temperature": 0.7},
        },
    )
    settings = resolve(ArithmeticEnv, path, [])
    assert settings.env.rollout_server_url == "http://127.0.0.1:9100"
    assert [s.base_url for s in settings.servers] == ["http://127.0.0.1:9101/v1"]
    assert settings.servers[0].model_name == "hermes-rl-local"
    assert settings.temperature == 0.7
    assert settings.run_dir == tmp_path / "r"

    path = write(tmp_path, {"openai": {"base_url": "http://127.0.0.1:9200/v1", "model_name": "m"}})
    settings = resolve(ArithmeticEnv, path, ["--openai.timeout", "5"])
    assert (settings.servers[0].base_url, settings.servers[0].model_name, settings.servers[0].timeout) == ("http://127.0.0.1:9200/v1", "m", 5)
    assert settings.temperature == 1.0  # no trainer section


@pytest.mark.parametrize(
    ("args", "yaml_env", "expected"),
    [
        (["--env.group_siz", "8"], {}, ["env.group_siz", "valid fields", "group_size"]),
        (["--env.group_size", "many"], {}, ["env.group_size", "'many'", "int"]),
        (["--env.exploration_rate", "1.5"], {}, ["env.exploration_rate", "<= 1"]),
        (["--env.discount_factor", "0"], {}, ["env.discount_factor", "> 0"]),
        ([], {"max_turns": -3}, ["env.max_turns", "YAML env section", ">= 1"]),
        ([], {"no_such_field": 1}, ["env.no_such_field", "not a field"]),
        (["--openai.no_such", "1"], {}, ["--openai.no_such", "valid fields", "base_url"]),
        (["--trainer.lr", "1"], {}, ["--trainer.lr"]),
    ],
)
def test_bad_fields_and_values_exit_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], yaml_env: dict, expected: list[str]) -> None:
    path = write(tmp_path, {"env": yaml_env})
    assert main(NavigationEnv, ["serve", "--config", str(path), *args]) == 2
    err = capsys.readouterr().err
    for fragment in expected:
        assert fragment in err, (fragment, err)


def test_missing_or_broken_yaml_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        resolve(ArithmeticEnv, tmp_path / "nope.yaml", [])
    broken = tmp_path / "broken.yaml"
    broken.write_text("env: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        resolve(ArithmeticEnv, broken, [])


def test_environment_file_is_runnable_and_reports_bad_fields() -> None:
    out = subprocess.run(
        [sys.executable, str(ENV_DIR / "reverse_text.py"), "evaluate", "--env.group_size", "0"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 2
    assert "env.group_size" in out.stderr and "> 0" in out.stderr
