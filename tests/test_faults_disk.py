"""A full disk under the state directory: the answer names the disk, and nothing unsaved reads as saved.

The disk is real: a tmpfs of a few MB mounted for the test (this needs root, as on the test
machine; without it the test fails rather than skips) and filled with a file until the kernel
answers ENOSPC. A quota or RLIMIT_FSIZE would not do: they fail writes with other errors (EDQUOT,
EFBIG and SIGXFSZ) and leave statvfs reporting free space.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from hermes_rl_mcp.runs import check_status, list_runs, start_run, stop_run
from hermes_rl_mcp.runs.states import TERMINAL_STATES
from hermes_rl_mcp.storage import MIN_FREE_VARIABLE
from mcp_helpers import ERAS, in_memory, refusal_text, structured
from test_runs import TESTS_DIR, is_running, run_config, tree_pids, wait_for, wait_gone

DISK_MB = 6


def mounted(path: Path) -> bool:
    return any(line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines())


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state directory on a fresh tmpfs of DISK_MB MB; unmounted (and checked gone) afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mount)], capture_output=True, text=True)
    assert done.returncode == 0, f"cannot mount a small tmpfs for the full-disk tests: {done.stderr}"
    state = mount / "state"
    monkeypatch.setenv("HERMES_RL_HOME", str(state))
    monkeypatch.setenv("HERMES_RL_BACKENDS", "procs=test_runs_components:ProcBackend")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS_DIR), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv(MIN_FREE_VARIABLE, "1")
    try:
        yield state
    finally:
        (mount / "filler").unlink(missing_ok=True)
        for run in list_runs(state=state).runs:
            if run.status not in TERMINAL_STATES:
                stop_run(run.run_id, state=state)
        subprocess.run(["umount", str(mount)], check=False)
        if mounted(mount):
            subprocess.run(["umount", "-l", str(mount)], check=False)
        assert not mounted(mount), "the test's tmpfs is unmounted"


def fill(state: Path) -> Path:
    """Write a file until the disk is full; returns it (delete it to free the space)."""
    filler = state.parent / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with open(filler, "ab", buffering=0) as handle:  # the last partial chunk's room too
        try:
            while True:
                handle.write(b"\0" * 512)
        except OSError:
            pass
    return filler


@pytest.mark.parametrize("era", ERAS)
def test_on_a_full_disk_edits_selection_and_start_are_refused_naming_the_disk(small_disk: Path, era: str) -> None:
    async def scenario() -> None:
        async with in_memory(era) as client:
            structured(await client.call_tool("rl_select_environment", {"name": "reverse_text"}))
            structured(await client.call_tool("rl_edit_config", {"field": "env.group_size", "value": 6}))
            filler = fill(small_disk)
            for tool, arguments in (
                ("rl_edit_config", {"field": "env.group_size", "value": 9}),
                ("rl_select_environment", {"name": "arithmetic"}),
                ("rl_start_training", {}),
            ):
                text = refusal_text(await client.call_tool(tool, arguments))
                assert f"the disk holding {small_disk}" in text and "free" in text, text
                assert "nothing was" in text, text
            current = structured(await client.call_tool("rl_get_current_config", {}))
            assert current["environment"] == "reverse_text"
            assert current["editable"]["env.group_size"]["value"] == 6, "the refused edit changed nothing"
            assert list(small_disk.glob("runs/*")) == [], "a refused start leaves no run directory"
            filler.unlink()
            structured(await client.call_tool("rl_edit_config", {"field": "env.group_size", "value": 9}))
            current = structured(await client.call_tool("rl_get_current_config", {}))
            assert current["editable"]["env.group_size"]["value"] == 9

    anyio.run(scenario)


def test_start_is_refused_below_the_free_space_floor(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MIN_FREE_VARIABLE, str(DISK_MB * 2))  # more than the whole disk
    with pytest.raises(Exception) as refused:
        start_run(run_config(total_steps=20), state=small_disk)
    assert type(refused.value).__name__ == "DiskFull"
    message = str(refused.value)
    assert f"the disk holding {small_disk}" in message and f"{MIN_FREE_VARIABLE}" in message, message
    assert list(small_disk.glob("runs/*")) == []


def test_a_run_whose_disk_fills_up_fails_with_the_disk_as_its_reason(small_disk: Path) -> None:
    started = start_run(run_config(total_steps=100_000), state=small_disk)
    running = wait_for(started.run_id, small_disk, is_running)
    pids = tree_pids(running)
    fill(small_disk)
    ended = wait_for(started.run_id, small_disk, lambda s: s.status in TERMINAL_STATES, timeout=30)
    assert ended.status == "failed", ended.reason
    assert "the disk holding" in ended.reason and "free" in ended.reason, ended.reason
    assert not wait_gone(pids), "every process of the failed run is gone"
    assert check_status(started.run_id, state=small_disk).status == "failed"
