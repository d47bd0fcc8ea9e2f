"""Faults a real run must survive with a true account: a supervisor killed while no server runs,
a component frozen by SIGSTOP, and W&B with a key but no network.

Real local runs (trajectory API, NumPy trainer, environment process, W&B's own helpers) under a
real detached supervisor; W&B's server is a loopback socket that never answers, or a closed port.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_rl_mcp.runs import TERMINAL_STATES, RunStatus, check_status, get_results, list_runs, start_run, stop_run
from hermes_rl_mcp.runs.stall import StallLimits, StallWatch
from hermes_rl_mcp.runs.procs import read_stat

REPO = Path(__file__).resolve().parent.parent
VALID_SHAPED_KEY = "0123456789abcdef0123456789abcdef01234567"  # 40 hex characters, as W&B keys are


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "state"
    monkeypatch.setenv("HERMES_RL_HOME", str(home))
    monkeypatch.delenv("HERMES_RL_STATUS_MIN_INTERVAL", raising=False)
    for name in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_MODE"):
        monkeypatch.delenv(name, raising=False)
    yield home
    for run in list_runs(state=home).runs:  # never leave a run behind, whatever the test did
        if run.status not in TERMINAL_STATES:
            for pid in run_processes(check_status(run.run_id, state=home)):
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            stop_run(run.run_id, state=home)


def local_run(total_steps: int, *, use_wandb: bool) -> dict[str, Any]:
    return {
        "run": {"environment": "reverse_text", "backend": "local", "env_file": str(REPO / "environments" / "reverse_text.py")},
        "env": {"total_steps": total_steps, "steps_per_eval": 10_000, "group_size": 4, "eval_size": 8, "use_wandb": use_wandb},
        "trainer": {"batch_size": 16, "checkpoint_interval": 10_000},
        "openai": [{"model_name": "hermes-rl-local"}],
    }


def wait_for(run_id: str, state: Path, done: Callable[[RunStatus], bool], timeout: float) -> RunStatus:
    deadline = time.monotonic() + timeout
    while True:
        status = check_status(run_id, state=state)
        if done(status):
            return status
        assert time.monotonic() < deadline, f"run did not get there in {timeout} s: {status.model_dump()}"
        time.sleep(0.1)


def children_of() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := read_stat(int(entry))) is not None:
            tree.setdefault(stat.ppid, []).append(stat.pid)
    return tree


def run_processes(status: RunStatus) -> set[int]:
    """The supervisor and everything below it, found through parent links."""
    if not status.supervisor_pid:
        return set()
    tree = children_of()
    found, frontier = set(), [status.supervisor_pid]
    while frontier:
        pid = frontier.pop()
        found.add(pid)
        frontier.extend(tree.get(pid, []))
    return {p for p in found if alive(p)}


def alive(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.alive


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    deadline = time.monotonic() + timeout
    while (left := {p for p in pids if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def metrics_size(status: RunStatus) -> int:
    try:
        return (Path(status.run_dir) / "metrics.jsonl").stat().st_size
    except FileNotFoundError:
        return 0


# -- 4: a supervisor killed while no server runs ------------------------------------------------


def test_a_sigkilled_supervisor_takes_every_process_of_its_run_with_it(state: Path) -> None:
    started = start_run(local_run(100_000, use_wandb=True), state=state)
    # W&B starts its helpers with the first mirrored record: wait until both components have them.
    deadline = time.monotonic() + 90
    while True:
        status = check_status(started.run_id, state=state)
        assert status.status in ("starting", "running"), status.model_dump()
        everything = run_processes(status)
        components = {c.pid for c in status.components.values() if c.pid}
        if status.step >= 3 and len(everything) >= 7:  # supervisor, 3 components, >= 3 W&B helpers
            break
        assert time.monotonic() < deadline, f"the run's W&B helpers never appeared: {sorted(everything)}"
        time.sleep(0.2)
    assert components < everything
    os.kill(status.supervisor_pid, signal.SIGKILL)
    # No status call from here on: nobody but the run's own processes may do the cleaning.
    assert wait_gone(everything, timeout=5.0) == set()
    size = metrics_size(status)
    time.sleep(0.5)
    assert metrics_size(status) == size, "training went on after its supervisor died"
    failed = check_status(started.run_id, state=state)
    assert failed.status == "failed" and failed.failed_component == "supervisor"
    assert failed.reason == f"supervisor died (pid {status.supervisor_pid} is no longer running)"
    trainer_log = (Path(status.run_dir) / "logs" / "trainer.log").read_text()
    assert "supervisor is gone: ending this run's processes" in trainer_log
