"""What checking (and writing) an environment hands back."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

CheckStage = Literal["parse", "discovery", "config", "dry_run"]


class CheckProblem(BaseModel):
    stage: CheckStage = Field(description="Where a run would meet it: parse, discovery, config (import and config_init) or dry_run.")
    line: int | None = Field(None, description="Line of the environment's file it points at, when there is one.")
    message: str
    traceback: list[str] = Field(default_factory=list, description="The last lines of the traceback, when code raised.")

    def shown(self) -> str:
        return f"{self.stage}{f' (line {self.line})' if self.line else ''}: {self.message}"


class DryRunGroup(BaseModel):
    index: int
    prompt: str = Field(description="The end of the prompt the policy saw (decoded tokens).")
    completions: list[str] = Field(description="The first few completions (decoded tokens).")
    scores: list[float] = Field(description="The environment's score of every completion.")
    scores_differ: bool = Field(description="True when the scores differ: a group a trainer would learn from.")
    seconds: float


class EnvironmentCheck(BaseModel):
    environment: str | None = Field(description="The name to select it by, once discovered.")
    class_name: str | None
    file: str
    ok: bool = Field(description="True when no problem was found: a run would start and score groups.")
    problems: list[CheckProblem] = Field(description="Every problem found, in the order a run meets them.")
    config_class: str | None = None
    config_fields: list[str] = Field(default_factory=list, description="The config fields introspection found.")
    dry_run: list[DryRunGroup] = Field(
        default_factory=list, description="Groups collected and scored against the local backend's initial (untrained) policy."
    )
    notes: list[str] = Field(default_factory=list)
    bound_seconds: float = Field(description="The most the import, config and dry run may take together.")
    seconds: float = Field(description="How long the check took.")
    written: bool = Field(False, description="rl_create_environment only: the file was written and is now listed.")
