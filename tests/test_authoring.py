"""Environments an agent writes and checks, through real MCP clients in both eras and over stdio.

Every check runs the environment's code in a real sandboxed child against the real local
policy; the hostile sources really hang, print, spawn processes and raise.
"""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from hermes_rl_mcp.settings import BUNDLED_ENV_DIR

from mcp_helpers import ERAS, in_memory, over_stdio, refusal_text, structured

BOUND_S = 6.0  # the bound of the checks meant to hit it
SOUND_BOUND_S = 60.0  # the bound of checks meant to pass, roomy on a loaded machine
# Starting the child, the stack dump and ending its process group add this much at most.
BOUND_SLACK_S = 3.0
REVERSE_TEXT = (BUNDLED_ENV_DIR / "reverse_text.py").read_text()


def variant(name: str, *, replace: dict[str, str] | None = None, before_classes: str = "") -> str:
    """The bundled reverse_text environment renamed to ``name``, with edits."""
    source = REVERSE_TEXT.replace('name = "reverse_text"', f'name = "{name}"')
    for old, new in (replace or {}).items():
        assert old in source, old
        source = source.replace(old, new)
    if before_classes:
        source = source.replace("class ReverseTextConfig", textwrap.dedent(before_classes) + "\n\nclass ReverseTextConfig", 1)
    return source


def line_of(source: str, needle: str) -> int:
    return next(number for number, line in enumerate(source.splitlines(), 1) if needle in line)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "agent-envs"
    monkeypatch.setenv("HERMES_RL_WRITABLE_ENV_DIR", str(directory))
    monkeypatch.setenv("HERMES_RL_CHECK_TIMEOUT", str(SOUND_BOUND_S))
    return directory


def entries(directory: Path) -> list[str]:
    return sorted(os.listdir(directory)) if directory.exists() else []


@pytest.mark.parametrize("era", ERAS)
def test_an_agent_writes_checks_and_selects_its_environment(writable: Path, era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            created = structured(await client.call_tool("rl_create_environment", {"name": "mirror", "source": variant("mirror")}))
            assert created["ok"] and created["written"] and created["problems"] == []
            assert created["file"] == str(writable / "mirror.py") and (writable / "mirror.py").read_text() == variant("mirror")
            assert created["environment"] == "mirror" and created["class_name"] == "ReverseTextEnv"
            assert {"group_size", "train_pool_size"} <= set(created["config_fields"])
            assert len(created["dry_run"]) == 2
            for group in created["dry_run"]:
                assert len(group["scores"]) == 8 and all(0 <= s <= 1 for s in group["scores"])
                assert group["completions"] and group["prompt"]
            assert created["seconds"] <= created["bound_seconds"] == SOUND_BOUND_S
            assert entries(writable) == ["mirror.py"], "no staging directory may be left behind"

            listing = structured(await client.call_tool("rl_list_environments", {}))
            assert "mirror" in {env["name"] for env in listing["environments"]}
            structured(await client.call_tool("rl_select_environment", {"name": "mirror"}))
            checked = structured(await client.call_tool("rl_check_environment", {"name": "mirror"}))
            assert checked["ok"] and not checked["written"] and len(checked["dry_run"]) == 2
            bundled = structured(await client.call_tool("rl_check_environment", {"name": "arithmetic"}))
            assert bundled["ok"] and bundled["file"].endswith("arithmetic.py")

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_names_that_collide_or_carry_a_path_are_refused(writable: Path, era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            structured(await client.call_tool("rl_create_environment", {"name": "mirror", "source": variant("mirror")}))
            before = entries(writable)
            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "mirror", "source": variant("mirror")}))
            assert "mirror.py already exists" in text and "nothing was written" in text
            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "arithmetic", "source": variant("arithmetic")}))
            assert "an environment named 'arithmetic' already exists" in text
            # A file of a free name whose class claims a taken environment name.
            source = variant("arithmetic")
            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "copycat", "source": source}))
            assert "duplicate environment name 'arithmetic'" in text
            assert f"line {line_of(source, 'class ReverseTextEnv')}" in text
            for name in ("../escape", "sub/dir", "/tmp/abs", "mirror.py", "Upper", ""):
                text = refusal_text(await client.call_tool("rl_create_environment", {"name": name, "source": variant("x")}))
                assert "no paths, dots or slashes" in text or "name" in text
            assert entries(writable) == before
            assert not (writable.parent / "escape.py").exists() and not Path("/tmp/abs.py").exists()

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_hostile_sources_are_refused_with_their_lines_and_change_nothing(writable: Path, tmp_path: Path, era: str, capfd, monkeypatch) -> None:
    pids = tmp_path / "pids"
    syntax = variant("broken", replace={"async def setup(self) -> None:": "async def setup(self) -> None\n"})
    hangs_on_import = variant("sleepy", before_classes=f"""
        import subprocess, time
        _helper = subprocess.Popen(["sleep", "300"])
        open({str(pids)!r}, "w").write(f"{{__import__('os').getpid()}} {{_helper.pid}}")
        print("MARKER-ON-STDOUT", flush=True)
        time.sleep(300)
        """)
    hangs_in_group = variant("stuck", replace={
        "        index, text = item\n": "        index, text = item\n        while True:\n            pass\n",
    })
    raises = variant("raiser", replace={"        target = text[::-1]\n": "        target = text[::-1]\n        raise KeyError('no answer key')\n"})
    unscored = variant("unscored", replace={
        "        return scored_group(group, scores, messages if self.config.include_messages else None), []":
        "        return None, []",
    })

    async def scenario() -> None:
        async with in_memory(era) as client:
            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "broken", "source": syntax}))
            assert f"parse (line {line_of(syntax, 'async def setup(self) -> None')}): syntax error" in text

            monkeypatch.setenv("HERMES_RL_CHECK_TIMEOUT", str(BOUND_S))  # the server reads its bound per call
            started = time.monotonic()
            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "sleepy", "source": hangs_on_import}))
            assert time.monotonic() - started < BOUND_S + BOUND_SLACK_S
            assert f"config (line {line_of(hangs_on_import, 'time.sleep(300)')}): did not finish importing" in text
            assert f"bound of {BOUND_S:g} s" in text
            own, helper = map(int, pids.read_text().split())
            assert not alive(own) and not alive(helper), "the check must end the child and all it spawned"

            started = time.monotonic()
            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "stuck", "source": hangs_in_group}))
            assert time.monotonic() - started < BOUND_S + BOUND_SLACK_S
            loop = line_of(hangs_in_group, "while True:")
            assert any(f"dry_run (line {line}): did not finish group 0" in text for line in (loop, loop + 1)), text
            monkeypatch.setenv("HERMES_RL_CHECK_TIMEOUT", str(SOUND_BOUND_S))

            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "raiser", "source": raises}))
            line = line_of(raises, "raise KeyError")
            assert f"dry_run (line {line}): group 0: collect_trajectories() raised KeyError: 'no answer key'" in text
            assert f"dry_run (line {line}): group 1:" in text, "every problem is listed, the second group's too"

            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "unscored", "source": unscored}))
            assert "collect_trajectories returned no group (None)" in text

            assert entries(writable) == [], "a refused source leaves the writable directory as it was"
            listing = structured(await client.call_tool("rl_list_environments", {}))
            assert not {"broken", "sleepy", "stuck", "raiser", "unscored"} & {env["name"] for env in listing["environments"]}

    anyio.run(scenario)
    assert "MARKER-ON-STDOUT" not in capfd.readouterr().out, "environment output must never reach this process's stdout"


def test_a_printing_but_sound_environment_is_written_with_a_note(writable: Path, capfd) -> None:
    source = variant("chatty", before_classes='print("CHATTY-IMPORT", flush=True)')

    async def scenario() -> None:
        async with in_memory("auto") as client:
            created = structured(await client.call_tool("rl_create_environment", {"name": "chatty", "source": source}))
            assert created["ok"] and created["written"]
            assert any("bytes to stdout/stderr" in note for note in created["notes"])

    anyio.run(scenario)
    assert "CHATTY-IMPORT" not in capfd.readouterr().out


def test_staging_left_by_a_killed_server_is_removed_by_the_next_create(writable: Path) -> None:
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid whose process has ended, as a server killed mid-create leaves behind
    abandoned = writable / f".staging-{gone.pid}-k1ll3d"
    abandoned.mkdir(parents=True)
    (abandoned / "half.py").write_text("# written when the server was killed\n")
    in_use = writable / f".staging-{os.getpid()}-busy"  # a live server's create still under way
    in_use.mkdir()

    async def scenario() -> None:
        async with in_memory("auto") as client:
            created = structured(await client.call_tool("rl_create_environment", {"name": "after", "source": variant("after")}))
            assert created["written"]

    anyio.run(scenario)
    assert entries(writable) == [in_use.name, "after.py"]


@pytest.mark.parametrize("era", ERAS)
def test_writing_is_refused_until_the_operator_enables_it(monkeypatch, era: str) -> None:
    monkeypatch.delenv("HERMES_RL_WRITABLE_ENV_DIR", raising=False)

    async def scenario() -> None:
        async with in_memory(era) as client:
            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "mirror", "source": variant("mirror")}))
            assert "HERMES_RL_WRITABLE_ENV_DIR" in text and "not enabled" in text
            text = refusal_text(await client.call_tool("rl_check_environment", {"name": "nope"}))
            assert "no environment named" in text and "reverse_text" in text

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_check_reports_problems_of_files_in_any_environment_directory(write_env, monkeypatch, era: str) -> None:
    monkeypatch.setenv("HERMES_RL_ENV_DIRS", str(write_env.root))
    monkeypatch.setenv("HERMES_RL_CHECK_TIMEOUT", str(SOUND_BOUND_S))
    write_env("typo.py", "from hermes_rl_mcp.sdk import BaseEnv\n\nclass TypoEnv(BaseEnv):\n    def setup(self)\n        pass\n")
    no_config = variant("noconfig", replace={"        config = ReverseTextConfig(\n": "        config = ReverseTextConfigs(\n"})
    write_env("noconfig.py", no_config)

    async def scenario() -> None:
        async with in_memory(era) as client:
            typo = structured(await client.call_tool("rl_check_environment", {"name": "typo"}))
            assert not typo["ok"] and typo["problems"][0]["stage"] == "parse" and typo["problems"][0]["line"] == 4
            checked = structured(await client.call_tool("rl_check_environment", {"name": "noconfig"}))
            assert not checked["ok"]
            problem = checked["problems"][0]
            assert problem["stage"] == "config" and problem["line"] == line_of(no_config, "ReverseTextConfigs(")
            assert "NameError" in problem["message"] and problem["traceback"]

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_authoring_over_stdio_keeps_the_protocol_stream_clean(tmp_path: Path, era: str) -> None:
    directory = tmp_path / "agent-envs"
    env = {"HERMES_RL_WRITABLE_ENV_DIR": str(directory), "HERMES_RL_CHECK_TIMEOUT": str(SOUND_BOUND_S)}
    # Prints what looks like protocol messages at import, then fails.
    printing = variant("noisy", before_classes='print(\'{"jsonrpc": "2.0", "id": 1, "result": {}}\' * 50, flush=True)\nraise SystemExit(3)')

    async def scenario() -> None:
        async with over_stdio(era, env) as client:
            text = refusal_text(await client.call_tool("rl_create_environment", {"name": "noisy", "source": printing}))
            assert f"config (line {line_of(printing, 'raise SystemExit(3)')}): SystemExit: 3" in text
            created = structured(await client.call_tool("rl_create_environment", {"name": "mirror", "source": variant("mirror")}))
            assert created["written"] and len(created["dry_run"]) == 2
            assert structured(await client.call_tool("rl_check_environment", {"name": "mirror"}))["ok"]

    anyio.run(scenario)
    assert entries(directory) == ["mirror.py"]
