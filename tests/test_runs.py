"""Run control end to end: real detached supervisors, real component processes, real signals.

The components come from ``test_runs_components.ProcBackend`` (tiny HTTP servers and workers
writing metrics and checkpoints); the run-control code under test is the production code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes_rl_mcp.runs import (
    REDACTED,
    InvalidArgument,
    InvalidRunConfig,
    InvalidRunId,
    BackendUnavailable,
    LogNotAvailable,
    RunStatus,
    TERMINAL_STATES,
    UnknownRun,
    check_status,
    get_results,
    list_runs,
    read_log,
    start_run,
    stop_run,
)

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "state"
    monkeypatch.setenv("HERMES_RL_HOME", str(home))
    monkeypatch.setenv("HERMES_RL_BACKENDS", "procs=test_runs_components:ProcBackend")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS_DIR), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.delenv("HERMES_RL_STATUS_MIN_INTERVAL", raising=False)
    yield home
    for run in list_runs(state=home).runs:  # never leave a run behind, whatever the test did
        if run.status not in TERMINAL_STATES:
            stop_run(run.run_id, state=home)


def run_config(total_steps: int = 20, **test: Any) -> dict[str, Any]:
    return {
        "run": {"environment": "demo", "backend": "procs"},
        "env": {"total_steps": total_steps, "group_size": 4},
        "openai": [{"model_name": "hermes-rl-local", "api_key": "sk-live-0123456789abcdef"}],
        "trainer": {"learning_rate": 0.003},
        "test": test,
    }


def wait_for(run_id: str, state: Path, done: Callable[[RunStatus], bool], timeout: float = 15.0) -> RunStatus:
    deadline = time.monotonic() + timeout
    while True:
        status = check_status(run_id, state=state)
        if done(status):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"run did not reach the expected state in {timeout} s: {status.model_dump()}")
        time.sleep(0.05)


def is_running(status: RunStatus) -> bool:
    return status.status == "running"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("State:"):
                    return "zombie" not in line and "(dead)" not in line
    except FileNotFoundError:
        return False
    return False


def tree_pids(status: RunStatus, grandchildren: bool = False) -> set[int]:
    """Every process of the run: supervisor, components, their groups and their grandchildren."""
    pids: set[int] = {c.pid for c in status.components.values() if c.pid}
    pid_files = Path(status.run_dir) / "pids"
    deadline = time.monotonic() + 5
    while grandchildren and len(list(pid_files.glob("*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # each component writes its grandchildren's pids once they are spawned
    if pid_files.is_dir():
        for record in pid_files.iterdir():
            pids.update(int(p) for p in record.read_text().split())
    leaders = set(pids)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) in leaders:
                    pids.add(int(entry))
            except ProcessLookupError:
                pass
    if status.supervisor_pid:
        pids.add(status.supervisor_pid)
    return pids


def wait_gone(pids: set[int], timeout: float = 5.0) -> set[int]:
    deadline = time.monotonic() + timeout
    left = {p for p in pids if alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {p for p in left if alive(p)}
    return left


def cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hermes_rl_mcp", *args], capture_output=True, text=True, timeout=timeout, env=os.environ.copy()
    )


# -- whole runs --------------------------------------------------------------------------------


def test_run_starts_at_once_reaches_running_and_completes_with_results(state: Path) -> None:
    started = start_run(run_config(total_steps=20, finish=True), state=state)
    # It returns before the components are up (not timed: a loaded machine is slow at both).
    assert started.status == "starting"
    assert check_status(started.run_id, state=state).status == "starting"
    assert started.log_uris["trainer"] == f"rl://runs/{started.run_id}/logs/trainer"
    assert Path(started.config_path).is_file()

    final = wait_for(started.run_id, state, lambda s: s.status in TERMINAL_STATES)
    assert final.status == "completed", final.reason
    assert final.step == 20 and final.progress == 1.0
    assert final.components["trainer"].state == "exited" and final.components["trainer"].exit_code == 0
    assert final.components["env"].exit_code == 0
    assert final.components["api"].state == "stopped"  # the API never ends on its own
    assert final.metrics["train/loss"] == pytest.approx(1 / 20)
    assert final.metrics["eval/percent_correct"] == pytest.approx(0.5)

    results = get_results(started.run_id, state=state)
    assert results.status == "completed"
    assert [e.status for e in results.events] == ["starting", "running", "completed"]
    assert results.best_metrics["train/loss"].value == pytest.approx(1 / 20)
    assert results.best_metrics["train/loss"].goal == "min"
    assert results.best_metrics["train/percent_correct"].value == pytest.approx(1.0)
    assert results.history["eval/percent_correct"].steps[-1] == 20
    assert [c.kind for c in results.checkpoints] == ["periodic"] * 4 + ["final"]
    assert results.final_checkpoint is not None and Path(results.final_checkpoint).is_file()
    assert results.config["run"]["id"] == started.run_id
    # Every address was rewritten to the run's own ports, and the secret never reached disk.
    config_text = Path(started.config_path).read_text()
    assert "sk-live-0123456789abcdef" not in config_text
    assert results.config["openai"][0]["api_key"] == REDACTED
    ports = {final.components["api"].port, final.components["trainer"].port}
    assert results.config["env"]["rollout_server_url"] == f"http://127.0.0.1:{final.components['api'].port}"
    assert results.config["trainer"]["port"] == final.components["trainer"].port
    assert 8000 not in ports and len(ports) == 2
    assert results.duration_seconds > 0
    assert results.wandb.mode == "none"


def test_a_trainer_that_keeps_serving_after_its_final_checkpoint_completes_the_run(state: Path) -> None:
    started = start_run(run_config(total_steps=10, finish=True, serve_after_final=True), state=state)
    final = wait_for(started.run_id, state, lambda s: s.status in TERMINAL_STATES)
    assert final.status == "completed", final.reason
    assert final.components["env"].exit_code == 0
    assert final.components["trainer"].state == "stopped"  # ended by the supervisor once the env was done
    assert get_results(started.run_id, state=state).final_checkpoint is not None


def test_sigkilled_trainer_fails_the_run_within_two_seconds_with_its_log_tail(state: Path) -> None:
    started = start_run(run_config(total_steps=10_000, grandchildren=True, step_time=0.2), state=state)
    running = wait_for(started.run_id, state, is_running)
    everything = tree_pids(running, grandchildren=True)
    trainer_pid = running.components["trainer"].pid
    assert trainer_pid is not None
    os.kill(trainer_pid, signal.SIGKILL)
    killed = time.monotonic()
    failed = wait_for(started.run_id, state, lambda s: s.status == "failed", timeout=5)
    assert time.monotonic() - killed <= 2.0
    assert failed.reason == "trainer exited with code -9"
    assert failed.failed_component == "trainer" and failed.exit_code == -9
    assert failed.log_tail is not None and f"trainer started, pid {trainer_pid}" in failed.log_tail
    # The others are stopped, grandchildren included.
    assert wait_gone(everything) == set()
    after = check_status(started.run_id, state=state)
    assert after.components["api"].state == "stopped" and after.components["env"].state == "stopped"


def test_stop_ends_every_process_of_the_tree_and_stop_twice_changes_nothing(state: Path) -> None:
    started = start_run(run_config(total_steps=10_000, grandchildren=True, step_time=0.2), state=state)
    running = wait_for(started.run_id, state, is_running)
    everything = tree_pids(running, grandchildren=True)
    # supervisor + 3 components + 2 grandchildren each (one of them in a session of its own)
    assert len(everything) >= 10, everything
    began = time.monotonic()
    result = stop_run(started.run_id, state=state)
    assert time.monotonic() - began < 5.0
    assert result.status == "stopped" and result.changed and result.leftover_pids == []
    assert {p for p in everything if alive(p)} == set()
    events = [e.status for e in get_results(started.run_id, state=state).events]
    assert events == ["starting", "running", "stopping", "stopped"]

    again = stop_run(started.run_id, state=state)
    assert again.status == "stopped" and not again.changed
    assert [e.status for e in get_results(started.run_id, state=state).events] == events


def test_a_stop_in_the_first_instant_gives_the_stop_as_its_reason(state: Path) -> None:
    started = start_run(run_config(total_steps=10_000), state=state)
    result = stop_run(started.run_id, state=state)  # before the supervisor has settled in
    assert result.status == "stopped" and result.leftover_pids == []
    assert result.reason.startswith("stopped on request") and "not responding" not in result.reason, result.reason


def test_the_first_components_are_spawned_from_the_servers_launch_plan(state: Path) -> None:
    started = start_run(run_config(total_steps=10_000, step_time=0.2), state=state)
    running = wait_for(started.run_id, state, is_running)
    assert not (Path(started.run_dir) / "launch.json").exists()  # taken by the supervisor
    config = yaml.safe_load(Path(started.config_path).read_text())
    assert config["run"]["api_url"] == f"http://127.0.0.1:{running.components['api'].port}"
    supervisor_log = read_log(started.run_id, "supervisor", state=state).text
    assert "starting api, trainer, env" in supervisor_log and "launch plan" not in supervisor_log
    stop_run(started.run_id, state=state)


@pytest.mark.parametrize("plan", ["missing", "damaged"])
def test_a_run_comes_up_without_its_launch_plan(state: Path, monkeypatch: pytest.MonkeyPatch, plan: str) -> None:
    """The supervisor then works out the components from config.yaml itself."""
    from hermes_rl_mcp.runs import control

    def write_plan(run_dir: Path, _plan: object) -> None:
        if plan == "damaged":
            (run_dir / "launch.json").write_text('{"ports": {"api": "many"')

    monkeypatch.setattr(control, "write_plan", write_plan)
    started = start_run(run_config(total_steps=10_000, step_time=0.2), state=state)
    running = wait_for(started.run_id, state, is_running)
    supervisor_log = read_log(started.run_id, "supervisor", state=state).text
    assert "no launch plan from the server" in supervisor_log and "starting api, trainer, env" in supervisor_log
    config = yaml.safe_load(Path(started.config_path).read_text())
    assert config["run"]["api_url"] == f"http://127.0.0.1:{running.components['api'].port}"
    assert not (Path(started.run_dir) / "launch.json").exists()
    assert stop_run(started.run_id, state=state).status == "stopped"


def test_run_outlives_a_sigkilled_server_and_another_process_stops_it(state: Path) -> None:
    starter = (
        "import os, signal\n"
        "from hermes_rl_mcp.runs import start_run\n"
        f"run = start_run({run_config(total_steps=10_000, grandchildren=True, step_time=0.2)!r})\n"
        "print(run.run_id, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    spawned = subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True, timeout=20)
    assert spawned.returncode == -signal.SIGKILL
    run_id = spawned.stdout.strip()
    running = wait_for(run_id, state, is_running)
    everything = tree_pids(running, grandchildren=True)

    listed = cli("runs", "--status", "running")
    assert listed.returncode == 0 and run_id in listed.stdout and "demo" in listed.stdout
    shown = cli("status", run_id)
    assert shown.returncode == 0 and "running" in shown.stdout and "trainer" in shown.stdout

    began = time.monotonic()
    stopped = cli("stop", run_id)
    assert time.monotonic() - began < 7.0  # includes the CLI's own interpreter start-up
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert check_status(run_id, state=state).status == "stopped"
    assert {p for p in everything if alive(p)} == set()


def test_two_runs_at_once_get_their_own_ports_and_both_complete(state: Path) -> None:
    first = start_run(run_config(total_steps=15, finish=True), state=state)
    second = start_run(run_config(total_steps=15, finish=True), state=state)
    assert first.run_id != second.run_id
    a = wait_for(first.run_id, state, lambda s: s.status in TERMINAL_STATES)
    b = wait_for(second.run_id, state, lambda s: s.status in TERMINAL_STATES)
    assert (a.status, b.status) == ("completed", "completed"), (a.reason, b.reason)
    ports_a = {a.components["api"].port, a.components["trainer"].port}
    ports_b = {b.components["api"].port, b.components["trainer"].port}
    assert not ports_a & ports_b
    listed = list_runs(state=state)
    assert {r.run_id for r in listed.runs} == {first.run_id, second.run_id}
    assert all(r.progress == 1.0 for r in listed.runs)
    assert [r.run_id for r in list_runs("completed", state=state).runs] == [r.run_id for r in listed.runs]
    assert list_runs("running", state=state).runs == []


def test_results_of_a_failed_run(state: Path) -> None:
    started = start_run(run_config(total_steps=10_000, fail_component="env", fail_after=0.6, fail_code=3), state=state)
    failed = wait_for(started.run_id, state, lambda s: s.status in TERMINAL_STATES)
    assert failed.status == "failed"
    assert failed.reason == "env exited with code 3"
    assert failed.log_tail is not None and "failing on purpose with code 3" in failed.log_tail
    results = get_results(started.run_id, state=state)
    assert results.status == "failed" and results.reason == "env exited with code 3"
    assert 0 < len(results.history["train/loss"].steps) == len(results.history["train/loss"].values) <= 40
    assert results.final_metrics["train/percent_correct"] > 0
    assert results.checkpoints == [] or all(c.kind == "periodic" for c in results.checkpoints)
    assert results.final_checkpoint is None
    assert [e.status for e in results.events] == ["starting", "running", "failed"]
    assert stop_run(started.run_id, state=state).changed is False


def test_a_dead_supervisor_is_noticed_and_its_components_are_ended(state: Path) -> None:
    started = start_run(run_config(total_steps=10_000, step_time=0.2), state=state)
    running = wait_for(started.run_id, state, is_running)
    everything = tree_pids(running)
    assert running.supervisor_pid is not None
    os.kill(running.supervisor_pid, signal.SIGKILL)
    failed = wait_for(started.run_id, state, lambda s: s.status == "failed", timeout=5)
    assert failed.reason is not None and failed.reason.startswith("supervisor died")
    assert wait_gone(everything) == set()


def test_without_a_server_a_dead_supervisor_takes_even_grandchildren_in_their_own_session(state: Path) -> None:
    started = start_run(run_config(total_steps=10_000, step_time=0.2, grandchildren=True), state=state)
    running = wait_for(started.run_id, state, is_running)
    everything = tree_pids(running, grandchildren=True)
    assert len(everything) >= 10  # supervisor, 3 components, 2 grandchildren each
    os.kill(running.supervisor_pid, signal.SIGKILL)
    # No status call until they are gone: the components clear the run themselves.
    assert wait_gone(everything) == set()
    failed = check_status(started.run_id, state=state)
    assert failed.status == "failed" and failed.reason == f"supervisor died (pid {running.supervisor_pid} is no longer running)"


def test_a_port_taken_at_start_is_retried_on_a_new_port(state: Path) -> None:
    started = start_run(run_config(total_steps=10_000, collide_once=True, step_time=0.2), state=state)
    running = wait_for(started.run_id, state, is_running)
    supervisor_log = read_log(started.run_id, "supervisor", state=state).text
    assert "api: port" in supervisor_log and "retrying on a new port" in supervisor_log
    api_log = read_log(started.run_id, "api", state=state).text
    assert "address already in use" in api_log
    config = yaml.safe_load(Path(started.config_path).read_text())
    assert config["run"]["api_url"] == f"http://127.0.0.1:{running.components['api'].port}"
    stop_run(started.run_id, state=state)


# -- logs, secrets, status cache ---------------------------------------------------------------


def test_logs_are_tailed_and_redacted_and_components_get_a_minimal_environment(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXAMPLE_SERVICE_TOKEN", "tok-98765abcdef")
    started = start_run(run_config(total_steps=10_000, step_time=0.2), state=state)
    wait_for(started.run_id, state, is_running)
    env_log = read_log(started.run_id, "env", state=state)
    assert "env started" in env_log.text
    assert "HERMES_RL_HOME" in env_log.text and "PATH" in env_log.text
    assert "EXAMPLE_SERVICE_TOKEN" not in env_log.text  # not handed to components at all

    log_path = Path(started.run_dir) / "logs" / "env.log"
    with open(log_path, "a") as handle:
        for i in range(500):
            handle.write(f"line {i}\n")
        handle.write("leaked tok-98765abcdef here\n")
    tail = read_log(started.run_id, "env", 3, state=state)
    assert tail.lines == 3 and tail.truncated
    assert tail.text.splitlines() == ["line 498", "line 499", f"leaked {REDACTED} here"]
    assert "tok-98765abcdef" not in read_log(started.run_id, "env", state=state).text

    proc = cli("logs", started.run_id, "env", "-n", "2")
    assert proc.returncode == 0 and proc.stdout.splitlines() == ["line 499", f"leaked {REDACTED} here"]

    with pytest.raises(InvalidArgument, match="valid components are api, trainer, env, supervisor"):
        read_log(started.run_id, "../config.yaml", state=state)
    with pytest.raises(InvalidArgument, match="from 1 to"):
        read_log(started.run_id, "env", 0, state=state)
    # A log replaced by a link to a file outside the run directory is not served.
    api_log = Path(started.run_dir) / "logs" / "api.log"
    stop_run(started.run_id, state=state)
    api_log.unlink()
    api_log.symlink_to("/etc/passwd")
    with pytest.raises(LogNotAvailable):
        read_log(started.run_id, "api", state=state)


def test_operator_minimum_interval_returns_the_cached_answer(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = start_run(run_config(total_steps=10_000, step_time=0.05), state=state)
    wait_for(started.run_id, state, lambda s: s.step > 0)
    monkeypatch.setenv("HERMES_RL_STATUS_MIN_INTERVAL", "30")
    fresh = check_status(started.run_id, state=state)
    assert not fresh.cached and fresh.next_fresh_at == pytest.approx(fresh.checked_at + 30)
    time.sleep(0.3)
    cached = check_status(started.run_id, state=state)
    assert cached.cached and cached.checked_at == fresh.checked_at and cached.step == fresh.step
    assert cached.next_fresh_at == pytest.approx(fresh.checked_at + 30)
    monkeypatch.setenv("HERMES_RL_STATUS_MIN_INTERVAL", "0")
    assert check_status(started.run_id, state=state).step > fresh.step


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["", "../../etc/passwd", "r-2026-abc", "R-20261130-0132-4f9a2c", "r-20261130-0132-4f9a2c/..", "r-20261130-0132-4F9A2C"]
)
def test_malformed_run_ids_are_refused_before_touching_files(state: Path, bad: str) -> None:
    for call in (check_status, stop_run, get_results):
        with pytest.raises(InvalidRunId, match="r-20261130-0132-4f9a2c"):
            call(bad, state=state)
    with pytest.raises(InvalidRunId):
        read_log(bad, "env", state=state)


def test_unknown_run_ids_and_bad_arguments_get_clear_errors(state: Path) -> None:
    unknown = "r-20990101-0000-abcdef"
    for call in (check_status, stop_run, get_results):
        with pytest.raises(UnknownRun, match="list the runs"):
            call(unknown, state=state)
    with pytest.raises(UnknownRun):
        read_log(unknown, "trainer", state=state)
    with pytest.raises(InvalidArgument, match="valid statuses are starting, running"):
        list_runs("finished", state=state)
    with pytest.raises(InvalidRunConfig, match="run.environment"):
        start_run({"run": {"backend": "procs"}}, state=state)
    with pytest.raises(InvalidRunConfig, match="total_steps"):
        start_run({"run": {"environment": "demo", "backend": "procs"}, "env": {"total_steps": -3}}, state=state)
    with pytest.raises(BackendUnavailable, match="valid backends are local, tinker, procs"):
        start_run({"run": {"environment": "demo", "backend": "gpu-cluster"}}, state=state)
    with pytest.raises(BackendUnavailable, match="TINKER_API_KEY"):
        start_run({"run": {"environment": "demo", "backend": "tinker"}}, state=state)
    with pytest.raises(BackendUnavailable, match="env_file"):
        start_run({"run": {"environment": "demo", "backend": "local", "env_file": "/nonexistent.py"}}, state=state)
    assert list_runs(state=state).runs == []  # nothing half-created
    proc = cli("status", "not-a-run")
    assert proc.returncode == 1 and "malformed run id" in proc.stderr


# -- a real local run ----------------------------------------------------------------------------


def test_a_short_real_local_run_completes(state: Path) -> None:
    config = {
        "run": {"environment": "reverse_text", "backend": "local", "env_file": str(REPO / "environments" / "reverse_text.py")},
        "env": {"total_steps": 4, "steps_per_eval": 2, "group_size": 4, "eval_size": 8, "use_wandb": False},
        "trainer": {"batch_size": 16, "checkpoint_interval": 2},
        "openai": [{"model_name": "hermes-rl-local"}],
    }
    started = start_run(config, state=state)
    final = wait_for(started.run_id, state, lambda s: s.status in TERMINAL_STATES, timeout=120)
    assert final.status == "completed", (final.reason, final.log_tail)
    assert final.step == 4 and final.progress == 1.0
    assert final.components["env"].exit_code == 0
    trainer = final.components["trainer"]  # exits after its final checkpoint or serves until stopped
    assert (trainer.state, trainer.exit_code) == ("exited", 0) or trainer.state == "stopped"
    results = get_results(started.run_id, state=state)
    assert "train/loss" in results.final_metrics and "eval/percent_correct" in results.final_metrics
    assert results.final_checkpoint is not None and Path(results.final_checkpoint).is_file()
    assert [e.status for e in results.events] == ["starting", "running", "completed"]
    assert wait_gone({c.pid for c in final.components.values() if c.pid}) == set()
    # The supervisor polled /status-env until the environment registered: not a warning.
    api_log = (Path(started.run_dir) / "logs" / "api.log").read_text()
    assert "WARNING" not in api_log, api_log
