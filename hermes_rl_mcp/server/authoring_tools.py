"""Tools for environments an agent writes: create one (when the operator allows it), check any."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from hermes_rl_mcp.core import authoring
from hermes_rl_mcp.core.check_models import EnvironmentCheck
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.server.calls import READ_ONLY, STARTS, core_call

EnvironmentName = Annotated[str, Field(description="Environment name.", max_length=200)]


def register_authoring_tools(server: MCPServer, control: ControlPlane) -> None:
    @server.tool(
        title="Write a new RL environment",
        annotations=STARTS,
        description=(
            "Write a new RL environment file, <name>.py, into the operator's writable environment directory, "
            "then check it the way a training run meets it: it compiles; discovery finds a BaseEnv class in it "
            "(from hermes_rl_mcp.sdk import BaseEnv, BaseEnvConfig, APIServerConfig, ScoredDataGroup); its "
            "config is read in a sandboxed process; and a dry run collects and scores 2 groups against the "
            "local backend's untrained policy, all within a bound of seconds. Passing, the file is kept and the "
            "answer shows the dry run's prompts, completions and scores; next rl_select_environment(name). "
            "With any problem nothing is written and the refusal lists every problem with its line. An existing "
            "name is refused (files are never overwritten); so is the call when the operator has not enabled "
            "writing, with how to enable it. Read a bundled environment's source (rl_list_environments) first."
        ),
    )
    async def rl_create_environment(
        name: Annotated[str, Field(description="File and environment name: lowercase letters, digits, underscores.", max_length=64)],
        source: Annotated[str, Field(description="The whole Python source of the environment file.", max_length=authoring.MAX_SOURCE_CHARS)],
        ctx: Context,
    ) -> EnvironmentCheck:
        await ctx.report_progress(0, 1, "checking the environment in a sandboxed process")
        return await core_call(authoring.create_environment, control, name, source)

    @server.tool(
        title="Check an RL environment",
        annotations=READ_ONLY,
        description=(
            "Check a listed RL environment (name from rl_list_environments) the way a training run meets it: "
            "it compiles, discovery finds it under a name no other environment has, its config is read in a "
            "sandboxed process, and a dry run collects and scores 2 groups against the local backend's "
            "untrained policy, within a bound of seconds. Answers with ok, every problem with its line and "
            "the last lines of any traceback, the config fields, and the dry run's prompts, completions and "
            "scores. Changes nothing."
        ),
    )
    async def rl_check_environment(name: EnvironmentName, ctx: Context) -> EnvironmentCheck:
        await ctx.report_progress(0, 1, "checking the environment in a sandboxed process")
        return await core_call(authoring.check_environment, control, name)
