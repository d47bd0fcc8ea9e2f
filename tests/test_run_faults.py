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


# -- 5: a frozen component --------------------------------------------------------------------


@pytest.mark.parametrize("frozen", ["trainer", "env"])
def test_a_component_stopped_by_sigstop_is_shown_then_fails_the_run(
    state: Path, monkeypatch: pytest.MonkeyPatch, frozen: str
) -> None:
    monkeypatch.setenv("HERMES_RL_STALL_AFTER_S", "2")
    monkeypatch.setenv("HERMES_RL_STALL_FAIL_S", "8")
    started = start_run(local_run(100_000, use_wandb=False), state=state)
    running = wait_for(started.run_id, state, lambda s: s.status == "running" and s.step >= 2, timeout=90)
    assert running.stall is None
    everything = run_processes(running)
    pid = running.components[frozen].pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        stalled = wait_for(started.run_id, state, lambda s: s.stall is not None, timeout=8)
        assert stalled.status == "running"
        culprit = stalled.stall.quiet_components[0]
        assert (culprit.component, culprit.stopped_by_signal) == (frozen, True), stalled.stall
        assert stalled.stall.quiet_after_seconds == 2 and stalled.stall.fail_after_seconds == 8
        assert f"{frozen} is stopped by a signal" in stalled.stall.summary
        # Resumed in time, the run goes on and the stall is gone.
        os.kill(pid, signal.SIGCONT)
        resumed = wait_for(started.run_id, state, lambda s: s.stall is None and s.step > stalled.step, timeout=10)
        assert resumed.status == "running"
        os.kill(pid, signal.SIGSTOP)
        failed = wait_for(started.run_id, state, lambda s: s.status in TERMINAL_STATES, timeout=20)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGCONT)
    assert failed.status == "failed" and failed.failed_component == frozen, failed.reason
    assert failed.reason.startswith("no training step for ") and f"{frozen} is stopped by a signal" in failed.reason
    assert failed.stall is None
    assert wait_gone(everything, timeout=5.0) == set()


def test_a_slow_first_step_is_given_longer_than_later_ones() -> None:
    watch = StallWatch(StallLimits(quiet_after=10, fail_after=40), started_at=1000.0)
    assert watch.observe(1015.0, 0, {}) is None  # start-up (first compile, model warm-up) has twice the time
    first = watch.observe(1021.0, 0, {})
    assert first is not None and not first["failing"] and first["quiet_after_seconds"] == 20
    assert watch.observe(1079.0, 0, {})["failing"] is False
    assert watch.observe(1081.0, 0, {})["failing"] is True
    assert watch.observe(1082.0, 1, {}) is None  # the first step: from here the plain limits apply
    assert watch.observe(1091.0, 1, {}) is None
    assert watch.observe(1093.0, 1, {})["quiet_after_seconds"] == 10


def test_operator_limits_replace_the_backend_defaults_and_typos_do_not() -> None:
    class Backend:
        stall_after, stall_fail = 30.0, 180.0

    assert StallLimits.of(Backend(), {}) == StallLimits(30.0, 180.0)
    assert StallLimits.of(Backend(), {"HERMES_RL_STALL_AFTER_S": "5", "HERMES_RL_STALL_FAIL_S": "20"}) == StallLimits(5.0, 20.0)
    assert StallLimits.of(Backend(), {"HERMES_RL_STALL_AFTER_S": "soon", "HERMES_RL_STALL_FAIL_S": "-1"}) == StallLimits(30.0, 180.0)
    assert StallLimits.of(Backend(), {"HERMES_RL_STALL_AFTER_S": "500"}) == StallLimits(500.0, 500.0)


# -- 7: W&B with a key and no network -----------------------------------------------------------


class SilentServer:
    """A loopback port that accepts connections and never answers (a network that swallows packets)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self) -> None:
        self.sock.close()
        for connection in self.held:
            connection.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again on leaving: connecting is refused


@pytest.mark.parametrize("network", ["silent", "refusing"])
def test_wandb_without_a_network_never_holds_training_up(state: Path, monkeypatch: pytest.MonkeyPatch, network: str) -> None:
    silent = SilentServer() if network == "silent" else None
    port = silent.port if silent else closed_port()
    monkeypatch.setenv("WANDB_API_KEY", VALID_SHAPED_KEY)
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{port}")
    try:
        started = start_run(local_run(20, use_wandb=True), state=state)
        # Unbounded, W&B's start-up alone takes 90 s; a 20-step local run takes a few seconds.
        final = wait_for(started.run_id, state, lambda s: s.status in TERMINAL_STATES, timeout=60)
    finally:
        if silent:
            silent.close()
    assert final.status == "completed", (final.reason, final.log_tail)
    assert final.step == 20
    expected = "did not answer within 5 s" if network == "silent" else "could not be reached"
    for component in ("trainer", "env"):
        note = next((n for n in final.notes if n.startswith(f"{component}: ")), None)
        assert note is not None, final.notes
        assert f"W&B server http://127.0.0.1:{port} {expected}" in note and "mirroring offline" in note
    results = get_results(started.run_id, state=state)
    assert results.notes == final.notes
    assert results.wandb.mode == "offline" and results.wandb.url is None
    assert len(results.wandb.directories) == 2 and all(c.startswith("wandb sync ") for c in results.wandb.sync_commands)
    run_dir = Path(final.run_dir)
    assert VALID_SHAPED_KEY not in "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file() and p.suffix in (".log", ".jsonl", ".yaml"))


def test_a_wandb_server_that_answers_health_but_hangs_costs_training_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reachability check passes; W&B's own online start-up then hangs until its bound."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from hermes_rl_mcp import metrics_log
    from hermes_rl_mcp.runs.notes import read_notes

    release = threading.Event()

    class HealthyThenHanging(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/healthz":
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")
            else:
                release.wait(60)

        def do_POST(self) -> None:  # noqa: N802
            release.wait(60)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), HealthyThenHanging)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("WANDB_API_KEY", VALID_SHAPED_KEY)
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setattr(metrics_log, "ONLINE_INIT_TIMEOUT", 4.0)
    monkeypatch.setattr(metrics_log, "_offline_process", lambda: monkeypatch.setenv("WANDB_MODE", "offline"))
    try:
        log = metrics_log.MetricsLog(tmp_path / "metrics.jsonl", use_wandb=True, wandb_dir=tmp_path / "wandb", component="trainer")
        began = time.monotonic()
        for step in range(1, 21):
            log.log(step, {"train/loss": 1.0 / step})
        assert time.monotonic() - began < 3.0, "logging waited on W&B (its start-up is held 4 s here)"
        deadline = time.monotonic() + 30
        while not (read_notes(tmp_path / "notes.jsonl") and (helpers := own_descendants())):  # offline now
            assert time.monotonic() < deadline, "W&B never fell back to offline with its service running"
            time.sleep(0.05)
        log.close()
    finally:
        release.set()
        server.shutdown()
        server.server_close()
    notes = read_notes(tmp_path / "notes.jsonl")
    assert len(notes) == 1 and "did not start an online run within 4 s" in notes[0] and "mirroring offline" in notes[0], notes
    assert list((tmp_path / "wandb").glob("wandb/offline-run-*"))
    assert wait_gone(helpers, timeout=5.0) == set()  # W&B's service ended with the mirror


def own_descendants() -> set[int]:
    tree = children_of()
    found: set[int] = set()
    frontier = list(tree.get(os.getpid(), []))
    while frontier:
        pid = frontier.pop()
        found.add(pid)
        frontier.extend(tree.get(pid, []))
    return {p for p in found if alive(p)}
