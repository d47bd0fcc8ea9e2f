"""The lifeline: a run's components end themselves, and the rest of the run, when its supervisor dies.

The supervisor opens a pipe and keeps its only write end; every component inherits the read end
(its number in ``HERMES_RL_LIFELINE_FD``). The kernel closes the write end whatever way the
supervisor ends, SIGKILL included, and a read then returns end-of-file: no polling, no timing.

A component that sees it ends every process of the run: those that carry the run's marker in
their environment (every component and whatever they started, W&B's helpers included, even once
re-parented), those in its own session, and its own descendants; then itself. Any one live
component is enough to clear the run, so a sibling that cannot act (stopped by SIGSTOP, or an
environment that never called ``watch_supervisor``) is ended too.
"""

from __future__ import annotations

import os
import sys
import threading

from hermes_rl_mcp.runs.procs import RUN_MARKER_VARIABLE, ProcStat, descendants, kill_all, marked_processes, read_stat

LIFELINE_VARIABLE = "HERMES_RL_LIFELINE_FD"
EXIT_CODE = 75  # the component did not fail: its supervisor vanished
SWEEP_GRACE = 1.0


def open_lifeline() -> tuple[int, int]:
    """(read end, write end); both close-on-exec, so only the components named in ``pass_fds`` get the read end."""
    return os.pipe()


def component_environment(read_end: int, marker: str) -> dict[str, str]:
    """The variables a component needs to watch its supervisor and to be found by its siblings."""
    return {LIFELINE_VARIABLE: str(read_end), RUN_MARKER_VARIABLE: marker}


def watch_supervisor() -> None:
    """Start the watch in a daemon thread; without a lifeline (started by hand) do nothing."""
    # Taken out of the environment: in a child of this component the number would name some
    # other descriptor, or none.
    raw = os.environ.pop(LIFELINE_VARIABLE, "")
    if not raw.isdigit():
        return
    fd = int(raw)
    try:
        os.set_inheritable(fd, False)  # this component's own children must not keep it open
    except OSError:
        return  # not an open descriptor: nothing to watch
    threading.Thread(target=_wait_then_end, args=(fd,), name="lifeline", daemon=True).start()


def _wait_then_end(fd: int) -> None:
    try:
        while os.read(fd, 64):
            pass  # nobody writes; data would only mean a misuse, keep waiting for end-of-file
    except OSError:
        pass
    print("supervisor is gone: ending this run's processes", file=sys.stderr, flush=True)
    end_run_processes(os.environ.get(RUN_MARKER_VARIABLE, ""))
    os._exit(EXIT_CODE)


def end_run_processes(marker: str) -> list[int]:
    """End every other process of the run this process belongs to; returns pids that survived."""
    me = os.getpid()
    own = read_stat(me)
    targets = {s.pid: s for s in marked_processes(marker)} if marker else {}
    if own is not None:
        for stat in descendants(me):
            targets.setdefault(stat.pid, stat)
        if own.sid == me:  # a session leader (as every component is): its session is its own
            for stat in _session_members(me, own.start_time):
                targets.setdefault(stat.pid, stat)
    targets.pop(me, None)
    return kill_all(list(targets.values()), grace=SWEEP_GRACE)


def _session_members(sid: int, leader_start: int) -> list[ProcStat]:
    found: list[ProcStat] = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = read_stat(int(entry.name))
            if stat is not None and stat.sid == sid and stat.alive and stat.start_time >= leader_start:
                found.append(stat)
    return found
