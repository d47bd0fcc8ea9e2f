"""Tools over finished runs: resume one from its last checkpoint, compare several side by side.

Thin calls into ``hermes_rl_mcp.runs.resume`` and ``hermes_rl_mcp.runs.compare``; the comparison is
also the resource ``rl://compare/{+run_ids}`` (ids joined by commas).
"""

from __future__ import annotations

import functools
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import CallToolResult
from pydantic import Field

from hermes_rl_mcp.core import config
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.runs.compare import MAX_RUNS, MIN_RUNS, RunComparison, compare_runs, kept_comparison, parse_run_ids
from hermes_rl_mcp.runs.errors import RunError
from hermes_rl_mcp.runs.models import RunStarted
from hermes_rl_mcp.runs.resume import MAX_RESUME_STEPS, resume_run
from hermes_rl_mcp.server.calls import READ_ONLY, STARTS, KeptAnswers, answer, core_call
from hermes_rl_mcp.server.run_tools import RunId


def register_run_history_tools(server: MCPServer, control: ControlPlane) -> None:
    kept_answers = KeptAnswers()

    @server.tool(
        title="Resume a training run",
        annotations=STARTS,
        description=(
            "Start a new run from a finished run's last checkpoint (run_id from rl_list_runs): the policy's "
            "weights and optimiser state are loaded, and its steps and metrics count on from the checkpoint's "
            "step. It uses the finished run's config (environment, backend, trainer settings) and trains "
            "`steps` more steps (default: as many as that run trained). Returns at once with the new run_id, "
            "like rl_start_training; rl_check_status, rl_get_results and rl_list_runs show `resumed_from`. "
            "Refused, with the reason, for a run still going or one without checkpoints."
        ),
    )
    async def rl_resume_training(
        run_id: RunId,
        steps: Annotated[
            int | None, Field(description="Steps to train beyond the checkpoint.", ge=1, le=MAX_RESUME_STEPS)
        ] = None,
    ) -> RunStarted:
        return await core_call(resume_run, run_id, steps, state=control.state_dir, locked_values=config.locked_values)

    @server.tool(
        title="Compare training runs",
        annotations=READ_ONLY,
        description=(
            f"Compare {MIN_RUNS} to {MAX_RUNS} training runs side by side (run ids from rl_list_runs): for each, "
            "status, step of total_steps, wall time, and the final and best value of every accuracy, reward, "
            "return and loss metric; which run leads each metric; and the config fields whose values differ "
            "between the runs. The same JSON is the resource rl://compare/ID1,ID2,... (the ids joined by commas)."
        ),
    )
    async def rl_compare_runs(
        run_ids: Annotated[
            list[Annotated[str, Field(max_length=100)]],
            Field(description="The runs to compare, in the order to show them.", min_length=MIN_RUNS, max_length=MAX_RUNS),
        ],
    ) -> Annotated[CallToolResult, RunComparison]:
        # Runs unchanged since the last call: answered on the event loop, the answer built then.
        comparison = await core_call(kept_comparison, run_ids, state=control.state_dir, offload=False) \
            or await core_call(compare_runs, run_ids, state=control.state_dir)
        return await kept_answers.of(comparison, functools.partial(answer, comparison))

    @server.resource(
        "rl://compare/{+run_ids}",
        name="run-comparison",
        title="Run comparison",
        description=(
            f"{MIN_RUNS} to {MAX_RUNS} runs side by side (ids joined by commas): final and best metrics, steps, "
            "wall time, the config fields that differ. The same JSON as rl_compare_runs."
        ),
        mime_type="application/json",
    )
    def run_comparison(run_ids: str) -> str:
        try:
            return compare_runs(parse_run_ids(run_ids), state=control.state_dir).model_dump_json()
        except RunError as exc:
            raise ResourceNotFoundError(str(exc)) from None
