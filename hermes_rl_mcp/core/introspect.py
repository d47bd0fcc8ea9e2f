"""Child process: import one environment file and describe its config class as JSON.

Run as ``python -m hermes_rl_mcp.core.introspect FILE CLASS``. Environment code is untrusted, so
this runs in its own process under a timeout; anything the environment prints goes to stderr
(stdout is swapped out before the import) and only the JSON answer reaches the real stdout.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from hermes_rl_mcp.core.schema_check import inline_refs
from hermes_rl_mcp.runs.redact import REDACTED, is_secret_name


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    try:
        return to_jsonable_python(value)
    except Exception:  # noqa: BLE001 - an exotic default is shown as text rather than failing
        return repr(value)


def describe(file: Path, class_name: str) -> dict[str, Any]:
    sys.path.insert(0, str(file.parent))
    module_name = f"hermes_rl_env_{file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    env_cls = getattr(module, class_name, None)
    if env_cls is None:
        raise RuntimeError(f"{file} defines no class {class_name} when imported")
    config_cls = getattr(env_cls, "env_config_cls", None)
    if config_cls is None or not hasattr(config_cls, "model_fields"):
        raise RuntimeError(f"{class_name}.env_config_cls is not a pydantic model class")
    initial = env_cls.config_init()
    env_config, server_configs = initial if isinstance(initial, tuple) else (initial, [])
    full_schema = config_cls.model_json_schema(mode="validation")
    defs = full_schema.get("$defs", {})
    properties = full_schema.get("properties", {})
    fields: dict[str, Any] = {}
    for name, info in config_cls.model_fields.items():
        schema = inline_refs(copy.deepcopy(properties.get(name, {})), defs)
        for noise in ("title", "default", "description"):
            schema.pop(noise, None)
        class_default = None if info.is_required() else _jsonable(info.get_default(call_default_factory=True))
        init_value = _jsonable(getattr(env_config, name, None))
        if is_secret_name(name):  # a secret belongs in an environment variable, never in results
            class_default = REDACTED if class_default else class_default
            init_value = REDACTED if init_value else init_value
        fields[name] = {
            "schema": schema,
            "class_default": class_default,
            "init_value": init_value,
            "description": info.description or "",
            "required": info.is_required(),
        }
    servers = []
    for server in server_configs or []:
        dumped = _jsonable(server.model_dump() if hasattr(server, "model_dump") else server)
        if isinstance(dumped, dict):
            dumped = {k: (REDACTED if v and is_secret_name(k) else v) for k, v in dumped.items()}
        servers.append(dumped)
    trainer_defaults = getattr(env_cls, "trainer_defaults", None) or {}
    if not isinstance(trainer_defaults, dict):
        raise RuntimeError(f"{class_name}.trainer_defaults must be a dict of trainer field -> value")
    return {
        "config_class": config_cls.__name__,
        "fields": fields,
        "server_configs": servers,
        "trainer_defaults": _jsonable(trainer_defaults),
    }


def main() -> int:
    real_stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the environment prints lands on stderr, never in our answer
    sys.stdout = sys.stderr
    try:
        answer = {"ok": True, **describe(Path(sys.argv[1]), sys.argv[2])}
    except BaseException as exc:  # noqa: BLE001 - report any failure of untrusted code as data
        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    real_stdout.write(json.dumps(answer))
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
