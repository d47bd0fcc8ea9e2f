"""A run's registry row re-derived from its directory, for a registry that was lost or damaged.

The run directories are the record: the config a run started with, its metrics, its
supervisor's pid file and log say what the row said, except the exact times, which become the
minute in the run id and the last change of its files.
"""

from __future__ import annotations

import calendar
import re
import time
from pathlib import Path
from typing import Any

from hermes_rl_mcp.backend_names import DEFAULT_BACKEND
from hermes_rl_mcp.runs.ids import RUN_ID_PATTERN
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.procs import is_same_process
from hermes_rl_mcp.runs.tail import latest_step, tail_lines

# The supervisor's last word on a run, as ``Supervisor._finish`` writes it to supervisor.log.
_END_LINE = re.compile(r" supervisor: run (completed|failed|stopped): (.*)$")


def run_directories(state: Path) -> list[Path]:
    """Every directory under ``runs/`` whose name is a run id."""
    try:
        entries = list((Path(state) / "runs").iterdir())
    except OSError:
        return []
    return [entry for entry in entries if RUN_ID_PATTERN.fullmatch(entry.name) and entry.is_dir()]


def write_supervisor_pid(paths: RunPaths, pid: int, start_time: int | None) -> None:
    paths.supervisor_pid.write_text(f"{pid} {start_time if start_time is not None else ''}\n")


def _supervisor_of(paths: RunPaths) -> tuple[int, int] | None:
    try:
        pid, start = paths.supervisor_pid.read_text().split()
        return int(pid), int(start)
    except (OSError, ValueError):
        return None


def _last_word(paths: RunPaths) -> tuple[str, str] | None:
    try:
        lines, _, _ = tail_lines(paths.log("supervisor"), 50, max_bytes=64 * 1024)
    except OSError:
        return None
    for line in reversed(lines):
        match = _END_LINE.search(line)
        if match:
            return match[1], match[2]
    return None


def recorded_run(root: Path, why: str) -> dict[str, Any]:
    """The registry row of the run in ``root``, with its single event's reason saying ``why``."""
    # Here, not at the top: the supervisor imports this module, and a rebuild is rare.
    from hermes_rl_mcp import run_document

    paths = RunPaths(root)
    try:
        document = run_document.load(paths.config)
        environment, backend, total = document.run.environment, document.run.backend, document.env.total_steps
    except (OSError, run_document.RunDocumentError):
        environment, backend, total = None, None, None  # still a run: its directory is on disk
    created = float(calendar.timegm(time.strptime(paths.run_id[2:15], "%Y%m%d-%H%M")))
    try:
        changed = max(p.stat().st_mtime for p in (root, paths.logs, paths.metrics, paths.config) if p.exists())
    except OSError:
        changed = created
    supervisor = _supervisor_of(paths)
    word = _last_word(paths)
    ended: float | None = changed
    failed_component = None
    if supervisor is not None and is_same_process(*supervisor):
        status, reason, ended = "running", f"{why}; its supervisor (pid {supervisor[0]}) is still running", None
    elif word is not None:
        status, reason = word[0], f"{word[1]} ({why})"
    else:
        status, reason = "failed", f"its supervisor is gone and its log records no end ({why})"
        failed_component = "supervisor"
    return {
        "id": paths.run_id,
        "environment": environment or "unknown",
        "backend": backend or DEFAULT_BACKEND,
        "status": status,
        "reason": reason,
        "failed_component": failed_component,
        "created_at": created,
        "started_at": created,
        "ended_at": ended,
        "updated_at": time.time(),
        "run_dir": str(root),
        "total_steps": total,
        "step": latest_step(paths.metrics),
        "supervisor_pid": supervisor[0] if supervisor else None,
        "supervisor_start": supervisor[1] if supervisor else None,
    }
