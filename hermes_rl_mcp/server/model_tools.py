"""The model tools: try an environment against a policy, sample a checkpoint, evaluate one."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from hermes_rl_mcp.core import endpoints, evaluation, sampling, trial
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.core.evaluation import EvaluationStarted
from hermes_rl_mcp.core.inference_models import SampleResult, TrialResult
from hermes_rl_mcp.server.calls import READ_ONLY, STARTS, core_call

RunId = Annotated[str, Field(description="Run id from rl_start_training or rl_list_runs.", max_length=100)]
Step = Annotated[int | None, Field(description="Checkpoint step; default the run's final checkpoint, else its latest.", ge=0)]


class ChatMessage(BaseModel):
    role: str = Field(description="system, user or assistant.", max_length=40)
    content: str = Field(max_length=20_000)


def register_model_tools(server: MCPServer, control: ControlPlane) -> None:
    @server.tool(
        title="Try the environment against a model",
        annotations=READ_ONLY,
        description=(
            "Before training (or after): run the selected environment's own code for a few groups against a "
            "policy and see what it would train on. Per group: the prompt, every completion, their scores, "
            "and any error the environment raised with its traceback's last lines; overall: the share of "
            "groups whose scores differ (only those teach), the mean score and the time taken. The policy is "
            "an endpoint by name ('local', the local policy as a run would start it, the default; or a name "
            "the operator configured) or a run's checkpoint (run_id, optional step). Bounded by "
            "time_limit_seconds. Next: rl_edit_config to adjust, rl_start_training to train."
        ),
    )
    async def rl_test_inference(
        groups: Annotated[int, Field(description="Groups to collect.", ge=1, le=trial.MAX_GROUPS)] = 2,
        endpoint: Annotated[str | None, Field(description="Endpoint name: 'local' or one the operator named.", max_length=64)] = None,
        run_id: Annotated[str | None, Field(description="Use this run's checkpoint instead of an endpoint.", max_length=100)] = None,
        step: Step = None,
        time_limit_seconds: Annotated[
            float, Field(description="Bound on the whole trial.", ge=trial.MIN_SECONDS, le=trial.MAX_SECONDS)
        ] = trial.DEFAULT_SECONDS,
    ) -> TrialResult:
        document = await core_call(control.run_document)
        chosen = await core_call(endpoints.choose, endpoint, run_id, step, state=control.state_dir, document=document)
        return await core_call(trial.run_trial, document, chosen, groups, time_limit_seconds, control.state_dir)

    @server.tool(
        title="Sample a trained policy",
        annotations=READ_ONLY,
        description=(
            "Completions from a run's checkpoint (its final one by default, or the one at `step`): give chat "
            "messages, how many completions (n), the temperature and max_tokens. Works on finished and running "
            "runs that have written a checkpoint. Checkpoints are listed by rl_get_results(run_id)."
        ),
    )
    async def rl_sample(
        run_id: RunId,
        messages: Annotated[list[ChatMessage], Field(description="The conversation to answer.", min_length=1, max_length=sampling.MAX_MESSAGES)],
        n: Annotated[int, Field(description="Completions to sample.", ge=1, le=sampling.MAX_N)] = 1,
        temperature: Annotated[float, Field(description="Sampling temperature; 0 is greedy.", ge=0, le=5)] = 1.0,
        max_tokens: Annotated[int, Field(description="Longest completion in tokens.", ge=1, le=sampling.MAX_TOKENS)] = 64,
        step: Step = None,
    ) -> SampleResult:
        chosen = await core_call(endpoints.choose, None, run_id, step, state=control.state_dir)
        plain = [m.model_dump() for m in messages]
        return await core_call(sampling.sample, chosen, plain, n, temperature, max_tokens, control.state_dir)

    @server.tool(
        title="Evaluate a checkpoint",
        annotations=STARTS,
        description=(
            "Evaluate a run's checkpoint (final by default, or the one at `step`) on its environment's held-out "
            "split, in the background. Returns at once with the evaluation's own run_id: follow it with "
            "rl_check_status(run_id) and read eval/* metrics with rl_get_results(run_id), as for a training run; "
            "rl_stop_training(run_id) ends it."
        ),
    )
    async def rl_evaluate(run_id: RunId, step: Step = None) -> EvaluationStarted:
        return await core_call(evaluation.start_evaluation, run_id, step, state=control.state_dir)
