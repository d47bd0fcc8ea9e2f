"""Runs tool calls through Hermes Agent's own MCP client; started with Hermes Agent's interpreter.

Reads JSON from stdin: {"calls": [[tool, arguments], ...]}, tools named as the server names
them; an argument given as "$run_id" becomes the run id of the latest answer that named one. Hermes Agent reads its MCP servers from $HERMES_HOME/config.yaml, which the test writes,
and registers each tool as mcp__<server>__<tool> (the server name sanitised). Prints one JSON
object: the names Hermes registered and, per call, the string Hermes hands its model.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    request = json.load(sys.stdin)
    from model_tools import handle_function_call
    from tools.mcp_tool import discover_mcp_tools, shutdown_mcp_servers

    try:
        registered = discover_mcp_tools()
        by_tool = {name.rsplit("__", 1)[1]: name for name in registered}
        answers, run_id = [], None
        for tool, arguments in request["calls"]:
            arguments = {key: run_id if value == "$run_id" else value for key, value in arguments.items()}
            answers.append(handle_function_call(by_tool.get(tool, tool), arguments))
            run_id = (json.loads(answers[-1]).get("structuredContent") or {}).get("run_id", run_id)
    finally:
        shutdown_mcp_servers()
    json.dump({"registered": sorted(registered), "answers": answers}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
