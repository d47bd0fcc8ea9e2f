"""An environment process's configuration: ``config_init()`` < run YAML < command line.

The run YAML has the sections ``run`` (where the run directory and the two servers are),
``env`` (the environment's config fields), ``openai`` (policy endpoints) and ``trainer``.
Command-line overrides are ``--env.FIELD VALUE`` and ``--openai.FIELD VALUE`` (or ``=VALUE``);
each value is read as the field's type. Anything unknown or invalid is a :class:`ConfigError`
naming the field and what it accepts.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from hermes_rl_mcp import run_document, yaml_text
from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.run_document import RunDocument
from hermes_rl_mcp.sdk.env_types import APIServerConfig, BaseEnvConfig

if TYPE_CHECKING:  # annotations only: the environment class imports the runtime, not back
    from hermes_rl_mcp.sdk.base import BaseEnv

NULL_WORDS = {"null", "none", "~"}


class ConfigError(HermesRLError, ValueError):
    """Bad configuration; the message says which field and what is valid."""


@dataclass
class RunSettings:
    env: BaseEnvConfig
    servers: list[APIServerConfig]
    run_dir: Path
    temperature: float = 1.0
    document: RunDocument = field(default_factory=RunDocument)


def _accepts_str(annotation: Any) -> bool:
    if annotation is str:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_accepts_str(arg) for arg in typing.get_args(annotation))
    return False


def _accepts_none(annotation: Any) -> bool:
    return annotation is None or type(None) in typing.get_args(annotation)


def _coerce(model: type[BaseModel], name: str, raw: str) -> Any:
    """A command-line string read as the field's type (validation itself is pydantic's)."""
    annotation = model.model_fields[name].annotation
    if raw.strip().lower() in NULL_WORDS and _accepts_none(annotation):
        return None
    if _accepts_str(annotation):
        return raw
    try:
        return yaml_text.load(raw)
    except yaml_text.YAMLError:
        return raw


def _describe(model: type[BaseModel], name: str) -> str:
    """The field's type and bounds, e.g. ``int (> 0, <= 1024)``."""
    info = model.model_fields[name]
    annotation = info.annotation
    kind = annotation.__name__ if isinstance(annotation, type) else str(annotation).replace("typing.", "")
    bounds = [
        f"{symbol} {getattr(meta, attr)}"
        for meta in info.metadata
        for attr, symbol in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
        if getattr(meta, attr, None) is not None
    ]
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def _validation_message(model: type[BaseModel], section: str, exc: ValidationError, sources: dict[str, str]) -> str:
    lines = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else "?"
        where = sources.get(name, "config_init()")
        if error["type"] == "extra_forbidden":
            lines.append(f"{section}.{name} (from {where}) is not a field; valid fields: {', '.join(sorted(model.model_fields))}")
        else:
            expected = _describe(model, name) if name in model.model_fields else ""
            lines.append(f"{section}.{name} = {error.get('input')!r} (from {where}): {error['msg']}; expected {expected}")
    return "\n".join(lines)


def parse_overrides(args: list[str]) -> dict[str, dict[str, str]]:
    """``--env.X v`` / ``--openai.X=v`` pairs, by section."""
    out: dict[str, dict[str, str]] = {"env": {}, "openai": {}}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or "." not in arg:
            raise ConfigError(f"unexpected argument {arg!r}; overrides look like --env.FIELD VALUE or --openai.FIELD VALUE")
        key, eq, value = arg[2:].partition("=")
        section, _, name = key.partition(".")
        if section not in out or not name:
            raise ConfigError(f"unknown option --{key}; only --env.FIELD and --openai.FIELD overrides exist")
        if not eq:
            if i + 1 >= len(args):
                raise ConfigError(f"--{key} needs a value")
            i += 1
            value = args[i]
        out[section][name] = value
        i += 1
    return out


def load_document(path: Path | None) -> RunDocument:
    if path is None:
        return RunDocument()
    try:
        return run_document.load(Path(path))
    except run_document.RunDocumentError as exc:
        raise ConfigError(str(exc)) from None


def resolve(env_cls: type[BaseEnv], yaml_path: Path | None, cli_args: list[str]) -> RunSettings:
    """The merged, validated settings of an environment process."""
    document = load_document(yaml_path)
    overrides = parse_overrides(cli_args)
    run = document.run
    config_cls = env_cls.env_config_cls
    initial_env, initial_servers = env_cls.config_init()

    values = initial_env.model_dump()
    sources: dict[str, str] = {}
    if run.api_url:
        values["rollout_server_url"] = run.api_url
        sources["rollout_server_url"] = "run.api_url"
    for name, value in document.env.model_dump(exclude_unset=True).items():
        values[name] = value
        sources[name] = "the YAML env section"
    for name, raw in overrides["env"].items():
        if name not in config_cls.model_fields:
            raise ConfigError(f"--env.{name} is not a field of {config_cls.__name__}; valid fields: {', '.join(sorted(config_cls.model_fields))}")
        values[name] = _coerce(config_cls, name, raw)
        sources[name] = "the command line"
    try:
        env_config = config_cls.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_validation_message(config_cls, "env", exc, sources)) from None

    base_server = initial_servers[0].model_dump() if initial_servers else APIServerConfig().model_dump()
    servers = [s.model_dump() for s in initial_servers] or [dict(base_server)]
    policy_url = {"base_url": run.policy_url} if run.policy_url else {}
    for server in servers:
        server.update(policy_url)
    if document.openai:
        servers = [{**base_server, **policy_url, **entry} for entry in document.openai]
    for name, raw in overrides["openai"].items():
        if name not in APIServerConfig.model_fields:
            raise ConfigError(f"--openai.{name} is not a field; valid fields: {', '.join(sorted(APIServerConfig.model_fields))}")
        for server in servers:
            server[name] = _coerce(APIServerConfig, name, raw)
    try:
        server_configs = [APIServerConfig.model_validate(server) for server in servers]
    except ValidationError as exc:
        raise ConfigError(_validation_message(APIServerConfig, "openai", exc, {n: "the command line" for n in overrides["openai"]})) from None

    temperature = document.trainer_value("temperature", 1.0)
    if not isinstance(temperature, int | float) or isinstance(temperature, bool) or temperature < 0:
        raise ConfigError(f"trainer.temperature must be a non-negative number, got {temperature!r}")
    return RunSettings(env_config, server_configs, document.run_dir, float(temperature), document)
