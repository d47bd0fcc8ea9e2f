"""The run tools: start, status, stop, results, list, logs. Thin calls into ``hermes_rl_mcp.runs``.

The tools that show one run (start, status, results) are bound to the run dashboard through the
MCP Apps extension, so they are declared on it, before the server is built; the others go on the
server.
"""

from __future__ import annotations

import base64
from typing import Annotated, Literal

from mcp.server.apps import Apps
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ImageContent
from pydantic import BaseModel, Field

from hermes_rl_mcp import runs
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.runs.models import LogText, RunList, RunResults, RunStarted, RunStatus, StopResult
from hermes_rl_mcp.runs.states import RunState
from hermes_rl_mcp.server.calls import READ_ONLY, STARTS, STOPS, KeptAnswers, answer, core_call
from hermes_rl_mcp.server.dashboard import DASHBOARD_URI

RunId = Annotated[str, Field(description="Run id returned by rl_start_training or rl_list_runs.", max_length=100)]
Component = Literal["api", "trainer", "env", "supervisor"]
StatusFilter = RunState


def bind_run_view_tools(apps: Apps, control: ControlPlane) -> None:
    """Start, status and results: the tools whose result a host may show as the run dashboard."""
    kept_answers = KeptAnswers()

    @apps.tool(
        resource_uri=DASHBOARD_URI,
        title="Start a training run",
        annotations=STARTS,
        description=(
            "Step 5: start a reinforcement-learning training run of the selected environment with the "
            "current config. Returns at once with a run_id (status 'starting'); the run trains in the "
            "background in its own processes and survives this server's restarts. Next: poll "
            "rl_check_status(run_id) every 10-30 s; rl_get_logs(run_id, component) shows its logs, "
            "rl_stop_training(run_id) ends it, rl_get_results(run_id) gives metrics and checkpoints. "
            "Refused, with the reason, when no environment is selected or the backend cannot start here."
        ),
    )
    async def rl_start_training(ctx: Context) -> RunStarted:
        await ctx.report_progress(0, 2, "resolving the config")
        document = await core_call(control.run_document)
        await ctx.report_progress(1, 2, "starting the run's supervisor")
        started = await core_call(runs.start_run, document, state=control.state_dir)
        await ctx.report_progress(2, 2, f"run {started.run_id} is starting")
        return started

    @apps.tool(
        resource_uri=DASHBOARD_URI,
        title="Check a run's status",
        annotations=READ_ONLY,
        description=(
            "Status of a training run (run_id from rl_start_training or rl_list_runs): starting, running, "
            "stopping, completed, failed or stopped; each component (api, trainer, env) running or exited "
            "with its code; step of total_steps; the latest train/percent_correct, eval/percent_correct, "
            "reward/mean and train/loss; running time; for a failed run the reason and the end of the "
            "failing component's log. Cheap: poll it. picture=true adds a PNG of the learning curves. Next: "
            "rl_get_results(run_id) when it has finished; rl_get_logs(run_id, component) for a component's full log."
        ),
    )
    async def rl_check_status(
        run_id: RunId,
        picture: Annotated[bool, Field(description="Also return a PNG image of the run's learning curves.")] = False,
    ) -> Annotated[CallToolResult, RunStatus]:
        status = await core_call(runs.check_status, run_id, state=control.state_dir, offload=False)
        return await answer_with_curves(status, await results_of(run_id) if picture else None)

    @apps.tool(
        resource_uri=DASHBOARD_URI,
        title="Get a run's results",
        annotations=READ_ONLY,
        description=(
            "Results of a training run (run_id from rl_start_training or rl_list_runs), finished or not: "
            "final and best value of every metric, a history of each (at most 40 evenly spread points), "
            "checkpoints with paths, the config used, duration, the event log, and the W&B run (online URL, "
            "or the offline directory and its `wandb sync` command), with a PNG image of the learning "
            "curves unless picture=false. Logs: rl_get_logs(run_id, component)."
        ),
    )
    async def rl_get_results(
        run_id: RunId,
        picture: Annotated[bool, Field(description="Add a PNG image of the learning curves (train and eval "
                                       "percent correct, reward, loss against step).")] = True,
    ) -> Annotated[CallToolResult, RunResults]:
        results = await results_of(run_id)
        return await kept_answers.of(results, lambda: answer_with_curves(results, results if picture else None), picture)

    async def results_of(run_id: str) -> RunResults:
        """A run whose files are unchanged is answered on the event loop; reading them takes a thread."""
        return await core_call(runs.kept_results, run_id, state=control.state_dir, offload=False) \
            or await core_call(runs.get_results, run_id, state=control.state_dir)


async def answer_with_curves(model: BaseModel, results: RunResults | None) -> CallToolResult:
    """The tool's answer, and after its text the curves as an image.

    The structured result stays exactly the tool's model, so clients without images lose nothing.
    """
    result = answer(model)
    if results is not None:
        from hermes_rl_mcp.runs.curves_picture import curves_png, drawn_png  # matplotlib loads on the first picture

        png = drawn_png(results) or await core_call(curves_png, results)  # drawing takes a worker thread
        result.content.append(ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png"))
    return result


def register_run_tools(server: MCPServer, control: ControlPlane) -> None:
    """Stop, list and logs: the run tools that are not a view of one run."""

    @server.tool(
        title="Stop a training run",
        annotations=STOPS,
        description=(
            "Stop a training run (run_id from rl_start_training or rl_list_runs): every process of it "
            "ends within a few seconds. Stopping a finished run changes nothing and reports its final "
            "status. Checkpoints and metrics written so far stay. Next: rl_get_results(run_id); "
            "rl_get_logs(run_id, component) for its logs."
        ),
    )
    async def rl_stop_training(run_id: RunId) -> StopResult:
        return await core_call(runs.stop_run, run_id, state=control.state_dir)

    @server.tool(
        title="List training runs",
        annotations=READ_ONLY,
        description=(
            "Every training run this state directory holds, newest first, with its run_id, environment, "
            "status, start time and progress; optionally only runs in one status. Runs outlive the "
            "server, so this finds runs started in earlier sessions. Next: rl_check_status(run_id), "
            "rl_get_results(run_id) or rl_get_logs(run_id, component)."
        ),
    )
    async def rl_list_runs(
        status: Annotated[StatusFilter | None, Field(description="Only runs in this status.")] = None,
    ) -> RunList:
        return await core_call(runs.list_runs, status, state=control.state_dir, offload=False)

    @server.tool(
        title="Read a run's log",
        annotations=READ_ONLY,
        description=(
            "The last lines of one component's log of a training run (secrets redacted): api (the "
            "trajectory API), trainer (learner and policy server), env (the environment process) or "
            "supervisor (start-up, state changes, stop). Read it when a run failed or looks stuck. The "
            "same text as the resource rl://runs/{run_id}/logs/{component}."
        ),
    )
    async def rl_get_logs(
        run_id: RunId,
        component: Annotated[Component, Field(description="Which component's log.")],
        lines: Annotated[int, Field(description="How many lines from the end.", ge=1, le=5000)] = 200,
    ) -> LogText:
        return await core_call(runs.read_log, run_id, component, lines, state=control.state_dir, offload=False)
