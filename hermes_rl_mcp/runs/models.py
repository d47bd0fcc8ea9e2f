"""What run control hands back: plain pydantic models, ready to be a tool's structured output."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hermes_rl_mcp.runs.states import (  # noqa: F401 - re-exported
    ACTIVE_STATES,
    COMPONENTS,
    LOG_COMPONENTS,
    RUN_STATES,
    STATUS_METRICS,
    TERMINAL_STATES,
    RunState,
    log_uri,
)


class RunStarted(BaseModel):
    run_id: str
    status: RunState = Field(description="Always 'starting': the run continues in the background.")
    environment: str
    backend: str
    run_dir: str
    config_path: str = Field(description="The run's config.yaml (secrets redacted).")
    log_uris: dict[str, str] = Field(description="Log resource URI per component (api, trainer, env, supervisor).")
    created_at: float = Field(description="Unix time the run was created.")


class ResumedFrom(BaseModel):
    """The run (and checkpoint) a resumed run started from; its steps and metrics continue from there."""

    run_id: str
    step: int = Field(description="Step of the parent's checkpoint; this run's steps count on from it.")
    checkpoint: str = Field(description="The checkpoint file, or the engine's tinker:// state path.")


class ComponentStatus(BaseModel):
    name: str
    state: Literal["pending", "starting", "running", "exited", "stopped"] = Field(
        description="pending: not started yet; exited: ended on its own (see exit_code); stopped: ended by the supervisor."
    )
    pid: int | None = None
    port: int | None = None
    exit_code: int | None = Field(None, description="Exit code; negative means killed by that signal (-9 = SIGKILL).")


class RunEvent(BaseModel):
    time: float
    status: str
    reason: str


class QuietComponent(BaseModel):
    component: str
    quiet_seconds: float = Field(description="Seconds since its process last used any CPU.")
    stopped_by_signal: bool = Field(description="True when the process is stopped (SIGSTOP, a debugger).")


class StallInfo(BaseModel):
    summary: str = Field(description="What has not advanced, for how long, and which component has gone quiet.")
    step: int = Field(description="The last step reached.")
    since: float = Field(description="Unix time of that step (or of reaching running, before the first step).")
    seconds: float = Field(description="Seconds without a new step.")
    quiet_after_seconds: float = Field(description="A run without a new step this long is shown as stalled.")
    fail_after_seconds: float = Field(description="A run without a new step this long fails and its processes are ended.")
    quiet_components: list[QuietComponent] = Field(description="Components that have gone quiet, the likeliest cause first.")


class EvaluationOf(BaseModel):
    """The checkpoint an evaluation job (rl_evaluate) measures."""

    run_id: str
    step: int


Job = Literal["train", "evaluate"]
JOB_DESCRIPTION = "train: a training run; evaluate: an evaluation of another run's checkpoint (rl_evaluate)."


class RunStatus(BaseModel):
    run_id: str
    environment: str
    backend: str
    job: Job = Field("train", description=JOB_DESCRIPTION)
    evaluates: EvaluationOf | None = Field(None, description="For an evaluation: the run and step of its checkpoint.")
    status: RunState
    reason: str | None = Field(None, description="Why the run is in this state (failure cause, stop request...).")
    failed_component: str | None = None
    exit_code: int | None = Field(None, description="Exit code of the failed component, if one failed.")
    log_tail: str | None = Field(None, description="Last lines of the failed component's log (secrets redacted).")
    components: dict[str, ComponentStatus]
    step: int = Field(description="Latest step recorded in metrics.jsonl (0 before the first).")
    total_steps: int | None
    progress: float = Field(description="step / total_steps, between 0 and 1.")
    metrics: dict[str, float | None] = Field(
        description="Latest train/percent_correct, eval/percent_correct, reward/mean, train/loss (null until first logged)."
    )
    metrics_step: dict[str, int] = Field(default_factory=dict, description="Step at which each reported metric was logged.")
    created_at: float
    started_at: float | None = Field(None, description="When all components were ready (status running).")
    ended_at: float | None = None
    running_seconds: float = Field(description="Seconds since creation, up to the end for finished runs.")
    run_dir: str
    supervisor_pid: int | None = Field(None, description="Process id of the run's supervisor.")
    log_uris: dict[str, str]
    stall: StallInfo | None = Field(
        None, description="Present while the run is running but its step has not advanced within the operator's limit."
    )
    notes: list[str] = Field(default_factory=list, description="Notes from the components, e.g. W&B mirroring offline.")
    checked_at: float = Field(description="When this answer was computed.")
    cached: bool = Field(False, description="True when the operator's minimum interval returned an earlier answer.")
    resumed_from: ResumedFrom | None = Field(None, description="Set when this run resumed another run's checkpoint.")
    next_fresh_at: float | None = Field(None, description="When a fresh answer is available, if this one is cached.")


class RunSummary(BaseModel):
    run_id: str
    environment: str
    backend: str
    job: Job = Field("train", description=JOB_DESCRIPTION)
    evaluates: EvaluationOf | None = Field(None, description="For an evaluation: the run and step of its checkpoint.")
    status: RunState
    reason: str | None = None
    created_at: float
    ended_at: float | None = None
    step: int
    total_steps: int | None
    progress: float
    resumed_from: ResumedFrom | None = Field(None, description="Set when this run resumed another run's checkpoint.")


class RunList(BaseModel):
    runs: list[RunSummary] = Field(description="Newest first.")
    count: int


class MetricPoint(BaseModel):
    step: int
    value: float


class MetricSeries(BaseModel):
    """One metric's history as two parallel lists: lean on the wire, and cheap for clients to validate."""

    steps: list[int]
    values: list[float]

    @classmethod
    def of(cls, points: list[MetricPoint]) -> MetricSeries:
        return cls(steps=[p.step for p in points], values=[p.value for p in points])


class BestMetric(BaseModel):
    value: float
    step: int
    goal: Literal["max", "min"]


class CheckpointInfo(BaseModel):
    step: int
    path: str = Field(description="A file, or the engine's tinker:// path of the saved training state.")
    kind: str
    time: float | None = None
    exists: bool | None = Field(description="Whether the file is on disk; null for a path held by the engine.")
    sampler_path: str | None = Field(None, description="tinker:// path of the sampler weights saved with it (tinker backend).")


class WandbInfo(BaseModel):
    mode: Literal["online", "offline", "none"]
    url: str | None = None
    directories: list[str] = Field(default_factory=list, description="Offline W&B run directories.")
    sync_commands: list[str] = Field(default_factory=list, description="Commands that upload the offline runs.")


class RunResults(BaseModel):
    run_id: str
    environment: str
    backend: str
    status: RunState
    reason: str | None
    created_at: float
    ended_at: float | None
    duration_seconds: float
    step: int
    total_steps: int | None
    final_metrics: dict[str, float] = Field(description="Last logged value of every metric.")
    best_metrics: dict[str, BestMetric] = Field(description="Best value (max for accuracy/reward/return, min for loss).")
    history: dict[str, MetricSeries] = Field(
        description="Each metric at most 40 evenly spread points (steps and values), first and last included."
    )
    checkpoints: list[CheckpointInfo]
    final_checkpoint: str | None
    config: dict[str, Any] = Field(description="The config the run used (secrets redacted).")
    wandb: WandbInfo
    notes: list[str] = Field(default_factory=list, description="Notes from the components, e.g. W&B mirroring offline.")
    events: list[RunEvent]
    resumed_from: ResumedFrom | None = Field(
        None, description="Set when this run resumed another run's checkpoint; its history starts after that step."
    )


class LogText(BaseModel):
    run_id: str
    component: str
    lines: int = Field(description="Number of lines returned.")
    text: str
    log_size_bytes: int
    truncated: bool = Field(description="True when the log holds more than the lines returned.")


class StopResult(BaseModel):
    run_id: str
    status: RunState
    reason: str | None
    changed: bool = Field(description="False when the run had already finished: nothing was done.")
    leftover_pids: list[int] = Field(default_factory=list, description="Processes that survived SIGKILL (should be empty).")
