"""``hermes-rl-mcp client-config``: print a ready client configuration for this installation.

The launch command is the absolute path of this installation's console script, so a client
starts the server without any environment being activated. The state directory is written out
explicitly, so that every client (Claude Desktop, Hermes Agent, the Inspector) shares the same
runs. Keys are never printed: they go into the ``env`` block by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from hermes_rl_mcp import settings

SERVER_NAME = "hermes-rl"


def launch_command() -> list[str]:
    # sys.executable is left unresolved: a virtual environment's python is a link to the base one.
    script = Path(sys.executable).with_name("hermes-rl-mcp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hermes_rl_mcp"]


def server_env() -> dict[str, str]:
    return {
        "HERMES_RL_HOME": str(settings.state_dir().resolve()),
        "HERMES_RL_ENV_DIRS": os.environ.get("HERMES_RL_ENV_DIRS", ""),
    }


def render(client: str) -> str:
    command, *args = launch_command()
    env = server_env()
    if client == "json":
        entry = {"command": command, "args": args, "env": env}
        return json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2)
    if client == "hermes":
        lines = ["mcp_servers:", f"  {SERVER_NAME}:", f"    command: {json.dumps(command)}", f"    args: {json.dumps(args)}", "    env:"]
        lines += [f"      {key}: {json.dumps(value)}" for key, value in env.items()]
        return "\n".join(lines)
    flags = " ".join(f"-e {shlex.quote(f'{key}={value}')}" for key, value in env.items() if value)
    return f"npx -y @modelcontextprotocol/inspector@2.12.0 --cli {flags} {shlex.join([command, *args])} --method tools/list"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hermes-rl-mcp client-config",
        description="Print a client configuration that launches this installation of the server.",
    )
    parser.add_argument(
        "client", nargs="?", default="json", choices=("json", "hermes", "inspector"),
        help="json: mcp.json and Claude Desktop (mcpServers); hermes: Hermes Agent's config.yaml; "
        "inspector: an MCP Inspector CLI command line (default: json)",
    )
    print(render(parser.parse_args(argv).client))
    return 0
