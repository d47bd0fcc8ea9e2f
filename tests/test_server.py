"""The MCP layer through the SDK's in-memory client, in both protocol eras."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.server import build_server
from mcp.client import Client

from mcp_helpers import ERA_VERSION, ERAS, refusal_text, in_memory, structured

TOOLS = {"rl_list_environments", "rl_select_environment", "rl_get_current_config", "rl_edit_config"}


@pytest.mark.parametrize("era", ERAS)
def test_workflow_list_select_show_edit(era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            assert client.protocol_version == ERA_VERSION[era]
            assert client.instructions and "rl_start_training" in client.instructions
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert TOOLS <= set(tools)
            for name in TOOLS:
                assert tools[name].output_schema, f"{name} has no output schema"
                assert tools[name].description
            assert tools["rl_list_environments"].annotations.read_only_hint is True
            assert tools["rl_get_current_config"].annotations.read_only_hint is True
            assert tools["rl_edit_config"].annotations.read_only_hint is False

            listing = structured(await client.call_tool("rl_list_environments", {}))
            assert {"reverse_text", "arithmetic", "navigation"} <= {e["name"] for e in listing["environments"]}

            selected = structured(await client.call_tool("rl_select_environment", {"name": "reverse_text"}))
            assert selected["environment"]["name"] == "reverse_text"

            config = structured(await client.call_tool("rl_get_current_config", {}))
            editable, locked = config["editable"], config["locked"]
            assert "env.group_size" in editable and "env.rollout_server_url" in locked

            edited = structured(await client.call_tool("rl_edit_config", {"field": "group_size", "value": 12}))
            assert edited == {"field": "env.group_size", "old_value": editable["env.group_size"]["value"], "new_value": 12, "notes": []}
            config = structured(await client.call_tool("rl_get_current_config", {}))
            assert config["editable"]["env.group_size"]["value"] == 12

            listing = structured(await client.call_tool("rl_list_environments", {}))
            assert listing["selected"] == "reverse_text"

    anyio.run(scenario)


@pytest.mark.parametrize("era", ERAS)
def test_mistakes_are_refusals_with_guidance(era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            assert "no environment is selected" in refusal_text(await client.call_tool("rl_get_current_config", {}))
            assert "no environment is selected" in refusal_text(await client.call_tool("rl_edit_config", {"field": "x", "value": 1}))
            text = refusal_text(await client.call_tool("rl_select_environment", {"name": "../../etc/passwd"}))
            assert "Available: arithmetic, navigation, reverse_text" in text
            structured(await client.call_tool("rl_select_environment", {"name": "arithmetic"}))
            text = refusal_text(await client.call_tool("rl_edit_config", {"field": "group_size", "value": "lots"}))
            assert "It accepts an integer > 0" in text
            text = refusal_text(await client.call_tool("rl_edit_config", {"field": "trainer.port", "value": 8000}))
            assert "locked" in text
            # wrong argument types and missing arguments are refused by the input schema
            assert refusal_text(await client.call_tool("rl_select_environment", {"name": 42}))
            assert refusal_text(await client.call_tool("rl_edit_config", {"value": 1}))
            # and the server still answers
            structured(await client.call_tool("rl_list_environments", {}))

    anyio.run(scenario)


def test_unexpected_exception_is_an_error_result_and_the_server_lives_on(monkeypatch) -> None:
    control = ControlPlane()

    def explode() -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(control, "current_config", explode)

    async def scenario() -> None:
        async with Client(build_server(control), mode="2026-07-28") as client:
            result = await client.call_tool("rl_get_current_config", {})
            assert result.is_error
            structured(await client.call_tool("rl_list_environments", {}))

    anyio.run(scenario)


SNAPSHOT = Path(__file__).parent / "snapshots" / "tool_schemas.json"


def test_tool_schemas_match_the_snapshot() -> None:
    """Fails when a tool's input or output schema changes; regenerate with UPDATE_SNAPSHOTS=1."""

    async def schemas() -> dict:
        async with in_memory("2026-07-28") as client:
            tools = (await client.list_tools()).tools
            return {t.name: {"input": t.input_schema, "output": t.output_schema} for t in sorted(tools, key=lambda t: t.name)}

    current = anyio.run(schemas)
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    assert sorted(current) == sorted(expected), "the set of tools changed"
    for name in expected:
        assert current[name] == expected[name], f"the schema of {name} changed; if intended, run UPDATE_SNAPSHOTS=1 pytest"


@pytest.mark.parametrize("era", ERAS)
def test_prompts_walk_through_training_and_writing_an_environment(era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert set(prompts) == {"train_on_environment", "write_environment"}
            assert [a.name for a in prompts["write_environment"].arguments if a.required] == ["task"]
            train = await client.get_prompt("train_on_environment", {"environment": "arithmetic", "goal": "add numbers"})
            text = train.messages[0].content.text
            assert "'arithmetic'" in text and "add numbers" in text
            for tool in ("rl_select_environment", "rl_edit_config", "rl_start_training", "rl_check_status",
                         "rl_get_logs", "rl_get_results"):
                assert tool in text
            write = await client.get_prompt("write_environment", {"task": "count the vowels in a word"})
            text = write.messages[0].content.text
            assert "count the vowels in a word" in text and "BaseEnv" in text and "collect_trajectories" in text
            assert "rl_create_environment" in text and "rl_check_environment" in text

    anyio.run(scenario)
