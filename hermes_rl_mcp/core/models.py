"""The control plane's results: what discovery and configuration hand back to any caller."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class EnvironmentInfo(BaseModel):
    name: str = Field(description="Name to pass to rl_select_environment.")
    class_name: str
    file: str = Field(description="Source file; read it to see how items are generated and scored.")
    line: int = Field(description="Line of the class definition in the file.")
    description: str
    config_class: str = Field(description="The environment's config class (BaseEnvConfig subclass).")
    sdk: Literal["hermes", "atroposlib", "unknown"] = Field(
        description="Which BaseEnv it derives from: this project's SDK or atroposlib's."
    )


class DiscoveryProblem(BaseModel):
    file: str
    reason: str


class EnvironmentList(BaseModel):
    environments: list[EnvironmentInfo]
    problems: list[DiscoveryProblem] = Field(
        description="Files that could not be read or parsed, and duplicate names; the rest is listed anyway."
    )
    scanned_dirs: list[str]
    selected: str | None = Field(None, description="The currently selected environment, if any.")


class ConfigField(BaseModel):
    name: str = Field(description="Namespaced name: env.X, trainer.X, run.X or openai.X.")
    type: dict[str, Any] = Field(description="JSON Schema of the field's type and constraints.")
    class_default: Any = Field(None, description="Default of the config class.")
    init_value: Any = Field(None, description="Value set by the environment's config_init(), which overrides the class default.")
    value: Any = Field(None, description="Current value: the one a run started now would use.")
    description: str = ""
    locked: bool = Field(description="Locked fields are set by the backend profile and cannot be edited.")
    edited: bool = Field(False, description="True when the value comes from an rl_edit_config edit.")


class CurrentConfig(BaseModel):
    environment: str
    environment_file: str
    backend: str
    profile: str = Field(description="Where the locked infrastructure values come from.")
    editable: list[ConfigField]
    locked: list[ConfigField]


class SelectResult(BaseModel):
    environment: EnvironmentInfo
    backend: str
    editable_fields: int
    locked_fields: int
    wandb_name: str
    notes: list[str] = Field(default_factory=list)


class EditResult(BaseModel):
    field: str
    old_value: Any
    new_value: Any
    notes: list[str] = Field(default_factory=list)
