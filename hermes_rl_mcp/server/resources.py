"""Run logs, config and metrics as MCP resources, and subscriptions to their updates.

Templates: ``rl://runs/{run_id}/logs/{component}``, ``rl://runs/{run_id}/config`` and
``rl://runs/{run_id}/metrics`` (text/plain, the last lines of the file). Unknown runs,
components and malformed ids are resource-not-found errors; run ids are validated against a
strict pattern before any path is built, so nothing outside a run's directory is readable.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from hermes_rl_mcp import runs
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.runs.documents import read_document
from hermes_rl_mcp.runs.errors import RunError

LOG_LINES = 200
MAX_LISTED_RUNS = 100  # resources/list stays readable; older runs remain readable by URI


def _found(read: Callable[[], str]) -> str:
    """A run resource's text; the core's expected failures become resource-not-found errors."""
    try:
        return read()
    except RunError as exc:
        raise ResourceNotFoundError(str(exc)) from None


def register_run_resources(server: MCPServer, control: ControlPlane) -> None:
    @server.resource(
        "rl://runs/{run_id}/logs/{component}",
        name="run-log",
        title="Run component log",
        description="Last 200 lines of a run component's log (api, trainer, env, supervisor), secrets redacted.",
        mime_type="text/plain",
    )
    def run_log(run_id: str, component: str) -> str:
        return _found(lambda: runs.read_log(run_id, component, LOG_LINES, state=control.state_dir).text)

    @server.resource(
        "rl://runs/{run_id}/config",
        name="run-config",
        title="Run config",
        description="The config.yaml a run was started with (secrets redacted).",
        mime_type="text/plain",
    )
    def run_config(run_id: str) -> str:
        return _found(lambda: read_document(run_id, "config", 5000, state=control.state_dir))

    @server.resource(
        "rl://runs/{run_id}/metrics",
        name="run-metrics",
        title="Run metrics",
        description="The last 200 lines of a run's metrics.jsonl: one JSON object per line with step, time and metrics.",
        mime_type="text/plain",
    )
    def run_metrics(run_id: str) -> str:
        return _found(lambda: read_document(run_id, "metrics", LOG_LINES, state=control.state_dir))
