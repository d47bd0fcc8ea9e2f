"""Selecting and editing config: sandboxed introspection, validation, locks, persistence."""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

import pytest

from hermes_rl_mcp.core import config
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.core.errors import (
    IntrospectionFailed,
    InvalidValue,
    LockedField,
    NoSelection,
    SelectionDamaged,
    UnknownEnvironment,
    UnknownField,
)
from hermes_rl_mcp.settings import BUNDLED_ENV_DIR

ENV_TEMPLATE = '''
{prelude}
from pydantic import Field
from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig

class ToyConfig(BaseEnvConfig):
    difficulty: int = Field(3, ge=1, le=10, description="How hard.")
    label: str = "toy"
    hub_token: str = "hf-default-secret-token"

class Toy(BaseEnv):
    """A toy environment."""
    name = "toy"
    env_config_cls = ToyConfig

    @classmethod
    def config_init(cls):
        {init_body}
        return ToyConfig(group_size=6, difficulty=5), [APIServerConfig(api_key="sk-live-secret-value")]

    async def setup(self): ...
    async def get_next_item(self): ...
    async def evaluate(self, *a, **k): ...
'''


def toy(write_env, prelude: str = "", init_body: str = "pass") -> ControlPlane:
    write_env("toy.py", ENV_TEMPLATE.format(prelude=prelude, init_body=init_body))
    return ControlPlane(env_dirs=[write_env.root])


def values(control: ControlPlane) -> dict:
    current = control.current_config()
    return {**{name: f.value for name, f in current.editable.items()}, **current.locked}


def test_select_reads_fields_defaults_and_config_init(write_env) -> None:
    control = toy(write_env)
    result = control.select_environment("toy")
    assert result.environment.name == "toy" and result.backend == "local"
    assert result.wandb_name.startswith("toy-")
    fields = control.current_config().editable
    difficulty = fields["env.difficulty"]
    assert difficulty.class_default == 3 and difficulty.default == 5 and difficulty.value == 5
    assert difficulty.type == {"type": "integer", "minimum": 1, "maximum": 10}
    assert difficulty.description == "How hard."
    assert fields["env.group_size"].class_default == 4 and fields["env.group_size"].value == 6
    assert fields["env.wandb_name"].value == result.wandb_name and fields["env.wandb_name"].edited
    assert "trainer.learning_rate" in fields and "run.backend" in fields


def test_secrets_from_config_init_never_surface(write_env) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    dumped = control.current_config().model_dump_json() + json.dumps(control.run_document().to_data())
    assert "sk-live-secret-value" not in dumped and "hf-default-secret-token" not in dumped
    assert control.current_config().editable["env.hub_token"].value == "***redacted***"
    assert "sk-live-secret-value" not in (Path(os.environ["HERMES_RL_HOME"]) / "selection.json").read_text()


def test_environment_printing_to_stdout_is_harmless(write_env) -> None:
    control = toy(write_env, prelude='print("hello from import"); import sys; sys.stdout.write("{not json")',
                  init_body='print("noise in config_init")')
    control.select_environment("toy")
    assert values(control)["env.difficulty"] == 5


def test_crashing_environment_gives_a_clear_error(write_env) -> None:
    control = toy(write_env, prelude='raise RuntimeError("dataset missing")')
    with pytest.raises(IntrospectionFailed, match="RuntimeError: dataset missing"):
        control.select_environment("toy")
    with pytest.raises(NoSelection):
        control.current_config()


def test_environment_exiting_at_import_gives_a_clear_error(write_env) -> None:
    control = toy(write_env, prelude="import sys; sys.exit(3)")
    with pytest.raises(IntrospectionFailed, match="SystemExit: 3"):
        control.select_environment("toy")


def test_hanging_environment_times_out_and_its_processes_are_killed(write_env, tmp_path, monkeypatch) -> None:
    pid_file = tmp_path / "child.pid"
    prelude = (
        "import os, subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)"
    )
    control = toy(write_env, prelude=prelude)
    monkeypatch.setattr(config, "INTROSPECTION_TIMEOUT_S", 2.0)
    started = time.monotonic()
    with pytest.raises(IntrospectionFailed, match="did not finish importing within 2 s"):
        control.select_environment("toy")
    assert time.monotonic() - started < 8
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild), "a process spawned by the environment outlived the timeout"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_unknown_environment_lists_the_valid_names(write_env) -> None:
    control = toy(write_env)
    with pytest.raises(UnknownEnvironment, match="Available: toy"):
        control.select_environment("toyy")


@pytest.mark.parametrize(
    ("field", "value", "error", "message"),
    [
        ("env.difficulty", "lots", InvalidValue, '"lots" is not a number. It accepts an integer >= 1 and <= 10'),
        ("group_size", -5, InvalidValue, "-5 is not > 0"),
        ("difficulty", 11, InvalidValue, "11 is not <= 10"),
        ("difficulty", 2.5, InvalidValue, "2.5 is not a whole number"),
        ("difficulty", 10**30, InvalidValue, "is not <= 10"),
        ("difficulty", True, InvalidValue, "a boolean is not a number"),
        ("trainer.learning_rate", float("nan"), InvalidValue, "nan is not a finite number"),
        ("use_wandb", "maybe", InvalidValue, "is not true or false"),
        ("eval_handling", "SOMETIMES", InvalidValue, 'one of "STOP_TRAIN", "LIMIT_TRAIN", "NONE"'),
        ("label", "x" * 20_000, InvalidValue, "longer than 10000"),
        ("dificulty", 4, UnknownField, "Did you mean: difficulty, env.difficulty"),
        ("env.nonsense_field", 1, UnknownField, 'unknown field "env.nonsense_field"'),
        ("seed", 1, UnknownField, "ambiguous: it exists as env.seed, trainer.seed"),
        ("rollout_server_url", "http://evil:1", LockedField, 'locked by the local profile (bundled local profile) at "<assigned per run>"'),
        ("env.tokenizer_name", "gpt2", LockedField, 'at "hermes-rl/char"'),
        ("run.backend", "gpu", InvalidValue, 'one of "local", "tinker"'),
    ],
)
def test_bad_edits_are_refused_with_what_is_valid_and_change_nothing(write_env, field, value, error, message) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    before = values(control)
    with pytest.raises(error) as caught:
        control.edit_config(field, value)
    assert message in str(caught.value)
    assert values(control) == before


def test_good_edits_coerce_like_pydantic(write_env) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    assert control.edit_config("difficulty", "7").new_value == 7
    assert control.edit_config("trainer.learning_rate", 1).new_value == 1
    assert control.edit_config("use_wandb", "false").new_value is False
    assert control.edit_config("wandb_name", None).new_value is None
    assert control.edit_config("min_batch_allocation", "0.25").new_value == 0.25
    result = control.edit_config("env.difficulty", 7)
    assert result.old_value == 7 and "already set" in result.notes[0]
    current = values(control)
    assert current["env.difficulty"] == 7 and current["env.use_wandb"] is False
    assert control.run_document().to_data()["env"]["difficulty"] == 7


def test_selection_and_edits_survive_a_restart(write_env) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    control.edit_config("difficulty", 9)
    restarted = ControlPlane(env_dirs=[write_env.root])
    assert restarted.list_environments().selected == "toy"
    assert values(restarted)["env.difficulty"] == 9


def test_reselecting_keeps_edits_and_switching_clears_them(write_env) -> None:
    write_env("other.py", ENV_TEMPLATE.format(prelude="", init_body="pass").replace('"toy"', '"other"').replace("class Toy(", "class Other("))
    control = toy(write_env)
    control.select_environment("toy")
    control.edit_config("difficulty", 9)
    again = control.select_environment("toy")
    assert values(control)["env.difficulty"] == 9 and "kept 1 edit" in again.notes[-1]
    switched = control.select_environment("other")
    assert "env.difficulty" in switched.notes[0] and values(control)["env.difficulty"] == 5


def test_changed_source_is_reintrospected_and_invalid_edits_dropped(write_env) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    control.edit_config("difficulty", 9)
    path = write_env.root / "toy.py"
    path.write_text(path.read_text().replace("le=10", "le=8"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    fields = control.current_config().editable
    assert fields["env.difficulty"].type["maximum"] == 8
    assert fields["env.difficulty"].value == 5  # the edit 9 no longer fits and was dropped


def test_backend_switch_brings_the_tinker_locks(write_env) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    control.edit_config("trainer.hidden_size", 32)
    result = control.edit_config("run.backend", "tinker")
    assert any("trainer.hidden_size" in note for note in result.notes)
    current = control.current_config()
    locked = current.locked
    assert current.backend == "tinker"
    assert locked["env.tokenizer_name"] == "Qwen/Qwen3-8B" and locked["env.total_steps"] == 2500
    assert locked["trainer.lora_rank"] == 32 and locked["env.max_token_length"] == 8192
    with pytest.raises(LockedField, match="at 2500"):
        control.edit_config("total_steps", 10)


def test_operator_profile_replaces_the_bundled_one(write_env, tmp_path, monkeypatch) -> None:
    profile = tmp_path / "ops.yaml"
    profile.write_text("backend: local\nlocked:\n  env.group_size: 2\n  env.rollout_server_url: <assigned per run>\n")
    monkeypatch.setenv("HERMES_RL_PROFILE_LOCAL", str(profile))
    control = toy(write_env)
    control.select_environment("toy")
    with pytest.raises(LockedField, match=f"{profile}"):
        control.edit_config("group_size", 8)
    assert values(control)["env.group_size"] == 2


def test_corrupt_state_file_does_not_wedge_the_server(write_env) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    state = Path(os.environ["HERMES_RL_HOME"]) / "selection.json"
    state.write_text("{ not json")
    with pytest.raises(SelectionDamaged, match="moved to"):
        control.current_config()
    assert list(state.parent.glob("selection.corrupt-*"))
    control.select_environment("toy")
    assert values(control)["env.difficulty"] == 5


def test_bundled_environments_all_introspect() -> None:
    control = ControlPlane(env_dirs=[BUNDLED_ENV_DIR])
    for name in ("reverse_text", "arithmetic", "navigation"):
        control.select_environment(name)
        current = {name: f.value for name, f in control.current_config().editable.items()}
        assert current["env.exploration_rate"] is not None and not math.isnan(current["env.exploration_rate"])
    assert {"env.discount_factor"} <= set(current)


def test_environment_trainer_defaults_become_the_trainer_fields_init_values(write_env) -> None:
    source = ENV_TEMPLATE.format(prelude="", init_body="pass").replace(
        '    name = "toy"\n',
        '    name = "toy"\n    trainer_defaults = {"learning_rate": 0.01, "batch_size": "lots", "no_such_field": 1}\n',
    )
    write_env("toy.py", source)
    control = ControlPlane(env_dirs=[write_env.root])
    control.select_environment("toy")
    fields = control.current_config().editable
    assert fields["trainer.learning_rate"].class_default == 0.003
    assert fields["trainer.learning_rate"].default == fields["trainer.learning_rate"].value == 0.01
    assert fields["trainer.batch_size"].value == 64  # an unusable suggestion is ignored
    assert control.run_document().trainer.learning_rate == 0.01
    control.edit_config("learning_rate", 0.02)
    assert control.run_document().trainer.learning_rate == 0.02


def test_refusals_repeat_only_a_short_prefix_of_huge_input(write_env) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    for field, value in [("group_size", "x" * 1_000_000), ("no_such_" + "z" * 100_000, 1)]:
        with pytest.raises((InvalidValue, UnknownField)) as caught:
            control.edit_config(field, value)
        assert len(str(caught.value)) < 400 and "characters)" in str(caught.value)
    with pytest.raises(InvalidValue, match="longer than"):  # the bound is named, not "not a string"
        control.edit_config("env.wandb_name", "y" * 1_000_000)


def test_a_damaged_selection_file_is_reported_with_where_it_went(write_env, isolated_state: Path) -> None:
    control = toy(write_env)
    control.select_environment("toy")
    control.edit_config("group_size", 6)
    (isolated_state / "selection.json").write_bytes(b"\x00garbage{")
    with pytest.raises(SelectionDamaged) as caught:
        control.current_config()
    moved = re.search(r"moved to (\S+);", str(caught.value))
    assert moved and Path(moved[1]).read_bytes() == b"\x00garbage{"  # kept for inspection
    assert "select an environment again" in str(caught.value)
    with pytest.raises(NoSelection):  # told once; afterwards there is simply no selection
        control.current_config()
    selected = control.select_environment("toy")
    assert not any("damaged" in note for note in selected.notes)


def test_the_config_read_follows_every_file_it_comes_from(write_env, tmp_path, monkeypatch) -> None:
    """Read after read, the config shows another server's edit, a changed source and a changed profile."""
    reader, writer = toy(write_env), toy(write_env)
    reader.select_environment("toy")
    for _ in range(3):  # repeated reads, as an agent makes them
        assert values(reader)["env.difficulty"] == 5
    writer.edit_config("difficulty", 7)  # another server process on the same state directory
    assert values(reader)["env.difficulty"] == 7

    path = write_env.root / "toy.py"
    path.write_text(path.read_text().replace('label: str = "toy"', 'label: str = "toy"\n    speed: int = 4'))
    assert values(reader)["env.speed"] == 4

    profile = tmp_path / "ops.yaml"
    profile.write_text("backend: local\nlocked:\n  env.group_size: 2\n")
    monkeypatch.setenv("HERMES_RL_PROFILE_LOCAL", str(profile))
    assert values(reader)["env.group_size"] == 2
    profile.write_text("backend: local\nlocked:\n  env.group_size: 3\n")
    assert values(reader)["env.group_size"] == 3
    monkeypatch.delenv("HERMES_RL_PROFILE_LOCAL")
    assert "env.group_size" not in reader.current_config().locked
