"""``hermes-rl-mcp demo``: a scripted MCP client session against the real server over stdio.

It does what an agent would: list the environments, select one, edit a setting and show the
config. It talks to a freshly spawned server process exactly as any MCP client does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


def _say(text: str = "") -> None:
    print(text, flush=True)


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in arguments.items())
    _say(f"\n> {tool}({shown})")
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.content[0].text}")
    return result.structured_content or {}


async def session(environment: str, edits: list[tuple[str, str]]) -> None:
    server = StdioServerParameters(command=sys.executable, args=["-m", "hermes_rl_mcp"], env=dict(os.environ))
    async with Client(server, mode="legacy") as client:
        _say(f"connected to {client.server_info.name} {client.server_info.version} (protocol {client.protocol_version})")
        listing = await _call(client, "rl_list_environments")
        for env in listing["environments"]:
            _say(f"  {env['name']:<16} {env['description']}")
        for problem in listing["problems"]:
            _say(f"  problem: {problem['file']}: {problem['reason']}")

        selected = await _call(client, "rl_select_environment", name=environment)
        _say(f"  selected {selected['environment']['name']} on the {selected['backend']} backend: "
             f"{selected['editable_fields']} editable fields, {selected['locked_fields']} locked")

        for field, value in edits:
            edit = await _call(client, "rl_edit_config", field=field, value=value)
            _say(f"  {edit['field']}: {json.dumps(edit['old_value'])} -> {json.dumps(edit['new_value'])}")

        config = await _call(client, "rl_get_current_config")
        interesting = ("env.group_size", "env.total_steps", "env.steps_per_eval", "trainer.learning_rate", "run.backend")
        for field in config["editable"]:
            if field["name"] in interesting or field["edited"]:
                _say(f"  {field['name']:<28} = {json.dumps(field['value'])}")
        _say(f"  locked: {', '.join(f['name'] for f in config['locked'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes-rl-mcp demo", description=__doc__.splitlines()[0])
    parser.add_argument("--environment", default="reverse_text", help="environment to select (default reverse_text)")
    parser.add_argument("--set", dest="edits", action="append", default=[], metavar="FIELD=VALUE",
                        help="a config edit to make, e.g. --set env.group_size=8 (repeatable)")
    args = parser.parse_args(argv)
    edits = []
    for item in args.edits or ["env.group_size=8"]:
        field, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--set takes FIELD=VALUE, got {item!r}")
        edits.append((field, value))
    anyio.run(session, args.environment, edits)
    return 0
