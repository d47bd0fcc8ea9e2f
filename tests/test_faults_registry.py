"""A damaged, emptied or missing run registry: rebuilt from the run directories, never "not recorded".

Real supervisors and components (the test backend of ``test_runs``), a real MCP client in both
eras; the registry file is damaged while one run is still training and another has finished.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import anyio
import pytest

from hermes_rl_mcp.runs import check_status, list_runs, start_run
from hermes_rl_mcp.runs.registry import REGISTRY_FILE
from mcp_helpers import ERAS, in_memory, structured
from test_runs import is_running, run_config, state, tree_pids, wait_for, wait_gone  # noqa: F401 - state is a fixture

DAMAGES = ["random-bytes", "truncated", "empty", "missing"]


def damage(registry: Path, how: str) -> None:
    size = registry.stat().st_size
    if how == "random-bytes":
        registry.write_bytes(os.urandom(max(size, 8192)))
    elif how == "truncated":
        with open(registry, "r+b") as handle:
            handle.truncate(size // 2)
    elif how == "empty":
        registry.write_bytes(b"")
    else:
        registry.unlink()
    for suffix in ("-wal", "-shm"):  # what the last writes left beside it goes too
        Path(f"{registry}{suffix}").unlink(missing_ok=True)


def fill_registry(state: Path) -> None:
    """Enough rows that the file spans many pages, so half of it is a real truncation. Each run
    is left only once its supervisor has exited: the registry says completed a moment before the
    supervisor exits, a rebuild in that moment records the run as running (its supervisor still
    lives), and the exit then reads as "supervisor died"."""
    for _ in range(3):
        finished = start_run(run_config(total_steps=20, finish=True), state=state)
        done = wait_for(finished.run_id, state, lambda s: s.status == "completed")
        assert not wait_gone(tree_pids(done), timeout=30)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_registry_is_rebuilt_from_the_run_directories(
    state: Path, how: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    fill_registry(state)
    live = start_run(run_config(total_steps=100_000), state=state)
    running = wait_for(live.run_id, state, is_running)
    pids = tree_pids(running)
    finished = [run_id for run_id in check_list(state) if run_id != live.run_id]
    registry = state / REGISTRY_FILE
    damage(registry, how)

    async def scenario() -> None:
        async with in_memory(era) as client:
            listed = structured(await client.call_tool("rl_list_runs", {}))
            by_id = {run["run_id"]: run for run in listed["runs"]}
            assert set(by_id) == {live.run_id, *finished}, "every run on disk is listed"
            assert by_id[live.run_id]["status"] == "running"
            assert all(by_id[run_id]["status"] == "completed" for run_id in finished)
            status = structured(await client.call_tool("rl_check_status", {"run_id": live.run_id}))
            assert status["status"] == "running" and "registry" in status["reason"], status["reason"]
            if how != "missing":
                assert "moved to" in status["reason"], status["reason"]
            for run_id in finished:
                results = structured(await client.call_tool("rl_get_results", {"run_id": run_id}))
                assert results["status"] == "completed"
            log = await client.read_resource(f"rl://runs/{live.run_id}/logs/supervisor")
            assert "run is running" in log.contents[0].text
            stopped = structured(await client.call_tool("rl_stop_training", {"run_id": live.run_id}))
            assert stopped["status"] == "stopped", stopped

    with caplog.at_level(logging.WARNING):
        anyio.run(scenario)
    assert not wait_gone(pids), "every process of the stopped run is gone"
    aside = sorted(p.name for p in state.glob(f"{REGISTRY_FILE}.damaged-*") if not p.name.endswith(("-wal", "-shm")))
    assert len(aside) == (0 if how == "missing" else 1), aside
    assert not [r for r in caplog.records if r.exc_info], "no tracebacks in the server's log"
    # The rebuild is logged by the process that did it: this server, or the live run's
    # supervisor when its periodic step update reached the registry first.
    rebuilt_here = any("rebuilt from the" in r.getMessage() for r in caplog.records)
    supervisor_log = (state / "runs" / live.run_id / "logs" / "supervisor.log").read_text()
    assert rebuilt_here or "rebuilt from the" in supervisor_log, "the rebuild is logged"
    # The supervisor followed the rebuilt registry: the stop it recorded is in the new file.
    assert check_status(live.run_id, state=state).status == "stopped"


def test_a_run_directory_the_registry_does_not_know_is_recorded_not_unknown(state: Path) -> None:
    finished = start_run(run_config(total_steps=20, finish=True), state=state)
    done = wait_for(finished.run_id, state, lambda s: s.status == "completed")
    assert not wait_gone(tree_pids(done))
    with sqlite3.connect(state / REGISTRY_FILE) as db:  # a sound registry that lost one row
        db.execute("DELETE FROM runs WHERE id = ?", (finished.run_id,))
    status = check_status(finished.run_id, state=state)
    assert status.status == "completed" and "re-recorded from its directory" in status.reason, status.reason
    assert [run.run_id for run in list_runs(state=state).runs] == [finished.run_id]


def check_list(state: Path) -> list[str]:
    return [path.name for path in (state / "runs").iterdir()]


def test_a_log_watcher_whose_every_tick_fails_says_so_once_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mcp.server.subscriptions import InMemorySubscriptionBus

    from hermes_rl_mcp.core.control import ControlPlane
    from hermes_rl_mcp.server.log_watch import POLL_SECONDS, LogWatcher

    state = tmp_path / "watched"
    watcher = LogWatcher(ControlPlane(state_dir=state), InMemorySubscriptionBus())
    assert watcher.watch("rl://runs/r-20260101-0000-abcdef/logs/env", object())
    state.rmdir()
    state.write_text("the state directory is now a file: every tick fails")

    async def watch_for_a_while() -> None:
        with anyio.move_on_after(POLL_SECONDS * 8):
            await watcher.run()

    with caplog.at_level(logging.WARNING):
        anyio.run(watch_for_a_while)
    failures = [r for r in caplog.records if "tick failed" in r.getMessage()]
    assert len(failures) == 1, [r.getMessage() for r in caplog.records]
    assert not [r for r in caplog.records if r.exc_info]


def test_a_registry_being_rebuilt_is_never_read_half_built(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another reader during a rebuild waits for the whole file; it used to find the runs not yet
    recorded missing and record them itself, as runs the registry had lost."""
    import threading

    from hermes_rl_mcp.runs.registry import Registry

    fill_registry(state)
    run_ids = check_list(state)
    damage(state / REGISTRY_FILE, "random-bytes")
    seen: dict[str, str] = {}
    readers: list[threading.Thread] = []
    adopt = Registry.adopt

    def adopt_then_let_another_reader_in(self: Registry, root: Path, why: str) -> object:
        found = adopt(self, root, why)
        if not readers:  # after the first run is recorded, a reader in another thread looks
            reader = threading.Thread(target=lambda: seen.update({r: check_status(r, state=state).reason for r in run_ids}))
            readers.append(reader)
            reader.start()
            reader.join(timeout=1.5)  # long enough for it to finish, unless it waits for the rebuild
        return found

    monkeypatch.setattr(Registry, "adopt", adopt_then_let_another_reader_in)
    assert "moved to" in check_status(run_ids[0], state=state).reason
    readers[0].join(timeout=30)
    assert set(seen) == set(run_ids)
    for run_id, reason in seen.items():
        assert "moved to" in reason and "missing from the run registry" not in reason, (run_id, reason)
