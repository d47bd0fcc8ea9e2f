"""The MCP layer: tools, resources and notifications over the core. No run state lives here.

Tools call plain functions of ``hermes_rl_mcp.core`` and ``hermes_rl_mcp.runs``; everything a
run needs to survive is in the state directory, so any server process, this one or a later one,
sees the same runs.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from hermes_rl_mcp import __version__, runs
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.core.errors import excerpt
from hermes_rl_mcp.server.authoring_tools import register_authoring_tools
from hermes_rl_mcp.server.calls import (
    AnswerOnce,
    Refusal,
    argument_refusal,
    refusal_of,
    refusal_result,
    unknown_arguments_refusal,
    with_refusal,
)
from hermes_rl_mcp.server.control_tools import register_control_tools
from hermes_rl_mcp.server.dashboard import dashboard_extension
from hermes_rl_mcp.server.log_watch import LogWatcher, run_resource_uris
from hermes_rl_mcp.server.model_tools import register_model_tools
from hermes_rl_mcp.server.prompts import register_prompts
from hermes_rl_mcp.server.resources import MAX_LISTED_RUNS, register_run_resources
from hermes_rl_mcp.server.run_history_tools import register_run_history_tools
from hermes_rl_mcp.server.run_tools import bind_run_view_tools, register_run_tools
from hermes_rl_mcp.server.stdio_wire import serve_screened_stdio

INSTRUCTIONS = """\
Train LLMs with reinforcement learning on RL environments.

Workflow:
1. rl_list_environments: see the environments (name, description, source file).
   Read an environment's source file to learn how it generates items and scores answers.
2. rl_select_environment(name): make one current; its config fields are loaded.
3. rl_get_current_config: editable fields (with types, defaults, current values) and the locked
   infrastructure fields of the backend.
4. rl_edit_config(field, value): change one editable field; values are validated.
5. rl_start_training: start a run; it returns a run_id at once and trains in the background.
6. rl_check_status(run_id) to follow it (poll every 10-30 s), rl_stop_training(run_id) to end it
   early, rl_get_results(run_id) for metrics, learning curves and checkpoints.
rl_test_inference tries the environment against a model before training; rl_sample and
rl_evaluate use a run's checkpoints (an evaluation is followed like a run).
Runs survive server restarts: rl_list_runs shows every run. Logs are resources
rl://runs/{run_id}/logs/{api|trainer|env|supervisor} (subscribe to follow them) and the
rl_get_logs tool. rl_resume_training(run_id) continues a finished run from its last checkpoint;
rl_compare_runs(run_ids) puts runs side by side. rl_create_environment(name, source) writes a new
environment (when the operator allows it) and rl_check_environment(name) checks one, each with a
short dry run. Fields are namespaced env.*, trainer.*, openai.* and run.*; a bare name works
when unambiguous.
"""


class HermesRLServer(MCPServer):
    """MCPServer whose tools answer correctable mistakes with refusals and text as compact JSON,
    and whose resources/list also names the resources of existing runs."""

    def __init__(self, control: ControlPlane, **kwargs) -> None:
        super().__init__(**kwargs)
        self.control = control

    def prepare_tools(self) -> None:
        """Every registered tool's output schema admits a ``Refusal`` besides its own result, and
        its result is converted once (``AnswerOnce``)."""
        for tool in self._tool_manager.list_tools():
            schema = tool.fn_metadata.output_schema
            tool.fn_metadata = AnswerOnce.of(tool.fn_metadata, with_refusal(schema) if schema is not None else None)

    async def call_tool(self, name: str, arguments: dict, context=None) -> types.CallToolResult:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            names = ", ".join(t.name for t in self._tool_manager.list_tools())
            return refusal_result(Refusal(kind="unknown_tool", reason=f"there is no tool {excerpt(name)}. Tools: {names}."))
        unknown = sorted(set(arguments) - set(tool.parameters.get("properties", {})))
        if unknown:
            return refusal_result(unknown_arguments_refusal(name, unknown, tool.parameters))
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            refusal = refusal_of(exc)
            if refusal is None and isinstance(exc.__cause__, ValidationError):
                refusal = argument_refusal(name, exc.__cause__, tool.parameters)
            if refusal is None:
                raise
            return refusal_result(refusal)
        return result

    async def run_stdio_async(self) -> None:
        await serve_screened_stdio(self._lowlevel_server)  # malformed lines are answered, not dropped

    async def list_resources(self) -> list[types.Resource]:
        listed = await super().list_resources()
        recent = (await anyio.to_thread.run_sync(lambda: runs.list_runs(state=self.control.state_dir))).runs
        for run in recent[:MAX_LISTED_RUNS]:
            for uri in run_resource_uris(run.run_id):
                what = uri.split(f"{run.run_id}/", 1)[1]  # logs/<component>, config or metrics
                listed.append(types.Resource(
                    uri=uri, name=f"{run.run_id}/{what}", mime_type="text/plain",
                    title=f"{what.replace('logs/', '')} {'log ' if what.startswith('logs/') else ''}"
                          f"of {run.environment} run {run.run_id} ({run.status})",
                ))
        return listed


def build_server(control: ControlPlane | None = None) -> HermesRLServer:
    control = control or ControlPlane()
    bus = InMemorySubscriptionBus()
    watcher = LogWatcher(control, bus)
    apps = dashboard_extension()
    bind_run_view_tools(apps, control)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[dict]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watcher.run)
            try:
                yield {}
            finally:
                tasks.cancel_scope.cancel()

    server = HermesRLServer(
        control,
        name="hermes-rl",
        title="Hermes RL training",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        subscriptions=bus,
        lifespan=lifespan,
        extensions=[apps],
    )
    register_control_tools(server, control)
    register_run_tools(server, control)
    register_model_tools(server, control)
    register_run_history_tools(server, control)
    register_authoring_tools(server, control)
    register_run_resources(server, control)
    register_prompts(server)
    server.prepare_tools()
    _serve_legacy_subscriptions(server, watcher)
    server.middleware.append(_extensions_in_handshake(server))
    watcher.wrap_listen(server._lowlevel_server)  # noqa: SLF001 - wraps the SDK's listen handler
    return server


def _serve_legacy_subscriptions(server: MCPServer, watcher: LogWatcher) -> None:
    """2025-11-25 resources/subscribe: MCPServer registers no handler, so it goes on the low-level server."""

    async def subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        if not watcher.subscribe(params.uri, ctx.session):
            raise MCPError(types.INVALID_PARAMS, f"cannot subscribe to {params.uri!r}: only run resources "
                           "rl://runs/{run_id}/logs/{component}, /config and /metrics can be subscribed to")
        return types.EmptyResult()

    async def unsubscribe(ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        watcher.unsubscribe(params.uri, ctx.session)
        return types.EmptyResult()

    lowlevel = server._lowlevel_server  # noqa: SLF001 - the SDK's documented place for this handler
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


def _extensions_in_handshake(server: MCPServer):
    """2025-11-25 ``initialize``: the extensions (the Apps dashboard) go into its capabilities too.

    The SDK's schema for that version has no ``capabilities.extensions`` and drops what the
    extensions advertise, but MCP Apps hosts read the extension there in both eras (the ext-apps
    package's ``getUiCapability``), and today's hosts speak 2025-11-25.
    """
    advertised = server._lowlevel_server.extensions  # noqa: SLF001 - filled by MCPServer(extensions=...)

    async def middleware(ctx, call_next):
        result = await call_next(ctx)
        if ctx.method == "initialize" and advertised and isinstance(result, dict):
            capabilities = result.get("capabilities")
            if isinstance(capabilities, dict) and "extensions" not in capabilities:
                result = {**result, "capabilities": {**capabilities, "extensions": dict(advertised)}}
        return result

    return middleware


def serve_stdio() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    build_server().run("stdio")


__all__ = ["HermesRLServer", "INSTRUCTIONS", "build_server", "serve_stdio"]
