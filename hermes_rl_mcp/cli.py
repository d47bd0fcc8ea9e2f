"""The ``hermes-rl-mcp`` command: MCP over stdio by default, subcommands for people.

Each subcommand imports only what it needs, so serving MCP never pays for the trainer's or the
trajectory API's imports.
"""

from __future__ import annotations

import sys

USAGE = """usage: hermes-rl-mcp [COMMAND] [ARGS]

  (no command)          serve MCP over stdio
  api                   run the trajectory API (hermes-rl-mcp api --help)
  trainer               run the local trainer (hermes-rl-mcp trainer --config run.yaml)
  policy                serve one fixed policy: --init, --checkpoint PATH or --tinker-sampler URI
  runs [--status S]     list runs, newest first
  status RUN            show a run's status, components, progress and latest metrics
  logs RUN COMPONENT [-n N]
                        print the last N lines (default 200) of api, trainer, env or supervisor log
  stop RUN              stop a run and every process of it
  demo                  drive a short training run through the server, as an MCP client does
  client-config [json|hermes|inspector]
                        print a client configuration that launches this installation
  supervise RUN_DIR     (internal) supervise one run; started by the server
"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else "serve"
    rest = args[1:]
    if command == "serve":
        from hermes_rl_mcp.server import serve_stdio

        serve_stdio()
        return 0
    if command == "api":
        from hermes_rl_mcp.api.cli import main as api_main

        return api_main(rest)
    if command == "trainer":
        from hermes_rl_mcp.trainer.cli import main as trainer_main

        return trainer_main(rest)
    if command == "policy":
        from hermes_rl_mcp.trainer.serve_policy import main as policy_main

        return policy_main(rest)
    if command == "supervise":
        from hermes_rl_mcp.runs.launch import main as supervise_main

        return supervise_main(rest)
    if command in ("runs", "status", "logs", "stop"):
        from hermes_rl_mcp.runs import cli as runs_cli

        handler = {
            "runs": runs_cli.runs_main,
            "status": runs_cli.status_main,
            "logs": runs_cli.logs_main,
            "stop": runs_cli.stop_main,
        }[command]
        return handler(rest)
    if command == "client-config":
        from hermes_rl_mcp.client_config import main as client_config_main

        return client_config_main(rest)
    if command == "demo":
        from hermes_rl_mcp.demo import main as demo_main

        return demo_main(rest)
    if command in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    print(f"hermes-rl-mcp: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2
