"""Resume: a new run that starts from another run's last checkpoint.

The new run uses the parent's config (same environment, backend and trainer settings, so the
checkpoint fits the model), with ``run.resumed_from`` naming the checkpoint and ``env.total_steps``
moved on by the steps asked for. The trainer loads weights and optimiser state and counts on from
the checkpoint's step; the trajectory API and the environment learn that step at registration, so
the step count and the metrics continue where the parent left them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_rl_mcp import run_document, settings
from hermes_rl_mcp.runs.control import checkpoints_of, require_run, start_run
from hermes_rl_mcp.runs.errors import InvalidArgument, NotResumable
from hermes_rl_mcp.runs.ids import validate_run_id
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.models import ACTIVE_STATES, CheckpointInfo, RunStarted
from hermes_rl_mcp.runs.redact import REDACTED
from hermes_rl_mcp.runs.registry import Registry

MAX_RESUME_STEPS = 1_000_000
# Per-run values the supervisor and start_run assign afresh; a copy of the parent's would point
# the new run at the parent's directory and ports.
_PER_RUN = {"run": ("id", "dir", "api_url", "policy_url", "resumed_from"), "env": ("rollout_server_url",), "trainer": ("port",)}


def resume_run(
    run_id: str,
    steps: int | None = None,
    *,
    state: Path | None = None,
    locked_values: Callable[[str], dict[str, Any]] | None = None,
) -> RunStarted:
    """Start a run from ``run_id``'s last checkpoint, training ``steps`` more steps.

    ``steps`` defaults to as many as the parent trained itself. ``locked_values(backend)`` gives
    the operator's locked fields as they are now (``namespace.field`` -> value); they replace the
    parent's, since the operator may have changed the profile since the parent ran.
    """
    run_id = validate_run_id(run_id)
    state_path = Path(state) if state is not None else settings.state_dir()
    with Registry.shared(state_path) as registry:
        row = require_run(registry, run_id)  # a run whose supervisor died is marked failed first
    if row["status"] in ACTIVE_STATES:
        raise NotResumable(
            f"run {run_id} is {row['status']}: resume it once it has finished, or stop it first with rl_stop_training"
        )
    paths = RunPaths.at(row["run_dir"])
    checkpoint = last_checkpoint(checkpoints_of(paths))
    if checkpoint is None:
        raise NotResumable(
            f"run {run_id} has no checkpoint to resume from (it {row['status']} before saving one); "
            "resume a run whose results list checkpoints"
        )
    try:
        parent = run_document.load(paths.config).to_data()
    except (OSError, run_document.RunDocumentError) as exc:
        raise NotResumable(f"the config of run {run_id} cannot be read ({exc}); it cannot be resumed") from None
    document = resume_document(parent, run_id, checkpoint, steps)
    if locked_values is not None:
        backend = str((document.get("run") or {}).get("backend", "local"))
        _apply_locked(document, locked_values(backend))
    return start_run(document, state=state_path)


def last_checkpoint(checkpoints: list[CheckpointInfo]) -> CheckpointInfo | None:
    """The checkpoint of the highest step that can be loaded: a file on disk, or an engine's path."""
    usable = [c for c in checkpoints if c.exists is not False]
    return max(usable, key=lambda c: (c.step, c.kind == "final"), default=None)


def resume_document(parent: dict[str, Any], parent_id: str, checkpoint: CheckpointInfo, steps: int | None) -> dict[str, Any]:
    """The parent's config, pointed at its checkpoint, ``steps`` more steps long."""
    document = copy.deepcopy(parent)
    for section, keys in _PER_RUN.items():
        values = document.get(section)
        if isinstance(values, dict):
            for key in keys:
                values.pop(key, None)
    env = document.setdefault("env", {})
    if not isinstance(env, dict):
        raise NotResumable(f"the config of run {parent_id} has no env section; it cannot be resumed")
    parent_steps = _parent_steps(parent, checkpoint.step)
    more = parent_steps if steps is None else steps
    if isinstance(more, bool) or not isinstance(more, int) or not 1 <= more <= MAX_RESUME_STEPS:
        raise InvalidArgument(f"steps must be an integer from 1 to {MAX_RESUME_STEPS}, not {more!r}")
    env["total_steps"] = checkpoint.step + more
    # The written config holds redacted keys; the supervisor fills the policy endpoint's own.
    servers = document.get("openai")
    for server in servers if isinstance(servers, list) else [servers] if isinstance(servers, dict) else []:
        if isinstance(server, dict) and server.get("api_key") == REDACTED:
            server.pop("api_key")
    document.setdefault("run", {})["resumed_from"] = {
        "run_id": parent_id, "step": checkpoint.step, "checkpoint": checkpoint.path,
    }
    return document


def _apply_locked(document: dict[str, Any], locked: dict[str, Any]) -> None:
    for name, value in locked.items():
        namespace, _, key = name.partition(".")
        if namespace == "run":
            continue  # the backend and the environment are the parent's: the checkpoint fits only them
        section = document.get(namespace)
        if namespace == "openai" and isinstance(section, list):
            for server in section:
                if isinstance(server, dict):
                    server[key] = value
        elif isinstance(section, dict):
            section[key] = value


def _parent_steps(parent: dict[str, Any], reached: int) -> int:
    """How many steps the parent trained itself (its total minus where it started)."""
    run = parent.get("run") if isinstance(parent.get("run"), dict) else {}
    started = (run.get("resumed_from") or {}).get("step", 0) if isinstance(run.get("resumed_from"), dict) else 0
    total = (parent.get("env") or {}).get("total_steps") if isinstance(parent.get("env"), dict) else None
    trained = (total if isinstance(total, int) else reached) - (started if isinstance(started, int) else 0)
    return max(1, trained)


__all__ = ["MAX_RESUME_STEPS", "last_checkpoint", "resume_document", "resume_run"]
