"""The control plane's results: what discovery and configuration hand back to any caller."""

from __future__ import annotations

from typing import Annotated, Any, Literal


from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_serializer

# A config value: any JSON value, declared with the JSON types it may take, so that clients (and
# model providers that turn an untyped parameter into a string) see what a value may be. One
# branch per type, for dialects that allow a single `type` only, and no recursion into lists
# and objects: clients validate every result against its schema, and a recursive union costs
# them milliseconds per field.
JSON_TYPES = ("number", "integer", "string", "boolean", "null", "array", "object")
ConfigValue = Annotated[Any, WithJsonSchema({"anyOf": [{"type": kind} for kind in JSON_TYPES]})]


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


def _field_answer_schema(schema: dict[str, Any]) -> None:
    """An answer's field is the field's JSON Schema (type, bounds, enum...) with its value beside it."""
    properties = schema["properties"]
    properties["type"] = {
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        "description": "JSON type of the value (absent when any JSON value is accepted); the other JSON "
        "Schema keywords of the field (minimum, maximum, enum, items...) stand beside it.",
    }
    schema["required"] = ["value"]
    schema["additionalProperties"] = True


class ConfigField(BaseModel):
    """One editable field. Answered as the field's own JSON Schema (``type``, bounds, ``enum``...)
    with ``value`` beside it; keys that would only repeat another key are left out, to keep it lean."""

    model_config = ConfigDict(json_schema_extra=_field_answer_schema)

    type: dict[str, Any] = Field(description="JSON Schema of the field's type and constraints.")
    value: ConfigValue = Field(description="Current value: the one a run started now would use.")
    default: ConfigValue = Field(
        None, description="The environment's default (its config_init() value); shown only when the value differs."
    )
    class_default: ConfigValue = Field(
        None, description="The config class's default; shown only when config_init() changes it."
    )
    description: str = ""
    edited: bool = Field(False, description="Shown, as true, when the value comes from an rl_edit_config edit.")

    @model_serializer(mode="plain")
    def _lean(self) -> dict[str, Any]:
        # Flattened: {"type": "integer", "minimum": 1, ..., "value": 8} rather than a nested schema.
        # Built by hand: every value is plain JSON already, and an answer holds dozens of fields.
        data = {**self.type, "value": self.value}
        if self.value != self.default:
            data["default"] = self.default
        if self.class_default != self.default:
            data["class_default"] = self.class_default
        if self.description:
            data["description"] = self.description
        if self.edited:
            data["edited"] = True
        return data


class CurrentConfig(BaseModel):
    environment: str
    environment_file: str
    backend: str
    profile: str = Field(description="Where the locked infrastructure values come from.")
    editable: dict[str, ConfigField] = Field(
        description="Editable fields by namespaced name (env.X, trainer.X, openai.X, run.X)."
    )
    locked: dict[str, ConfigValue] = Field(
        description="Locked fields and their values, set by the backend profile or assigned per run."
    )


class SelectResult(BaseModel):
    environment: EnvironmentInfo
    backend: str
    editable_fields: int
    locked_fields: int
    wandb_name: str
    notes: list[str] = Field(default_factory=list)


class EditResult(BaseModel):
    field: str
    old_value: ConfigValue
    new_value: ConfigValue
    notes: list[str] = Field(default_factory=list)
