"""The control-plane tools: list, select, show and edit."""

from __future__ import annotations

import functools
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.core.models import ConfigValue, CurrentConfig, EditResult, EnvironmentList, SelectResult
from hermes_rl_mcp.server.calls import LOCAL_WRITE, READ_ONLY, KeptAnswers, answer, core_call


def register_control_tools(server: MCPServer, control: ControlPlane) -> None:
    kept_answers = KeptAnswers(size=1)  # one current config at a time

    @server.tool(
        title="List RL environments",
        annotations=READ_ONLY,
        description=(
            "Step 1 of training an LLM with reinforcement learning: list the RL environments (tasks "
            "that generate prompts and score completions) found in the environment directories. Each "
            "entry gives the name to pass to rl_select_environment, a description and its source file "
            "(read it to see the task and its scoring). Unparsable files and duplicate names are listed "
            "under `problems`. Next: rl_select_environment(name)."
        ),
    )
    async def rl_list_environments() -> EnvironmentList:
        return await core_call(control.list_environments, offload=False)

    @server.tool(
        title="Select an RL environment",
        annotations=LOCAL_WRITE,
        description=(
            "Step 2: make an RL environment current (a name from rl_list_environments) and load its "
            "config fields. Selecting another environment clears the previous edits; re-selecting the "
            "same one keeps them. Next: rl_get_current_config to see the fields, rl_edit_config to "
            "change them, rl_start_training to train. An unknown name is refused with the valid names."
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
            "Step 3: show the selected environment's training config. `editable` maps each field name "
            "(env.*, trainer.*, openai.*, run.backend) to its JSON Schema (type, bounds, enum) with its "
            "current value, description, and its default when the value differs; `locked` lists the infrastructure "
            "values the backend sets, which cannot be edited. Next: rl_edit_config(field, value), then "
            "rl_start_training."
        ),
    )
    async def rl_get_current_config() -> Annotated[CallToolResult, CurrentConfig]:
        # Unchanged since the last call: answered on the event loop, with the answer built then.
        config = await core_call(control.kept_config, offload=False) or await core_call(control.current_config)
        return await kept_answers.of(config, functools.partial(answer, config))

    @server.tool(
        title="Edit one config field",
        annotations=LOCAL_WRITE,
        description=(
            "Step 4 (optional): set one editable field of the selected environment's training config, "
            "validated against its type and bounds. Use the namespaced name (env.group_size, "
            "trainer.learning_rate, run.backend) or a bare name when unambiguous. An invalid value, an "
            "unknown or locked field is refused with what is valid, and nothing changes. Next: more "
            "edits, or rl_start_training."
        ),
    )
    async def rl_edit_config(
        field: Annotated[str, Field(description="Field name, e.g. env.group_size or learning_rate.", max_length=200)],
        value: Annotated[ConfigValue, Field(description="New value as JSON: number, string, boolean, null, list or object.")],
    ) -> EditResult:
        return await core_call(control.edit_config, field, value)

