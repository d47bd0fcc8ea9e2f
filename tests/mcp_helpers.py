"""Helpers for tests that talk to the server through a real MCP client."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from hermes_rl_mcp.server import build_server

# "legacy" speaks 2025-11-25 with the initialize handshake; "auto" discovers the server with
# server/discover and speaks 2026-07-28 without a handshake.
ERAS = ["legacy", "auto"]
ERA_VERSION = {"legacy": "2025-11-25", "auto": "2026-07-28"}


def in_memory(era: str) -> Client:
    return Client(build_server(), mode=era)


def console_script() -> str:
    """The installed ``hermes-rl-mcp`` next to the running interpreter."""
    candidate = Path(sys.executable).with_name("hermes-rl-mcp")
    found = str(candidate) if candidate.exists() else shutil.which("hermes-rl-mcp")
    assert found, "the hermes-rl-mcp console script is not installed"
    return found


def over_stdio(era: str, extra_env: dict[str, str] | None = None) -> Client:
    env = {"HERMES_RL_HOME": os.environ["HERMES_RL_HOME"], **(extra_env or {})}
    params = StdioServerParameters(command=console_script(), args=[], env=env)
    return Client(params, mode=era)


def structured(result) -> dict:
    """The structured result, checked to equal the JSON text for text-only clients."""
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def refusal_text(result) -> str:
    """The reason of a refused call: a normal result (no isError), text first, then a typed Refusal."""
    assert not result.is_error, f"a correctable mistake must not be an isError result: {result.content[0].text}"
    text = result.content[0].text
    assert text.startswith("Refused: "), text
    assert result.structured_content["refused"] is True, result.structured_content
    assert text == f"Refused: {result.structured_content['reason']}"
    return text
