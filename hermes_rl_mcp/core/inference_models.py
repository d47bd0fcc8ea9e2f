"""What trying an environment against a model and sampling a checkpoint answer: typed results."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hermes_rl_mcp.core.endpoints import Endpoint


class PromptMessage(BaseModel):
    role: str = Field(description="Chat role; 'text' for a plain text prompt.")
    content: str


class EnvironmentFailure(BaseModel):
    """An exception the environment raised (or a bound it overran)."""

    type: str
    message: str
    traceback: list[str] = Field(default_factory=list, description="The last lines of the traceback.")


class TrialGroup(BaseModel):
    index: int
    item: str | None = Field(None, description="The item the environment handed out (its repr, shortened).")
    prompt: list[PromptMessage] = Field(default_factory=list, description="The first request's prompt.")
    completions: list[str] = Field(default_factory=list, description="Every completion of the group, in order.")
    finish_reasons: list[str] = Field(default_factory=list)
    requests: int = Field(0, description="Requests the environment made for this group (more than one when multi-turn).")
    scores: list[float] = Field(default_factory=list)
    scores_differ: bool = Field(False, description="True when the scores are not all equal: the group would teach.")
    seconds: float = 0.0
    error: EnvironmentFailure | None = None


class TrialResult(BaseModel):
    environment: str
    endpoint: Endpoint
    groups_asked: int
    groups_finished: int = Field(description="Groups that returned scores.")
    groups: list[TrialGroup]
    share_differing: float = Field(description="Share of finished groups whose scores differ (the groups that teach).")
    mean_score: float | None = None
    setup_seconds: float | None = None
    total_seconds: float
    time_bound_seconds: float
    timed_out: bool = Field(description="True when the trial hit its time bound; the groups finished by then are shown.")
    error: EnvironmentFailure | None = Field(None, description="A failure outside any group (setup, import, startup).")
    log_tail: str | None = Field(None, description="The end of the environment's output when it failed outside a group.")


class SampledCompletion(BaseModel):
    text: str
    finish_reason: str
    tokens: int


class SampleResult(BaseModel):
    endpoint: Endpoint
    completions: list[SampledCompletion]
    prompt_tokens: int
    seconds: float
