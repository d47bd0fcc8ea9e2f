"""The server as users install and launch it: a wheel in a fresh virtual environment outside the
checkout, driven by real clients (the SDK's over stdio, Hermes Agent's own MCP client code, and
the MCP Inspector CLI pinned to 2.12.0)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import anyio
import yaml
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.apps import APP_MIME_TYPE

from hermes_rl_mcp.server.dashboard import DASHBOARD_URI

from installs import REPO, hermes_agent_python, inspector_cli
from mcp_helpers import structured

SHORT_RUN = {"env.total_steps": 8, "env.steps_per_eval": 4, "env.use_wandb": False}


def test_the_wheel_finds_its_environments_and_completes_a_run(installed_wheel: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=str(installed_wheel / "hermes-rl-mcp"), args=[], cwd=str(tmp_path),
        env={"HERMES_RL_HOME": str(tmp_path / "state")},
    )

    async def scenario() -> None:
        async with Client(params, mode="legacy") as client:
            listing = structured(await client.call_tool("rl_list_environments", {}))
            assert sorted(e["name"] for e in listing["environments"]) == ["arithmetic", "navigation", "reverse_text"]
            assert listing["problems"] == []
            for env in listing["environments"]:  # found inside the installed package, not the checkout
                assert Path(env["file"]).is_relative_to(installed_wheel.parent), env["file"]
                assert not Path(env["file"]).is_relative_to(REPO)
            structured(await client.call_tool("rl_select_environment", {"name": "reverse_text"}))
            for field, value in SHORT_RUN.items():
                structured(await client.call_tool("rl_edit_config", {"field": field, "value": value}))
            run_id = structured(await client.call_tool("rl_start_training", {}))["run_id"]
            deadline = time.monotonic() + 120
            while (status := structured(await client.call_tool("rl_check_status", {"run_id": run_id})))["status"] not in (
                "completed", "failed", "stopped"
            ):
                assert time.monotonic() < deadline, status
                await anyio.sleep(0.5)
            assert status["status"] == "completed", status
            answer = await client.call_tool("rl_get_results", {"run_id": run_id})
            results = structured(answer)
            assert results["final_checkpoint"] and "eval/percent_correct" in results["final_metrics"]
            # The wheel brings the plotting library and the dashboard page with it.
            assert [block.type for block in answer.content] == ["text", "image"]
            (page,) = (await client.read_resource(DASHBOARD_URI)).contents
            assert page.mime_type == APP_MIME_TYPE and "function drawChart" in page.text

    anyio.run(scenario)


# Ten correctable mistakes of different kinds, in a row, after a valid selection and backend edit.
MISTAKES = [
    ("rl_start_training", {}, "backend_unavailable"),
    ("rl_edit_config", {"field": "group_size", "value": "lots"}, "invalid_value"),
    ("rl_edit_config", {"field": "group_size", "value": -1}, "invalid_value"),
    ("rl_edit_config", {"field": "grup_size", "value": 4}, "unknown_field"),
    ("rl_edit_config", {"field": "env.tokenizer_name", "value": "gpt2"}, "locked_field"),
    ("rl_select_environment", {"name": "no_such_env"}, "unknown_environment"),
    ("rl_check_status", {"run_id": "../../etc/passwd"}, "invalid_run_id"),
    ("rl_get_results", {"run_id": "r-20260101-0000-abcdef"}, "unknown_run"),
    ("rl_get_logs", {"run_id": "r-20260101-0000-abcdef", "component": "passwd"}, "invalid_arguments"),
    ("rl_stop_training", {"run_id": "r-20260101-0000-abcdef", "force": True}, "unknown_arguments"),
]


def test_hermes_agent_reads_every_mistake_as_an_answer_and_keeps_the_server(installed_wheel: Path, tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    home.mkdir()
    # The configuration is the one the installed server prints for Hermes Agent.
    printed = subprocess.run(
        [str(installed_wheel / "hermes-rl-mcp"), "client-config", "hermes"], capture_output=True, text=True,
        timeout=30, cwd=tmp_path, env={**os.environ, "HERMES_RL_HOME": str(tmp_path / "state")}, check=True,
    ).stdout
    server = yaml.safe_load(printed)["mcp_servers"]["hermes-rl"]
    assert server["command"] == str(installed_wheel / "hermes-rl-mcp") and server["env"]["HERMES_RL_HOME"] == str(tmp_path / "state")
    (home / "config.yaml").write_text(printed)
    calls = [
        ["rl_select_environment", {"name": "reverse_text"}],
        ["rl_edit_config", {"field": "run.backend", "value": "tinker"}],
        *[[tool, arguments] for tool, arguments, _ in MISTAKES],
        ["rl_edit_config", {"field": "run.backend", "value": "local"}],
        ["rl_get_current_config", {}],
        ["get_prompt", {"name": "train_on_environment", "arguments": {"environment": "reverse_text"}}],
        ["rl_start_training", {}],
        ["rl_get_results", {"run_id": "$run_id"}],
        ["rl_stop_training", {"run_id": "$run_id"}],
    ]
    env = {"HERMES_HOME": str(home), "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    done = subprocess.run(
        [str(hermes_agent_python()), str(Path(__file__).with_name("hermes_driver.py"))],
        input=json.dumps({"calls": calls}), capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert any(name.endswith("__rl_start_training") for name in report["registered"])
    answers = [json.loads(answer) for answer in report["answers"]]
    for answer in answers[:2]:
        assert "error" not in answer, answer
    for (tool, arguments, kind), answer in zip(MISTAKES, answers[2:12]):
        assert "error" not in answer, (tool, arguments, answer)  # Hermes counts only errors against a server
        assert answer["result"].startswith("Refused: "), answer
        assert answer["structuredContent"]["refused"] is True and answer["structuredContent"]["kind"] == kind, answer
    edited, config, prompt, started, results, stopped = answers[12:]
    assert "error" not in edited and json.loads(edited["result"])["new_value"] == "local"
    current = json.loads(config["result"])
    assert current["backend"] == "local" and current["editable"]["env.group_size"]["value"] == 8  # nothing was changed
    # Hermes hands its model the config twice (the text and the structured content): each of its
    # 47 fields, with type, bounds, value and a one-line description, costs about 300 characters
    # there. 16,000 characters is about 4,000 tokens.
    assert len(json.dumps(config, ensure_ascii=False)) <= 16_000, "the config must stay lean for a Hermes model"
    assert "rl_start_training" in json.dumps(prompt)
    # Hermes caches the curves picture for its user and hands its model a MEDIA tag to it.
    text, media = results["result"].rsplit("\n", 1)
    assert json.loads(text)["run_id"] == started["structuredContent"]["run_id"] == results["structuredContent"]["run_id"]
    assert media.startswith("MEDIA:") and Path(media[len("MEDIA:"):]).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert stopped["structuredContent"]["status"] in ("stopped", "completed", "failed"), stopped


def _inspector(installed_wheel: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [*inspector_cli(), "-e", f"HERMES_RL_HOME={tmp_path / 'state'}", str(installed_wheel / "hermes-rl-mcp"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_the_inspector_finds_no_schema_problem_and_reads_refusals_as_results(installed_wheel: Path, tmp_path: Path) -> None:
    listed = _inspector(installed_wheel, tmp_path, "--strict", "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    assert "Warning" not in listed.stderr and "Error" not in listed.stderr, listed.stderr
    assert len(json.loads(listed.stdout)["tools"]) == 17
    refused = _inspector(installed_wheel, tmp_path, "--method", "tools/call", "--tool-name", "rl_select_environment",
                         "--tool-arg", "name=no_such_env")
    assert refused.returncode == 0, refused.stdout + refused.stderr  # the Inspector exits 5 on an isError result
    assert "Refused: no environment named 'no_such_env'" in refused.stdout
    prompts = _inspector(installed_wheel, tmp_path, "--method", "prompts/list")
    assert prompts.returncode == 0 and {p["name"] for p in json.loads(prompts.stdout)["prompts"]} == {
        "train_on_environment", "write_environment",
    }
