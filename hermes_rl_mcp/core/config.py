"""Configuration of the selected environment: fields, locked profile, edits, persistence.

Three layers make a run's config: the environment's class defaults overridden by its
``config_init()``, then the agent's edits; the backend's locked profile (operator-owned YAML)
is applied last and can never be edited. Fields are namespaced ``env.*``, ``trainer.*``,
``openai.*`` and ``run.*``.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import functools
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from hermes_rl_mcp import settings, storage, yaml_text
from hermes_rl_mcp.backend_names import BUILTIN_BACKENDS, DEFAULT_BACKEND
from hermes_rl_mcp.core import field_rules
from hermes_rl_mcp.core.errors import (
    DiskFull,
    IntrospectionFailed,
    InvalidValue,
    LockedField,
    ProfileError,
    SelectionBusy,
    SelectionDamaged,
    UnknownField,
    excerpt,
)
from hermes_rl_mcp.core.models import ConfigField, EnvironmentInfo
from hermes_rl_mcp.core.schema_check import SchemaMismatch, coerce, describe, inline_refs
from hermes_rl_mcp.run_document import RunDocument, from_data
from hermes_rl_mcp.sdk.env_types import APIServerConfig
from hermes_rl_mcp.trainer.settings import TRAINER_SETTINGS

ASSIGNED = "<assigned per run>"
INTROSPECTION_TIMEOUT_S = 10.0
SELECTION_FILE = "selection.json"
SELECTION_LOCK_TIMEOUT_S = 30.0  # longer than an introspection child may take


class Profile(BaseModel):
    backend: str
    description: str = ""
    locked: dict[str, Any] = Field(default_factory=dict)
    source: str = ""


def load_profile(backend: str) -> Profile:
    """The locked profile of ``backend``: the operator's file if one is named, else the bundled one.

    The file is read on every call, so an operator's change takes effect at once; parsing it is
    cached by its text, since YAML parsing costs milliseconds on every tool call otherwise.
    """
    override = settings.profile_override(backend)
    try:
        if override is not None:
            text, source = override.read_text(), str(override)
        else:
            text = resources.files("hermes_rl_mcp").joinpath("profiles", f"{backend}.yaml").read_text()
            source = f"bundled {backend} profile"
        profile = _parse_profile(text, source).model_copy(deep=True)
    except (OSError, yaml_text.YAMLError, ValidationError) as exc:
        raise ProfileError(f"the {backend} profile could not be loaded ({exc}); fix or remove the operator's profile file") from exc
    unknown = [k for k in profile.locked if k.split(".", 1)[0] not in ("env", "trainer", "openai", "run") or "." not in k]
    if unknown:
        raise ProfileError(f"the {backend} profile ({source}) locks fields outside env./trainer./openai./run.: {unknown}")
    return profile


@functools.lru_cache(maxsize=16)
def _parse_profile(text: str, source: str) -> Profile:
    return Profile.model_validate({**(yaml_text.load(text) or {}), "source": source})


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
        return str(self.edits.get("run.backend", DEFAULT_BACKEND))


@dataclass(frozen=True)
class FieldSpec:
    name: str
    schema: dict[str, Any]
    class_default: Any
    init_value: Any
    description: str


# --- introspection (child process) ----------------------------------------------------------

def untrusted_child_environment() -> dict[str, str]:
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
        env=untrusted_child_environment(),
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
    """The selection file. Several server processes may share a state directory (Claude Desktop
    and Hermes Agent both open it), so a read-change-write holds ``changing()``: without it, two
    edits at the same moment both succeed and one of them is lost."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / SELECTION_FILE

    @contextlib.contextmanager
    def changing(self) -> Iterator[None]:
        with open(self.path.with_suffix(".lock"), "a") as handle:
            deadline = time.monotonic() + SELECTION_LOCK_TIMEOUT_S
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise SelectionBusy(
                            f"another server process has been changing the selection in {self.path.parent} for "
                            f"{SELECTION_LOCK_TIMEOUT_S:g} s; nothing was changed, try again"
                        ) from None
                    time.sleep(0.01)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def load(self) -> Selection | None:
        try:
            return Selection.model_validate_json(self.path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError) as exc:
            # A corrupt file must not wedge the server: it is kept aside for inspection, and the
            # caller is told, so the agent learns why its selection and edits are gone.
            aside = self.path.with_suffix(f".corrupt-{int(time.time())}")
            self.path.replace(aside)
            raise SelectionDamaged(
                f"the selection file was damaged ({type(exc).__name__}) and was moved to {aside}; the selection "
                "and its edits are gone: select an environment again"
            ) from None

    def save(self, selection: Selection) -> None:
        """Write the selection, or raise: a change is reported saved only once it is on disk."""
        tmp = self.path.with_suffix(f".tmp-{os.getpid()}")
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(selection.model_dump_json(indent=2))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)  # the rename itself is durable too
            finally:
                os.close(directory)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            if storage.is_out_of_space(exc):
                raise DiskFull(storage.disk_full_message(self.path, "the selection could not be saved")) from None
            raise


# --- the field table -------------------------------------------------------------------------

@functools.lru_cache(maxsize=32)
def _model_fields(model: type[BaseModel]) -> tuple[tuple[str, dict[str, Any], Any, str], ...]:
    """(name, JSON Schema, default, description) per field of a config class; read-only, shared."""
    schema = model.model_json_schema(mode="validation")
    defs = schema.get("$defs", {})
    fields = []
    for name, info in model.model_fields.items():
        field_schema = inline_refs(dict(schema["properties"].get(name, {})), defs)
        for noise in ("title", "default", "description"):
            field_schema.pop(noise, None)
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        fields.append((name, field_schema, default, info.description or ""))
    return tuple(fields)


def _model_specs(prefix: str, model: type[BaseModel], init_values: dict[str, Any] | None = None) -> dict[str, FieldSpec]:
    specs = {}
    for name, field_schema, default, description in _model_fields(model):
        init = (init_values or {}).get(name, default)
        specs[f"{prefix}.{name}"] = FieldSpec(f"{prefix}.{name}", field_schema, default, init, description)
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
        "run.backend", {"type": "string", "enum": list(BUILTIN_BACKENDS)}, DEFAULT_BACKEND, DEFAULT_BACKEND,
        "local: a small policy on this CPU; tinker: LoRA on an LLM via Tinker.",
    )
    return specs


def build_fields(selection: Selection, profile: Profile) -> tuple[dict[str, ConfigField], dict[str, Any]]:
    """The editable fields by name with their current values, and the locked ones with the profile's values."""
    editable: dict[str, ConfigField] = {}
    locked: dict[str, Any] = {}
    for name, spec in field_specs(selection).items():
        if name in profile.locked:
            locked[name] = profile.locked[name]
            continue
        edited = name in selection.edits
        editable[name] = ConfigField(
            type=compact_schema(spec.schema),
            value=selection.edits[name] if edited else spec.init_value,
            default=spec.init_value,
            class_default=spec.class_default,
            description=spec.description,
            edited=edited,
        )
    return editable, locked


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same constraints in fewer keys: nullable types as a type list, integer bounds inclusive."""
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = next(option for option in options if option != {"type": "null"})
        if isinstance(other.get("type"), str):
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return {**compact_schema(other), **rest, "type": [other["type"], "null"]}
    if schema.get("type") != "integer":
        return schema
    compact = {"type": "integer", **schema}
    if isinstance(compact.get("exclusiveMinimum"), int):
        compact["minimum"] = compact.pop("exclusiveMinimum") + 1
    if isinstance(compact.get("exclusiveMaximum"), int):
        compact["maximum"] = compact.pop("exclusiveMaximum") - 1
    return compact


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
        f"unknown field {excerpt(name)}.{hint} Fields are namespaced env.*, trainer.*, openai.* and run.*; "
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
    reason = field_rules.problem(full, coerced)
    if reason:
        raise InvalidValue(f"invalid value for {full}: {reason}; nothing was changed.")
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
                reason = field_rules.problem(name, selection.edits[name])
            except SchemaMismatch as exc:
                reason = f"the value is no longer valid ({exc})"
        if reason:
            notes.append(f"dropped the edit {name}={json.dumps(selection.edits.pop(name))}: {reason}")
    return notes


def locked_values(backend: str) -> dict[str, Any]:
    """The values the backend's locked profile sets now (``namespace.field`` -> value), per-run ones left out."""
    return {name: value for name, value in load_profile(backend).locked.items() if value != ASSIGNED}


def run_document(selection: Selection, profile: Profile) -> RunDocument:
    """The run document a supervisor starts from; per-run values (ports, URLs) are filled later."""
    sections: dict[str, dict[str, Any]] = {"env": {}, "trainer": {}, "openai": {}}
    editable, locked = build_fields(selection, profile)
    values = {**{name: field.value for name, field in editable.items()}, **locked}
    for name, value in values.items():
        namespace, _, key = name.partition(".")
        if namespace in sections and value != ASSIGNED:
            sections[namespace][key] = value
    return from_data({
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
    })
