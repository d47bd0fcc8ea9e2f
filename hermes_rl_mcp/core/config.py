"""Configuration of the selected environment: fields, locked profile, edits, persistence.

Three layers make a run's config: the environment's class defaults overridden by its
``config_init()``, then the agent's edits; the backend's locked profile (operator-owned YAML)
is applied last and can never be edited. Fields are namespaced ``env.*``, ``trainer.*``,
``openai.*`` and ``run.*``.
"""

from __future__ import annotations

import difflib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from hermes_rl_mcp import settings
from hermes_rl_mcp.core.errors import (
    IntrospectionFailed,
    InvalidValue,
    LockedField,
    ProfileError,
    UnknownField,
)
from hermes_rl_mcp.core.models import ConfigField, EnvironmentInfo
from hermes_rl_mcp.core.schema_check import SchemaMismatch, coerce, describe, inline_refs
from hermes_rl_mcp.core.trainer_fields import TRAINER_SETTINGS
from hermes_rl_mcp.sdk.base import APIServerConfig

ASSIGNED = "<assigned per run>"
BACKENDS = ("local", "tinker")
INTROSPECTION_TIMEOUT_S = 10.0
SELECTION_FILE = "selection.json"


class Profile(BaseModel):
    backend: str
    description: str = ""
    locked: dict[str, Any] = Field(default_factory=dict)
    source: str = ""


def load_profile(backend: str) -> Profile:
    """The locked profile of ``backend``: the operator's file if one is named, else the bundled one."""
    override = settings.profile_override(backend)
    try:
        if override is not None:
            text, source = override.read_text(), str(override)
        else:
            text = resources.files("hermes_rl_mcp").joinpath("profiles", f"{backend}.yaml").read_text()
            source = f"bundled {backend} profile"
        data = yaml.safe_load(text) or {}
        profile = Profile.model_validate({**data, "source": source})
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ProfileError(f"the {backend} profile could not be loaded ({exc}); fix or remove the operator's profile file") from exc
    unknown = [k for k in profile.locked if k.split(".", 1)[0] not in ("env", "trainer", "openai", "run") or "." not in k]
    if unknown:
        raise ProfileError(f"the {backend} profile ({source}) locks fields outside env./trainer./openai./run.: {unknown}")
    return profile


class Selection(BaseModel):
    """What persists between server processes: the selected environment and the edits."""

    environment: EnvironmentInfo
    file_size: int
    file_mtime_ns: int
    config_class: str
    env_fields: dict[str, dict[str, Any]]
    server_configs: list[dict[str, Any]] = Field(default_factory=list)
    trainer_defaults: dict[str, Any] = Field(default_factory=dict)
    edits: dict[str, Any] = Field(default_factory=dict)
    selected_at: float

    @property
    def backend(self) -> str:
        return str(self.edits.get("run.backend", "local"))


@dataclass(frozen=True)
class FieldSpec:
    name: str
    schema: dict[str, Any]
    class_default: Any
    init_value: Any
    description: str


# --- introspection (child process) ----------------------------------------------------------

def _child_environment() -> dict[str, str]:
    """Untrusted environment code gets no secrets: only what Python needs to start."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "SYSTEMROOT")
    return {k: os.environ[k] for k in keep if k in os.environ}


def introspect(env: EnvironmentInfo, timeout: float | None = None) -> dict[str, Any]:
    """Import the environment in a child process and read its config fields."""
    timeout = INTROSPECTION_TIMEOUT_S if timeout is None else timeout
    command = [sys.executable, "-m", "hermes_rl_mcp.core.introspect", env.file, env.class_name]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(Path(env.file).parent),
        env=_child_environment(),
        start_new_session=True,  # so a timeout can end everything the environment spawned
    )
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.communicate()
        raise IntrospectionFailed(
            f"environment {env.name!r} did not finish importing within {timeout:g} s "
            f"(does {env.file} do slow work or wait for something at import time or in config_init()?); "
            "nothing was changed"
        ) from None
    tail = err.decode(errors="replace").strip().splitlines()[-5:]
    try:
        answer = json.loads(out)
    except ValueError:
        answer = {"ok": False, "error": f"the introspection process exited with code {child.returncode}"}
    if not answer.get("ok"):
        detail = " | ".join(tail)
        raise IntrospectionFailed(
            f"could not read the config of environment {env.name!r} from {env.file}: {answer.get('error')}"
            + (f" (stderr: {detail})" if detail else "")
            + "; nothing was changed"
        )
    return answer


def new_selection(env: EnvironmentInfo, edits: dict[str, Any] | None = None) -> Selection:
    stat = Path(env.file).stat()
    answer = introspect(env)
    return Selection(
        environment=env,
        file_size=stat.st_size,
        file_mtime_ns=stat.st_mtime_ns,
        config_class=answer["config_class"],
        env_fields=answer["fields"],
        server_configs=answer.get("server_configs", []),
        trainer_defaults=answer.get("trainer_defaults", {}),
        edits=dict(edits or {}),
        selected_at=time.time(),
    )


def is_stale(selection: Selection) -> bool:
    try:
        stat = Path(selection.environment.file).stat()
    except OSError:
        return False  # a vanished file keeps its last known fields; starting a run reports it
    return (stat.st_size, stat.st_mtime_ns) != (selection.file_size, selection.file_mtime_ns)


# --- persistence -----------------------------------------------------------------------------

class SelectionStore:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / SELECTION_FILE

    def load(self) -> Selection | None:
        try:
            return Selection.model_validate_json(self.path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError):
            # A corrupt file must not wedge the server; keep it aside for inspection.
            self.path.replace(self.path.with_suffix(f".corrupt-{int(time.time())}"))
            return None

    def save(self, selection: Selection) -> None:
        tmp = self.path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(selection.model_dump_json(indent=2))
        os.replace(tmp, self.path)


# --- the field table -------------------------------------------------------------------------

def _model_specs(prefix: str, model: type[BaseModel], init_values: dict[str, Any] | None = None) -> dict[str, FieldSpec]:
    schema = model.model_json_schema(mode="validation")
    defs = schema.get("$defs", {})
    specs = {}
    for name, info in model.model_fields.items():
        field_schema = inline_refs(dict(schema["properties"].get(name, {})), defs)
        for noise in ("title", "default", "description"):
            field_schema.pop(noise, None)
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        init = (init_values or {}).get(name, default)
        specs[f"{prefix}.{name}"] = FieldSpec(f"{prefix}.{name}", field_schema, default, init, info.description or "")
    return specs


def field_specs(selection: Selection) -> dict[str, FieldSpec]:
    specs: dict[str, FieldSpec] = {}
    for name, data in selection.env_fields.items():
        specs[f"env.{name}"] = FieldSpec(
            f"env.{name}", data.get("schema", {}), data.get("class_default"), data.get("init_value"), data.get("description", "")
        )
    trainer_model = TRAINER_SETTINGS[selection.backend]
    # An environment may suggest trainer settings (``trainer_defaults``) the way config_init()
    # sets its own fields; only those that fit the backend's trainer and its types are used.
    plain = _model_specs("trainer", trainer_model)
    suggested = {}
    for name, value in selection.trainer_defaults.items():
        spec = plain.get(f"trainer.{name}")
        if spec is not None:
            try:
                suggested[name] = coerce(value, spec.schema)
            except SchemaMismatch:
                continue
    specs.update(_model_specs("trainer", trainer_model, suggested))
    first_server = selection.server_configs[0] if selection.server_configs else {}
    specs.update(_model_specs("openai", APIServerConfig, first_server))
    specs["run.backend"] = FieldSpec(
        "run.backend", {"type": "string", "enum": list(BACKENDS)}, "local", "local",
        "Where the run executes: local (this machine's CPU) or tinker (remote trainer, needs TINKER_API_KEY).",
    )
    return specs


def build_fields(selection: Selection, profile: Profile) -> list[ConfigField]:
    fields = []
    for name, spec in field_specs(selection).items():
        locked = name in profile.locked
        edited = not locked and name in selection.edits
        if locked:
            value = profile.locked[name]
        elif edited:
            value = selection.edits[name]
        else:
            value = spec.init_value
        fields.append(
            ConfigField(
                name=name,
                type=spec.schema,
                class_default=spec.class_default,
                init_value=spec.init_value,
                value=value,
                description=spec.description,
                locked=locked,
                edited=edited,
            )
        )
    return fields


def resolve_field_name(name: str, specs: dict[str, FieldSpec]) -> str:
    """Accept ``env.group_size`` or, when unambiguous, ``group_size``."""
    name = name.strip()
    if name in specs:
        return name
    if "." not in name:
        matches = [full for full in specs if full.split(".", 1)[1] == name]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise UnknownField(f"field {name!r} is ambiguous: it exists as {', '.join(sorted(matches))}; give the namespaced name")
    candidates = list(specs) + sorted({full.split(".", 1)[1] for full in specs})
    close = difflib.get_close_matches(name, candidates, n=5, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise UnknownField(
        f"unknown field {name!r}.{hint} Fields are namespaced env.*, trainer.*, openai.* and run.*; "
        f"the current config lists all {len(specs)} of them."
    )


def validate_edit(selection: Selection, profile: Profile, field: str, value: Any) -> tuple[str, Any]:
    """Return the resolved field name and the coerced value, or raise with what is valid."""
    specs = field_specs(selection)
    full = resolve_field_name(field, specs)
    if full in profile.locked:
        raise LockedField(
            f"{full} is locked by the {profile.backend} profile ({profile.source}) at "
            f"{json.dumps(profile.locked[full])}; locked infrastructure fields cannot be changed over MCP. "
            "An operator can change the profile file."
        )
    spec = specs[full]
    try:
        coerced = coerce(value, spec.schema)
    except SchemaMismatch as exc:
        raise InvalidValue(f"invalid value for {full}: {exc}. It accepts {describe(spec.schema)}; nothing was changed.") from None
    if coerced is None and spec.schema.get("type") not in (None, "null") and "anyOf" not in spec.schema:
        raise InvalidValue(f"invalid value for {full}: null is not {describe(spec.schema)}; nothing was changed.")
    return full, coerced


def prune_edits(selection: Selection, profile: Profile) -> list[str]:
    """Drop edits that no longer apply (field gone, now locked, or now invalid); say which."""
    specs = field_specs(selection)
    notes = []
    for name in list(selection.edits):
        if name == "run.backend":
            continue
        reason = None
        if name not in specs:
            reason = "the field no longer exists"
        elif name in profile.locked:
            reason = f"the {profile.backend} profile locks it"
        else:
            try:
                selection.edits[name] = coerce(selection.edits[name], specs[name].schema)
            except SchemaMismatch as exc:
                reason = f"the value is no longer valid ({exc})"
        if reason:
            notes.append(f"dropped the edit {name}={json.dumps(selection.edits.pop(name))}: {reason}")
    return notes


def run_document(selection: Selection, profile: Profile) -> dict[str, Any]:
    """The run config a supervisor starts from; per-run values (ports, URLs) are filled later."""
    sections: dict[str, dict[str, Any]] = {"env": {}, "trainer": {}, "openai": {}}
    for field in build_fields(selection, profile):
        namespace, _, key = field.name.partition(".")
        if namespace in sections and field.value != ASSIGNED:
            sections[namespace][key] = field.value
    return {
        "run": {
            "backend": profile.backend,
            "environment": selection.environment.name,
            "env_file": selection.environment.file,
            "env_class": selection.environment.class_name,
            "profile": profile.source,
        },
        "env": sections["env"],
        "trainer": sections["trainer"],
        "openai": [sections["openai"]],
    }
