"""The control-plane tools: list, select, show and edit."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.core.models import CurrentConfig, EditResult, EnvironmentList, SelectResult
from hermes_rl_mcp.server.calls import LOCAL_WRITE, READ_ONLY, core_call


def register_control_tools(server: MCPServer, control: ControlPlane) -> None:
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
        return await core_call(control.list_environments, offload=False)

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
        return await core_call(control.select_environment, name)

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
        return await core_call(control.current_config)

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
        return await core_call(control.edit_config, field, value)

