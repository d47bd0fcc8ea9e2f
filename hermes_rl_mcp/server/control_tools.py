"""The MCP layer: tools and resources over the control plane. Nothing else lives here.

Every tool is a thin call into ``hermes_rl_mcp.core`` run in a worker thread (file system and
child processes must not stall the protocol loop). Expected failures of the core arrive as
``ControlError`` and leave as tool errors carrying the core's message.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from hermes_rl_mcp import __version__
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.core.errors import ControlError
from hermes_rl_mcp.core.models import CurrentConfig, EditResult, EnvironmentList, SelectResult

log = logging.getLogger("hermes_rl_mcp")
T = TypeVar("T")

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
6. rl_check_status(run_id) to follow it, rl_stop_training(run_id) to end it early,
   rl_get_results(run_id) for metrics, curves and checkpoints. Runs survive server restarts.
Fields are namespaced env.*, trainer.*, openai.* and run.*; a bare name works when unambiguous.
"""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
LOCAL_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


async def _call(fn: Callable[..., T], *args: Any, offload: bool = True) -> T:
    """Run a core call, off the event loop unless it is known to be quick; turn its expected
    failures into tool errors. The thread hop costs more than a warm listing itself."""
    try:
        if offload:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args))
        return fn(*args)
    except ControlError as exc:
        raise ToolError(str(exc)) from None


def build_server(control: ControlPlane | None = None) -> MCPServer:
    control = control or ControlPlane()
    server = MCPServer(
        name="hermes-rl",
        title="Hermes RL training",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    @server.tool(
        title="List RL environments",
        annotations=READ_ONLY,
        description=(
            "List the RL environments found in the environment directories (the bundled ones and "
            "HERMES_RL_ENV_DIRS). Each entry gives the name to pass to rl_select_environment, a "
            "description and the source file (read it to see the task and its scoring). Files that "
            "could not be parsed and duplicate names are reported under `problems`."
        ),
    )
    async def rl_list_environments() -> EnvironmentList:
        return await _call(control.list_environments, offload=False)

    @server.tool(
        title="Select an RL environment",
        annotations=LOCAL_WRITE,
        description=(
            "Make an environment current and load its config fields (read from its config class in "
            "a sandboxed child process). Selecting another environment clears the previous edits; "
            "re-selecting the same one keeps them. Next: rl_get_current_config, rl_edit_config, "
            "then rl_start_training."
        ),
    )
    async def rl_select_environment(
        name: Annotated[str, Field(description="Environment name from rl_list_environments.", max_length=200)],
    ) -> SelectResult:
        return await _call(control.select_environment, name)

    @server.tool(
        title="Show the current config",
        annotations=READ_ONLY,
        description=(
            "Show the selected environment's config: editable fields (name, JSON Schema type, class "
            "default, config_init() value, current value, description) and locked infrastructure "
            "fields set by the backend profile. Change editable fields with rl_edit_config."
        ),
    )
    async def rl_get_current_config() -> CurrentConfig:
        return await _call(control.current_config)

    @server.tool(
        title="Edit one config field",
        annotations=LOCAL_WRITE,
        description=(
            "Set one editable field of the current config, validated against its type and bounds. "
            "Use the namespaced name (env.group_size, trainer.learning_rate, run.backend) or a bare "
            "name when unambiguous. Locked fields cannot be changed. Invalid values change nothing "
            "and the error says what is valid."
        ),
    )
    async def rl_edit_config(
        field: Annotated[str, Field(description="Field name, e.g. env.group_size or learning_rate.", max_length=200)],
        value: Annotated[Any, Field(description="New value (JSON: number, string, boolean, null, list).")],
    ) -> EditResult:
        return await _call(control.edit_config, field, value)

    return server


def serve_stdio() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    build_server().run("stdio")
