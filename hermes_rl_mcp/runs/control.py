"""Run control: start, inspect, stop and read runs. Plain functions over the registry.

Every function works from any process: nothing is kept in memory between calls, so a server
restarted (or killed with SIGKILL) and started again sees every run in its true state.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hermes_rl_mcp import run_document, settings, storage
from hermes_rl_mcp.metrics_log import read_metrics
from hermes_rl_mcp.run_document import RunDocument
from hermes_rl_mcp.runs.backends import LocalBackend, allocate_ports, job_backend, resolve_backend
from hermes_rl_mcp.runs.childenv import minimal_environment
from hermes_rl_mcp.runs.errors import BackendUnavailable, DiskFull, InvalidArgument, InvalidRunConfig, LogNotAvailable, RunError, UnknownRun
from hermes_rl_mcp.runs.evaluation import EVALUATION_COMPONENTS
from hermes_rl_mcp.runs.file_memo import Kept, identity, while_unchanged
from hermes_rl_mcp.runs.ids import new_run_id, validate_run_id
from hermes_rl_mcp.runs.launch import Plan, write_plan
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.lineage import read_lineage, record_lineage
from hermes_rl_mcp.runs.metrics import latest_metrics, summarize
from hermes_rl_mcp.runs.notes import read_notes
from hermes_rl_mcp.runs.stall import StallLimits, describe, read_stall
from hermes_rl_mcp.runs.models import (
    ACTIVE_STATES,
    COMPONENTS,
    LOG_COMPONENTS,
    RUN_STATES,
    STATUS_METRICS,
    TERMINAL_STATES,
    BestMetric,
    CheckpointInfo,
    ComponentStatus,
    EvaluationOf,
    LogText,
    MetricSeries,
    RunEvent,
    RunList,
    RunResults,
    RunStarted,
    RunStatus,
    RunSummary,
    StallInfo,
    StopResult,
    WandbInfo,
    log_uri,
)
from hermes_rl_mcp.runs.procs import is_same_process, kill_all, marked_processes, start_time_of, terminate_trees
from hermes_rl_mcp.runs.redact import environment_secrets, redact_data, redact_text
from hermes_rl_mcp.runs.recovery import run_directories
from hermes_rl_mcp.runs.registry import LOST_ROW, Registry
from hermes_rl_mcp.runs.tail import read_if_present, tail_lines

DEFAULT_LOG_LINES = 200
MAX_LOG_LINES = 10_000
MIN_INTERVAL_VARIABLE = "HERMES_RL_STATUS_MIN_INTERVAL"
# A run row without a supervisor pid this long after creation means the spawn never happened.
SUPERVISOR_SPAWN_GRACE = 30.0
# stop_run: how long to let the supervisor end the run itself before doing it directly.
SUPERVISOR_STOP_WAIT = 3.5
_WANDB_URL = re.compile(r"https://wandb\.ai/[^\s\"'<>]+/runs/[A-Za-z0-9_-]+")


def _state_dir(state: Path | None) -> Path:
    return Path(state) if state is not None else settings.state_dir()


# -- start ------------------------------------------------------------------------------------


def start_run(config: RunDocument | dict[str, Any], *, state: Path | None = None) -> RunStarted:
    """Create the run directory and config.yaml, register the run, start its supervisor.

    Returns at once with status ``starting``; the supervisor brings the components up.
    """
    document = _check_run_config(config)
    environment = document.run.environment
    assert environment is not None
    backend = job_backend(document)
    backend.check(document, os.environ)
    state_path = _state_dir(state)
    if storage.below_floor(state_path):
        raise DiskFull(storage.floor_message(state_path))
    try:
        return _create_and_spawn(document, environment, backend, state_path)
    except OSError as exc:
        if storage.is_out_of_space(exc):
            raise DiskFull(storage.disk_full_message(state_path, "the run could not be created")) from exc
        raise


def _create_and_spawn(document: RunDocument, environment: str, backend: Any, state_path: Path) -> RunStarted:
    backend_name = document.run.backend
    (state_path / "runs").mkdir(parents=True, exist_ok=True)
    Registry(state_path).close()  # opened (and repaired if need be) before the new directory exists
    paths: RunPaths | None = None
    for _ in range(20):
        candidate = RunPaths.of(state_path, new_run_id())
        try:
            candidate.root.mkdir()
        except FileExistsError:
            continue
        paths = candidate
        break
    if paths is None:
        raise RunError("could not allocate a fresh run id; try again")
    try:
        paths.logs.mkdir()
        paths.checkpoints.mkdir()
        document = document.model_copy(
            update={"run": document.run.model_copy(update={"id": paths.run_id, "dir": str(paths.root)})}
        )
        # The ports and the first components are worked out here, where the models are loaded
        # already, so the supervisor can spawn them before its own imports (runs/launch.py).
        ports = allocate_ports()
        document = document.with_ports(ports.api, ports.policy)
        run_document.write(paths.config, document)
        # An evaluation has no training steps to watch; its own timeouts bound it.
        stall = StallLimits.of(backend) if document.run.job != "evaluate" else None
        write_plan(paths.root, Plan(ports, backend.components(document, paths.config, ports), stall))
        if document.run.resumed_from is not None:
            record_lineage(paths, document.run.resumed_from.model_dump())
    except yaml.YAMLError as exc:
        shutil.rmtree(paths.root, ignore_errors=True)
        raise InvalidRunConfig(f"the run config cannot be written as YAML: {exc}") from exc
    except (OSError, RunError):
        shutil.rmtree(paths.root, ignore_errors=True)  # a half-made directory must not read as a run
        raise
    with Registry.shared(state_path) as registry:
        created = registry.insert_run(
            run_id=paths.run_id, environment=environment, backend=backend_name, run_dir=str(paths.root),
            # An evaluation has no steps of its own.
            total_steps=None if document.run.job == "evaluate" else document.env.total_steps, reason="run created",
        )
        try:
            with open(paths.log("supervisor"), "ab") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", "hermes_rl_mcp", "supervise", str(paths.root)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=paths.root,
                    env=minimal_environment(backend.secret_keys()),
                    start_new_session=True,  # detached: outlives this process and its terminal
                    close_fds=True,
                )
        except OSError as exc:
            registry.transition(paths.run_id, "failed", f"could not start the supervisor: {exc}", ended_at=time.time())
            raise RunError(f"could not start the run's supervisor: {exc}") from exc
        registry.update_run(paths.run_id, supervisor_pid=process.pid, supervisor_start=start_time_of(process.pid))
    return RunStarted(
        run_id=paths.run_id,
        status="starting",
        environment=environment,
        backend=backend_name,
        run_dir=str(paths.root),
        config_path=str(paths.config),
        log_uris={c: log_uri(paths.run_id, c) for c in LOG_COMPONENTS},
        created_at=created,
    )


def _check_run_config(config: object) -> RunDocument:
    try:
        document = run_document.from_data(config)
    except run_document.RunDocumentError as exc:
        raise InvalidRunConfig(f"the run config is not valid: {exc}") from None
    if not (document.run.environment or "").strip():
        raise InvalidRunConfig("run.environment is missing: select an environment first")
    return document


# -- liveness ---------------------------------------------------------------------------------


def _settle(registry: Registry, row: dict[str, Any]) -> dict[str, Any]:
    """Mark an active run whose supervisor is gone; returns the (possibly updated) row."""
    if row["status"] not in ACTIVE_STATES:
        return row
    pid, started = row["supervisor_pid"], row["supervisor_start"]
    if pid is None:
        if time.time() - row["created_at"] < SUPERVISOR_SPAWN_GRACE:
            return row
        reason = "the supervisor never started"
    elif is_same_process(pid, started):
        return row
    else:
        reason = f"supervisor died (pid {pid} is no longer running)"
    if storage.below_floor(row["run_dir"]):
        # A supervisor that cannot write its registry ends the run without recording why: the disk is why.
        reason = f"{_disk_note(row['run_dir'])}: the run could not record its progress and ended; {reason}"
    status = "stopped" if row["status"] == "stopping" else "failed"
    reason = f"stopped; {reason}" if status == "stopped" else reason
    try:
        moved = registry.transition(
            row["id"], status, reason, ended_at=time.time(), **({"failed_component": "supervisor"} if status == "failed" else {})
        )
    except DiskFull:
        # Nothing can be recorded on a full disk, but the answer can still be true.
        with contextlib.suppress(DiskFull):
            _kill_components(registry, row["id"], grace=0.0)
        return {**row, "status": status, "reason": reason, "ended_at": time.time()}
    if moved:
        _kill_components(registry, row["id"], grace=0.0)
    return registry.get_run(row["id"]) or row


def _disk_note(path: str | Path) -> str:
    return f"the disk holding {path} is full ({storage.human(storage.free_bytes(Path(path)))} free)"


def _kill_components(registry: Registry, run_id: str, *, grace: float) -> list[int]:
    """End every recorded component tree of the run directly (no supervisor involved)."""
    components = registry.components(run_id)
    trees = [(c["pid"], c["start_time"]) for c in components.values() if c["pid"]]
    left = terminate_trees(trees, grace=grace) if trees else []
    # Whatever of the run outlived its parents (re-parented, in a session of its own) still
    # carries the run's marker in its environment.
    left += kill_all(marked_processes(run_id), grace=min(grace, 0.3))
    for name, component in components.items():
        if component["state"] in ("starting", "running"):
            registry.set_component(run_id, name, state="stopped")
    return left


def require_run(registry: Registry, run_id: str) -> dict[str, Any]:
    row = registry.get_run(run_id)
    if row is None:
        raise UnknownRun(f"no run with id {run_id!r} is recorded; list the runs to see the ids there are")
    return _settle(registry, row)


# -- status -----------------------------------------------------------------------------------


def _min_interval() -> float:
    raw = os.environ.get(MIN_INTERVAL_VARIABLE, "").strip()
    try:
        value = float(raw) if raw else 0.0
    except ValueError:
        return 0.0  # an operator's typo must not break every status call
    return value if value > 0 else 0.0


def check_status(run_id: str, *, state: Path | None = None) -> RunStatus:
    """Status, components, progress and latest metrics. Fast: registry plus the metrics tail."""
    run_id = validate_run_id(run_id)
    state_path = _state_dir(state)
    interval = _min_interval()
    with Registry.shared(state_path) as registry:
        if interval:
            cached = registry.cached_status(run_id)
            if cached is not None and time.time() - cached[0] < interval:
                answer = RunStatus.model_validate_json(cached[1])
                return answer.model_copy(update={"cached": True, "next_fresh_at": cached[0] + interval})
        row = require_run(registry, run_id)
        answer = _status_of(registry, row)
        if interval:
            registry.store_status(run_id, answer.checked_at, answer.model_dump_json())
            answer = answer.model_copy(update={"next_fresh_at": answer.checked_at + interval})
    return answer


def _status_of(registry: Registry, row: dict[str, Any]) -> RunStatus:
    """The run's status now: its kept body (while row, components and files are unchanged) with
    what changes by the second brought up to date."""
    paths = RunPaths.at(row["run_dir"])
    now = time.time()
    recorded = registry.components(row["id"])
    key = (
        tuple(row.items()),
        tuple((name, tuple(fields.items())) for name, fields in sorted(recorded.items())),
        tuple(identity(path) for path in (paths.metrics, paths.notes, paths.lineage, paths.config)),
        tuple(environment_secrets()),
    )
    body = _KEPT_STATUS.get(key)
    if body is None:
        body = _KEPT_STATUS.put(key, _status_body(paths, row, recorded))
    return body.model_copy(update={
        "reason": _with_disk_note(row),
        "running_seconds": round((row["ended_at"] or now) - row["created_at"], 3),
        "stall": _stall_of(paths, now) if row["status"] == "running" else None,
        "checked_at": now,
    })


_KEPT_STATUS: Kept[tuple[Any, ...], RunStatus] = Kept(64)


def _status_body(paths: RunPaths, row: dict[str, Any], recorded: dict[str, dict[str, Any]]) -> RunStatus:
    """Everything of a status that follows from the run's row, components and files."""
    run_id = row["id"]
    components: dict[str, ComponentStatus] = {}
    job = _job_of(paths)
    planned = EVALUATION_COMPONENTS if job["job"] == "evaluate" else COMPONENTS
    for name in [*planned, *sorted(set(recorded) - set(planned))]:
        c = recorded.get(name)
        components[name] = (
            ComponentStatus(name=name, state=c["state"], pid=c["pid"], port=c["port"], exit_code=c["exit_code"])
            if c is not None
            else ComponentStatus(name=name, state="pending")
        )
    step, found = latest_metrics(paths.metrics, STATUS_METRICS)
    resumed_from = read_lineage(paths)
    # A resumed run is at its parent's step until its own first step is logged.
    step = max(step, row["step"] or 0, resumed_from.step if resumed_from else 0)
    total = row["total_steps"]
    return RunStatus(
        run_id=run_id,
        environment=row["environment"],
        backend=row["backend"],
        **job,
        status=row["status"],
        reason=row["reason"],
        failed_component=row["failed_component"],
        exit_code=row["exit_code"],
        log_tail=row["log_tail"],
        components=components,
        step=step,
        total_steps=total,
        progress=_progress(step, total),
        metrics={name: found[name][0] if name in found else None for name in STATUS_METRICS},
        metrics_step={name: found[name][1] for name in STATUS_METRICS if name in found},
        created_at=row["created_at"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        running_seconds=0.0,
        run_dir=row["run_dir"],
        supervisor_pid=row["supervisor_pid"],
        log_uris={c: log_uri(run_id, c) for c in LOG_COMPONENTS},
        stall=None,
        notes=[redact_text(note) for note in read_notes(paths.notes)],
        checked_at=0.0,
        resumed_from=resumed_from,
    )


def _with_disk_note(row: dict[str, Any]) -> str | None:
    """A failed run's reason, plus the disk when it is full: a component that could not write dies of it."""
    reason = row["reason"]
    if row["status"] != "failed" or "the disk holding" in (reason or "") or not storage.below_floor(row["run_dir"]):
        return reason
    return f"{reason}; {_disk_note(row['run_dir'])}, the likely cause"


def _job_of(paths: RunPaths) -> dict[str, Any]:
    """``job`` and ``evaluates`` of a run, from its run document (a training run when unreadable)."""
    job, evaluates = _job_in(paths.config)
    return {"job": job, "evaluates": evaluates}


@while_unchanged(maxsize=4096)
def _job_in(config: Path) -> tuple[str, EvaluationOf | None]:
    # Listing many runs must not parse every document: only one that names the job is read.
    raw = read_if_present(config)
    if raw is None or b"evaluate" not in raw:
        return "train", None
    try:
        run = run_document.peek(config).run
    except (OSError, run_document.RunDocumentError):
        return "train", None
    if run.job != "evaluate":
        return "train", None
    evaluated = run.evaluates
    return "evaluate", EvaluationOf(run_id=evaluated.run_id, step=evaluated.step) if evaluated else None


def _stall_of(paths: RunPaths, now: float) -> StallInfo | None:
    """The supervisor's stall report, its duration brought up to now."""
    found = read_stall(paths.stall)
    if found is None:
        return None
    try:
        found["seconds"] = round(max(float(found["seconds"]), now - float(found["since"])), 1)
        return StallInfo(summary=describe(found), **{k: v for k, v in found.items() if k != "failing"})
    except (KeyError, TypeError, ValueError):
        return None  # a report torn or from another version: status goes on without it


def _progress(step: int, total: int | None) -> float:
    return round(min(1.0, step / total), 4) if total else 0.0


# -- list -------------------------------------------------------------------------------------


def list_runs(status: str | None = None, *, state: Path | None = None) -> RunList:
    """Every run, newest first, optionally only those in one status."""
    if status is not None and status not in RUN_STATES:
        raise InvalidArgument(f"unknown status {status!r}: valid statuses are {', '.join(RUN_STATES)}")
    state_path = _state_dir(state)
    with Registry.shared(state_path) as registry:
        rows = registry.list_runs(None if status is None else status)
        recorded = {row["id"] for row in rows}
        # The run directories are the record: one the registry lacks is recorded from its files.
        for root in run_directories(state_path):
            if root.name not in recorded and (row := registry.adopt(root, LOST_ROW)) is not None:
                if status is None or row["status"] == status:
                    rows.append(row)
        rows.sort(key=lambda row: (row["created_at"], row["id"]), reverse=True)
        settled: list[dict[str, Any]] = []
        for row in rows:
            row = _settle(registry, row)
            if status is None or row["status"] == status:
                settled.append(row)
    summaries = [_summary(row) for row in settled]
    return RunList(runs=summaries, count=len(summaries))


def _summary(row: dict[str, Any]) -> RunSummary:
    paths = RunPaths.at(row["run_dir"])
    resumed_from = read_lineage(paths)
    step = max(row["step"] or 0, resumed_from.step if resumed_from else 0)
    return RunSummary(
        run_id=row["id"], environment=row["environment"], backend=row["backend"], **_job_of(paths), status=row["status"],
        reason=row["reason"], created_at=row["created_at"], ended_at=row["ended_at"], step=step,
        total_steps=row["total_steps"], progress=_progress(step, row["total_steps"]), resumed_from=resumed_from,
    )


# -- stop -------------------------------------------------------------------------------------


def _stop_grace(backend_name: str) -> float:
    """How long the backend's components may take to end after SIGTERM, beyond the default."""
    try:
        return max(0.0, resolve_backend(backend_name).stop_grace - LocalBackend.stop_grace)
    except (BackendUnavailable, AttributeError):
        return 0.0


def stop_run(run_id: str, *, state: Path | None = None) -> StopResult:
    """End every process of the run and mark it stopped; a finished run is left as it is."""
    run_id = validate_run_id(run_id)
    with Registry.shared(_state_dir(state)) as registry:
        row = require_run(registry, run_id)
        if row["status"] in TERMINAL_STATES:
            return StopResult(run_id=run_id, status=row["status"], reason=row["reason"], changed=False)
        registry.transition(run_id, "stopping", "stop requested", from_states=("starting", "running"))
        pid, started = row["supervisor_pid"], row["supervisor_start"]
        hung = False
        if is_same_process(pid, started):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + SUPERVISOR_STOP_WAIT + _stop_grace(row["backend"])
            while time.monotonic() < deadline:
                current = registry.get_run(run_id) or row
                supervisor_alive = is_same_process(pid, started)
                if current["status"] in TERMINAL_STATES and not supervisor_alive:
                    return StopResult(run_id=run_id, status=current["status"], reason=current["reason"], changed=True)
                if not supervisor_alive:
                    break  # died without finishing the job: finish it below
                time.sleep(0.02)
            if is_same_process(pid, started):
                hung = True
                os.kill(pid, signal.SIGKILL)  # hung: take over
        current = registry.get_run(run_id) or row
        if current["status"] in TERMINAL_STATES:  # finished its job, then hung on the way out
            return StopResult(run_id=run_id, status=current["status"], reason=current["reason"], changed=True)
        left = _kill_components(registry, run_id, grace=0.3)
        # A supervisor stopped in its first instant, before its own SIGTERM handler is in place,
        # simply ends: the stop is still the reason. Only one that had to be killed was hung.
        reason = (
            "stopped on request (components ended directly: the supervisor was not responding)"
            if hung else "stopped on request"
        )
        if left:
            reason += f"; pids {left} survived SIGKILL"
        registry.transition(run_id, "stopped", reason, ended_at=time.time())
        final = registry.get_run(run_id) or row
        return StopResult(run_id=run_id, status=final["status"], reason=final["reason"], changed=True, leftover_pids=left)


# -- results ----------------------------------------------------------------------------------


def get_results(run_id: str, *, state: Path | None = None) -> RunResults:
    """Final and best metrics, downsampled history, checkpoints, config, W&B, event log.

    The answer is kept while the run's row, events and files are unchanged (the same object is
    returned, so the MCP layer keeps its serialised form too); a run still going only has its
    duration brought up to now.
    """
    row, key = _results_key(run_id, state)
    results = _KEPT_RESULTS.get(key)
    if results is None:
        results = _KEPT_RESULTS.put(key, _results_of(*key))
    return _brought_up_to_now(results, row)


def kept_results(run_id: str, *, state: Path | None = None) -> RunResults | None:
    """``get_results`` when its answer is kept from an earlier call and nothing changed since,
    else None. Never reads more than the registry row and the files' identities, so it is cheap
    enough to call anywhere; ``get_results`` may read a long metrics file."""
    row, key = _results_key(run_id, state)
    results = _KEPT_RESULTS.get(key)
    return None if results is None else _brought_up_to_now(results, row)


_KEPT_RESULTS: Kept[tuple[Any, ...], RunResults] = Kept(32)


def _results_key(run_id: str, state: Path | None) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The run's row, and everything its results are made of: row, events, files, secrets."""
    run_id = validate_run_id(run_id)
    with Registry.shared(_state_dir(state)) as registry:
        row = require_run(registry, run_id)
        events = tuple(tuple(event.values()) for event in registry.events(run_id))
    paths = RunPaths.at(row["run_dir"])
    secrets = tuple(environment_secrets())
    files_identity = _identity(paths) + (identity(paths.notes), identity(paths.lineage), secrets)
    return row, (tuple(row.items()), events, files_identity)


def _brought_up_to_now(results: RunResults, row: dict[str, Any]) -> RunResults:
    if row["ended_at"] is not None:
        return results
    return results.model_copy(update={"duration_seconds": round(time.time() - row["created_at"], 3)})


def _results_of(row_items: tuple[tuple[str, Any], ...], events: tuple[tuple[Any, ...], ...],
                files_identity: tuple[Any, ...]) -> RunResults:
    row = dict(row_items)
    paths = RunPaths.at(row["run_dir"])
    files = _read_run_files(paths, row.get("wandb_url"), files_identity)
    resumed_from = read_lineage(paths)
    step = max([row["step"] or 0, resumed_from.step if resumed_from else 0, files.last_step])
    return RunResults(
        run_id=row["id"],
        environment=row["environment"],
        backend=row["backend"],
        status=row["status"],
        reason=row["reason"],
        created_at=row["created_at"],
        ended_at=row["ended_at"],
        duration_seconds=round((row["ended_at"] or time.time()) - row["created_at"], 3),
        step=step,
        total_steps=row["total_steps"],
        final_metrics=files.final,
        best_metrics=files.best,
        history=files.history,
        checkpoints=files.checkpoints,
        final_checkpoint=files.final_checkpoint,
        config=files.config,
        wandb=files.wandb,
        notes=[redact_text(note) for note in read_notes(paths.notes)],
        events=[RunEvent(time=time_, status=status, reason=reason) for time_, status, reason in events],
        resumed_from=resumed_from,
    )


@dataclass(frozen=True)
class _RunFiles:
    """What results read from a run's own files (metrics, checkpoints, config, logs, W&B)."""

    final: dict[str, float]
    best: dict[str, BestMetric]
    history: dict[str, MetricSeries]
    last_step: int
    checkpoints: list[CheckpointInfo]
    final_checkpoint: str | None
    config: dict[str, Any]
    wandb: WandbInfo


def _identity(paths: RunPaths) -> tuple[Any, ...]:
    """Changes whenever a file results read changes: appended, replaced, created or removed."""
    def names(folder: str) -> tuple[str, ...]:
        try:
            return tuple(sorted(os.listdir(folder)))
        except OSError:
            return ()

    files, folders = _results_sources(paths)
    return tuple(identity(path) for path in files) + tuple(names(folder) for folder in folders)


@functools.lru_cache(maxsize=1024)
def _results_sources(paths: RunPaths) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files and folders results are read from, as strings: worked out once per run, since
    every status and results poll checks them all."""
    files = (paths.metrics, paths.checkpoints_index, paths.config, paths.log("trainer"), paths.log("env"))
    folders = (paths.checkpoints, paths.wandb, paths.wandb / "wandb")
    return tuple(map(os.fspath, files)), tuple(map(os.fspath, folders))


@functools.lru_cache(maxsize=32)
def _read_run_files(paths: RunPaths, wandb_url: str | None, files_identity: tuple[Any, ...]) -> _RunFiles:
    """The run's files read once per change (``files_identity``): an agent polling results of a
    long run re-reads nothing."""
    final, best, history = summarize(read_metrics(paths.metrics))
    checkpoints = checkpoints_of(paths)
    try:
        config = redact_data(run_document.peek(paths.config).to_data())
    except (OSError, run_document.RunDocumentError):
        config = {}
    return _RunFiles(
        final=final,
        best=best,
        history={name: MetricSeries.of(points) for name, points in history.items()},
        last_step=max((points[-1].step for points in history.values() if points), default=0),
        checkpoints=checkpoints,
        final_checkpoint=next((c.path for c in reversed(checkpoints) if c.kind == "final"), None),
        config=config,
        wandb=_wandb_info(paths, wandb_url),
    )


ENGINE_PATH = re.compile(r"^[a-z][a-z0-9+.-]*://")


def checkpoints_of(paths: RunPaths) -> list[CheckpointInfo]:
    found: list[CheckpointInfo] = []
    for record in read_metrics(paths.checkpoints_index):  # same JSONL tolerance as metrics
        step, path = record.get("step"), record.get("path")
        if not isinstance(step, int) or not isinstance(path, str):
            continue
        stamp = record.get("time")
        sampler = record.get("sampler_path")
        if ENGINE_PATH.match(path):  # held by the Tinker engine: shown unchanged, not checked on disk
            shown, exists = path, None
        else:
            location = Path(path) if Path(path).is_absolute() else paths.root / path
            shown, exists = str(location), location.is_file()
        found.append(
            CheckpointInfo(
                step=step, path=shown, kind=str(record.get("kind", "periodic")),
                time=float(stamp) if isinstance(stamp, (int, float)) else None, exists=exists,
                sampler_path=sampler if isinstance(sampler, str) else None,
            )
        )
    return found


def _wandb_info(paths: RunPaths, url: str | None) -> WandbInfo:
    offline: list[Path] = []
    for pattern in ("offline-run-*", "wandb/offline-run-*"):
        offline.extend(p for p in paths.wandb.glob(pattern) if p.is_dir())
    if not url:
        for component in ("trainer", "env"):
            try:
                lines, _, _ = tail_lines(paths.log(component), 400, max_bytes=256 * 1024)
            except OSError:
                continue
            match = next((m for m in (_WANDB_URL.search(line) for line in reversed(lines)) if m), None)
            if match:
                url = match.group(0)
                break
    directories = [str(p) for p in sorted(offline)]
    mode = "online" if url else ("offline" if directories else "none")
    return WandbInfo(
        mode=mode, url=url, directories=directories, sync_commands=[f"wandb sync {d}" for d in directories]
    )


# -- logs -------------------------------------------------------------------------------------


def read_log(run_id: str, component: str, lines: int = DEFAULT_LOG_LINES, *, state: Path | None = None) -> LogText:
    """The last ``lines`` lines of one component's log, secrets redacted. Cost independent of size."""
    run_id = validate_run_id(run_id)
    if component not in LOG_COMPONENTS:
        raise InvalidArgument(f"unknown component {component!r}: valid components are {', '.join(LOG_COMPONENTS)}")
    if isinstance(lines, bool) or not isinstance(lines, int) or not 1 <= lines <= MAX_LOG_LINES:
        raise InvalidArgument(f"lines must be an integer from 1 to {MAX_LOG_LINES}, not {lines!r}")
    state_path = _state_dir(state)
    with Registry.shared(state_path) as registry:
        if registry.get_run(run_id) is None:
            raise UnknownRun(f"no run with id {run_id!r} is recorded; list the runs to see the ids there are")
    paths = RunPaths.of(state_path, run_id)
    real = os.path.realpath(paths.log(component))
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return LogText(run_id=run_id, component=component, lines=0, text="", log_size_bytes=0, truncated=False)
    root = _real_root(os.fspath(paths.root))
    if not stat.S_ISREG(mode) or os.path.commonpath([real, root]) != root:
        raise LogNotAvailable(f"the {component} log of run {run_id} is not a regular file inside the run directory")
    found, size, truncated = tail_lines(Path(real), lines)
    return LogText(
        run_id=run_id, component=component, lines=len(found), text=redact_text("\n".join(found)),
        log_size_bytes=size, truncated=truncated,
    )


@functools.lru_cache(maxsize=256)
def _real_root(root: str) -> str:
    """A run directory with its symlinks resolved. Kept: were the directory later replaced by a
    link to elsewhere, its logs would resolve outside this path and be refused."""
    return os.path.realpath(root)


def run_events(run_id: str, *, state: Path | None = None) -> list[RunEvent]:
    """The run's event log: every status transition with its time and reason."""
    run_id = validate_run_id(run_id)
    with Registry.shared(_state_dir(state)) as registry:
        require_run(registry, run_id)
        return [RunEvent(**event) for event in registry.events(run_id)]


__all__ = [
    "check_status", "get_results", "kept_results", "list_runs", "read_log", "run_events", "start_run", "stop_run",
]
