"""The installed console script over a real stdio pipe, both eras, and state across restarts."""

from __future__ import annotations

import anyio
import pytest

from mcp_helpers import ERA_VERSION, ERAS, refusal_text, over_stdio, structured


@pytest.mark.parametrize("era", ERAS)
def test_console_script_serves_the_workflow_and_state_survives_a_restart(era: str) -> None:
    async def scenario() -> None:
        async with over_stdio(era) as client:
            assert client.protocol_version == ERA_VERSION[era]
            listing = structured(await client.call_tool("rl_list_environments", {}))
            assert "navigation" in {e["name"] for e in listing["environments"]}
            structured(await client.call_tool("rl_select_environment", {"name": "navigation"}))
            edited = structured(await client.call_tool("rl_edit_config", {"field": "discount_factor", "value": "0.8"}))
            assert edited["new_value"] == 0.8
            assert "locked" in refusal_text(await client.call_tool("rl_edit_config", {"field": "tokenizer_name", "value": "gpt2"}))

        # A new server process (clients restart stdio servers every session) sees the same state.
        async with over_stdio(era) as client:
            config = structured(await client.call_tool("rl_get_current_config", {}))
            assert config["environment"] == "navigation"
            assert config["editable"]["env.discount_factor"]["value"] == 0.8

    anyio.run(scenario)
