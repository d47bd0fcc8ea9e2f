"""A run's config.yaml: written redacted and atomically, ports filled in by the supervisor."""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path
from typing import Any

from hermes_rl_mcp import yaml_text
from hermes_rl_mcp.runs.backends import Ports
from hermes_rl_mcp.runs.redact import redact_data

LOCAL_MODEL_NAME = "hermes-rl-local"
LOCAL_API_KEY = "local"


def write_config(path: Path, config: dict[str, Any]) -> None:
    """Replace ``path`` in one rename, so a component never reads a half-written file."""
    text = yaml_text.dump(redact_data(config), sort_keys=False, default_flow_style=False)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def read_config(path: Path) -> dict[str, Any]:
    """The parsed config; the parse is cached by the file's identity, as results read it on every call."""
    stat = os.stat(path)
    return copy.deepcopy(_parsed_config(str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=64)
def _parsed_config(path: str, inode: int, size: int, mtime_ns: int) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        loaded = yaml_text.load(handle)
    return loaded if isinstance(loaded, dict) else {}


def with_ports(config: dict[str, Any], ports: Ports) -> dict[str, Any]:
    """A copy of ``config`` whose every address points at this run's own ports."""
    updated = copy.deepcopy(config)
    api_url = f"http://127.0.0.1:{ports.api}"
    policy_url = f"http://127.0.0.1:{ports.policy}/v1"
    run = updated.setdefault("run", {})
    run["api_url"] = api_url
    run["policy_url"] = policy_url
    env = updated.get("env")
    if not isinstance(env, dict):
        env = updated["env"] = {}
    env["rollout_server_url"] = api_url
    trainer = updated.get("trainer")
    if not isinstance(trainer, dict):
        trainer = updated["trainer"] = {}
    trainer["port"] = ports.policy
    servers = updated.get("openai")
    entries = [servers] if isinstance(servers, dict) else servers if isinstance(servers, list) and servers else None
    if entries is None:
        updated["openai"] = entries = [{"model_name": LOCAL_MODEL_NAME}]
    for server in entries:
        if isinstance(server, dict):
            server["base_url"] = policy_url
            # The local policy server takes no key; OpenAI clients insist on one.
            server.setdefault("api_key", LOCAL_API_KEY)
    return updated
