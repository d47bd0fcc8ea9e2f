"""The run dashboard as an MCP App: declared only through the SDK's Apps extension, advertised in
both protocol eras, and a page that needs nothing outside itself."""

from __future__ import annotations

import json
import os
import re
import subprocess

import anyio
import pytest
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, Apps

from hermes_rl_mcp.server import build_server
from hermes_rl_mcp.server.dashboard import DASHBOARD_URI

from mcp_helpers import ERAS, console_script, in_memory

BOUND_TOOLS = {"rl_start_training", "rl_check_status", "rl_get_results"}
# Called by the page through the host; they show no UI of their own.
PAGE_CALLS = {"rl_check_status", "rl_get_results", "rl_get_logs", "rl_stop_training"}


@pytest.mark.parametrize("era", ERAS)
def test_the_run_tools_link_to_the_dashboard_resource(era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            linked = {name for name, tool in tools.items() if tool.meta and "ui" in tool.meta}
            assert linked == BOUND_TOOLS
            for name in BOUND_TOOLS:
                assert tools[name].meta["ui"] == {"resourceUri": DASHBOARD_URI}
            assert PAGE_CALLS <= set(tools)

            listed = {resource.uri: resource for resource in (await client.list_resources()).resources}
            assert listed[DASHBOARD_URI].mime_type == APP_MIME_TYPE
            (page,) = (await client.read_resource(DASHBOARD_URI)).contents
            assert page.mime_type == APP_MIME_TYPE and page.uri == DASHBOARD_URI
            assert "<script>" in page.text and "ui/initialize" in page.text
            for tool in PAGE_CALLS:
                assert f'"{tool}"' in page.text, f"the page never calls {tool}"

    anyio.run(scenario)


def test_the_extension_is_advertised_without_a_handshake() -> None:
    async def scenario() -> None:
        async with in_memory("auto") as client:
            assert client.protocol_version == "2026-07-28"
            assert client.server_capabilities.extensions == {EXTENSION_ID: {}}

    anyio.run(scenario)


def test_the_extension_is_advertised_in_the_handshake(tmp_path) -> None:
    """2025-11-25 ``initialize`` over a real pipe, read raw: the SDK's clients for that version drop
    fields its schema lacks, but MCP Apps hosts read ``capabilities.extensions`` there."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    done = subprocess.run([console_script()], input=json.dumps(request) + "\n", capture_output=True, text=True,
                          timeout=60, env={**os.environ, "HERMES_RL_HOME": str(tmp_path / "state")})
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    assert answer["result"]["capabilities"]["extensions"] == {EXTENSION_ID: {}}
    assert answer["result"]["capabilities"]["tools"] is not None


def test_the_dashboard_is_declared_only_through_the_apps_extension() -> None:
    server = build_server()
    (apps,) = server._extensions  # noqa: SLF001 - what MCPServer(extensions=...) consumed
    assert isinstance(apps, Apps)
    assert {binding.fn.__name__ for binding in apps.tools()} == BOUND_TOOLS
    assert [binding.resource.uri for binding in apps.resources()] == [DASHBOARD_URI]
    assert server._lowlevel_server.extensions == {EXTENSION_ID: {}}  # noqa: SLF001


def test_the_page_needs_nothing_outside_itself() -> None:
    """Hosts show it in a sandbox with no network: no external scripts, styles, fonts or fetches."""

    async def page() -> str:
        async with in_memory("auto") as client:
            return (await client.read_resource(DASHBOARD_URI)).contents[0].text

    html = anyio.run(page)
    assert "/* dashboard.js */" not in html and "/* dashboard.css */" not in html, "a file was not inlined"
    assert "function drawChart" in html and ".badge" in html
    for pattern in (r"<script[^>]+src=", r"<link\b", r"@import", r"url\(", r"\bfetch\(", r"XMLHttpRequest",
                    r"WebSocket", r"EventSource", r"<img\b", r"<iframe\b"):
        assert not re.search(pattern, html, re.IGNORECASE), pattern
    addresses = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert addresses <= {"http://www.w3.org/2000/svg"}, addresses  # the SVG namespace is a name, not a fetch
