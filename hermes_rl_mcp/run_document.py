"""A run's document (``config.yaml`` in its directory): one typed model, read and written here only.

The core builds it from the selection and the profile; the supervisor fills in the run's ports;
the trainer and the environment process read it. Sections:

- ``run``: where the run is (id, directory, backend, environment file), its two addresses, and
  for a resumed run the checkpoint it started from;
- ``env``: the environment's config fields (the environment's own config class validates them;
  the few the trainer needs are typed here);
- ``openai``: the policy endpoints the environment samples from;
- ``trainer``: the backend's trainer settings (``trainer.settings``), or a plain mapping for an
  operator's own backend, whose trainer reads it (such a backend may add sections of its own).

Loading is cached by the file's identity, since results read a run's document on every call.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from hermes_rl_mcp import yaml_text
from hermes_rl_mcp.backend_names import DEFAULT_BACKEND
from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.runs.redact import redact_data
from hermes_rl_mcp.trainer.settings import TRAINER_SETTINGS, ResumePoint

DEFAULT_RUN_DIR = "hermes-rl-run"
LOCAL_MODEL_NAME = "hermes-rl-local"
LOCAL_API_KEY = "local"  # the local policy endpoint takes no key; OpenAI clients insist on one


class RunDocumentError(HermesRLError, ValueError):
    """The document is missing, not YAML, or not a valid run document; the message says which."""


class EvaluatedCheckpoint(BaseModel):
    """What an evaluation job evaluates (``run.evaluates``): a checkpoint of another run."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    step: int = Field(ge=0, le=100_000_000)
    checkpoint: str = Field(min_length=1, description="The checkpoint archive, or tinker:// sampler weights.")
    base_model: str | None = None
    # tinker: the run's saved training state at that step and its LoRA rank, loaded into a new
    # adapter when the engine no longer serves the sampler weights (SkyRL tx, once the run ended)
    state: str | None = None
    lora_rank: int | None = Field(None, ge=1, le=1024)


class TrialSettings(BaseModel):
    """An environment's ``trial`` mode (``run.trial``): how many groups, each bounded in time."""

    model_config = ConfigDict(extra="forbid")

    groups: int = Field(1, ge=1, le=1024)
    group_timeout: float = Field(60.0, gt=0, le=3600)


class RunSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    dir: str | None = None
    backend: str = Field(DEFAULT_BACKEND, min_length=1)
    environment: str | None = None
    env_file: str | None = None
    env_class: str | None = None
    profile: str | None = None
    api_url: str | None = None
    policy_url: str | None = None
    # A job other than training: "evaluate" serves run.evaluates and runs the held-out evaluation.
    job: Literal["evaluate"] | None = None
    evaluates: EvaluatedCheckpoint | None = None
    trial: TrialSettings | None = None
    # The variable holding the policy endpoint's key: read by the environment process, never written.
    policy_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    resumed_from: ResumePoint | None = None  # set in a run resumed from another run's checkpoint


class EnvSection(BaseModel):
    """The environment's fields; only those the trainer and the supervisor read are typed here."""

    model_config = ConfigDict(extra="allow")

    total_steps: int = Field(1000, gt=0)
    use_wandb: bool = True
    wandb_name: str | None = None
    max_token_length: int = Field(2048, gt=0)
    rollout_server_url: str | None = None


class RunDocument(BaseModel):
    # Further sections are kept as written, for an operator's own backend (see runs.backends).
    model_config = ConfigDict(extra="allow")

    run: RunSection = Field(default_factory=RunSection)
    env: EnvSection = Field(default_factory=EnvSection)
    openai: list[dict[str, Any]] = Field(default_factory=list)
    # Typed as the backend's settings by the validator below; a mapping for an operator's backend.
    trainer: Any = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _sections(cls, data: Any) -> Any:
        """An empty section is absent; a single ``openai`` mapping is a list of one."""
        if not isinstance(data, dict):
            return data
        data = {name: value for name, value in data.items() if value is not None}
        if isinstance(data.get("openai"), dict):
            data["openai"] = [data["openai"]]
        return data

    @field_validator("trainer", mode="before")
    @classmethod
    def _trainer_of_the_backend(cls, value: Any, info: ValidationInfo) -> Any:
        run = info.data.get("run")
        settings = TRAINER_SETTINGS.get(run.backend if isinstance(run, RunSection) else DEFAULT_BACKEND)
        if settings is not None:
            return value if isinstance(value, settings) else settings.model_validate(value)
        if not isinstance(value, dict):
            raise ValueError("the trainer section must be a mapping of field names to values")
        return value

    @property
    def run_dir(self) -> Path:
        return Path(self.run.dir or DEFAULT_RUN_DIR).expanduser()

    def trainer_value(self, name: str, default: Any = None) -> Any:
        """One trainer setting, whatever the backend's trainer section is."""
        if isinstance(self.trainer, BaseModel):
            return getattr(self.trainer, name, default)
        return self.trainer.get(name, default)

    def to_data(self) -> dict[str, Any]:
        """Plain data, as written to disk: only the fields the sections were given or typed with."""
        trainer = self.trainer.model_dump() if isinstance(self.trainer, BaseModel) else dict(self.trainer)
        return {
            "run": self.run.model_dump(exclude_none=True),
            "env": self.env.model_dump(exclude_unset=True),
            "openai": [dict(server) for server in self.openai],
            "trainer": trainer,
            **(self.model_extra or {}),
        }

    def with_ports(self, api_port: int, policy_port: int) -> RunDocument:
        """A copy whose every address points at this run's own loopback ports."""
        api_url = f"http://127.0.0.1:{api_port}"
        policy_url = f"http://127.0.0.1:{policy_port}/v1"
        servers = [dict(server) for server in self.openai] or [{"model_name": LOCAL_MODEL_NAME}]
        for server in servers:
            server["base_url"] = policy_url
            server.setdefault("api_key", LOCAL_API_KEY)
        trainer = self.trainer.model_copy(update={"port": policy_port}) if isinstance(self.trainer, BaseModel) else {**self.trainer, "port": policy_port}
        return self.model_copy(
            update={
                "run": self.run.model_copy(update={"api_url": api_url, "policy_url": policy_url}),
                "env": self.env.model_copy(update={"rollout_server_url": api_url}),
                "openai": servers,
                "trainer": trainer,
            }
        )


def problems(exc: ValidationError) -> str:
    """A validation error as ``section.field: what is wrong`` items."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'document'}: {err['msg']}" for err in exc.errors(include_url=False))


def from_data(data: Any) -> RunDocument:
    """A run document from plain data; raises RunDocumentError naming each wrong field."""
    if isinstance(data, RunDocument):
        return data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RunDocumentError(f"a run document is a mapping with sections run, env, openai, trainer, not {type(data).__name__}")
    try:
        return RunDocument.model_validate(data)
    except ValidationError as exc:
        raise RunDocumentError(problems(exc)) from None


def load(path: Path) -> RunDocument:
    """The document at ``path``, the caller's own copy to change."""
    return peek(path).model_copy(deep=True)


def peek(path: Path) -> RunDocument:
    """The document at ``path`` as cached by the file's identity (a rename-replaced file is
    re-read): shared between callers, so only for reading."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise RunDocumentError(f"config file {path} does not exist") from None
    return _load(str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _load(path: str, inode: int, size: int, mtime_ns: int) -> RunDocument:
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml_text.load(handle)
    except FileNotFoundError:
        raise RunDocumentError(f"config file {path} does not exist") from None
    except (yaml_text.YAMLError, UnicodeDecodeError) as exc:
        raise RunDocumentError(f"config file {path} is not valid YAML: {exc}") from None
    try:
        return from_data(data)
    except RunDocumentError as exc:
        raise RunDocumentError(f"config file {path}: {exc}") from None


def write(path: Path, document: RunDocument) -> None:
    """Replace ``path`` in one rename, so a component never reads a half-written file; secrets redacted."""
    text = yaml_text.dump(redact_data(document.to_data()), sort_keys=False, default_flow_style=False)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
