"""Process identity and whole-tree termination, from any process (Linux ``/proc``).

A pid alone does not identify a process: pids are reused. A process is identified by its pid
plus its start time (field 22 of ``/proc/<pid>/stat``, clock ticks since boot), recorded when
it was spawned and compared before it is signalled.

Every component runs in its own session, so its process group id equals its pid and covers
its children and grandchildren unless one of them starts a session of its own; descendants
are therefore also collected through parent links.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    pid: int
    state: str
    ppid: int
    pgid: int
    sid: int
    start_time: int
    cpu_ticks: int  # user + system time so far, in clock ticks

    @property
    def alive(self) -> bool:
        # A zombie has finished running; only its parent's wait is missing.
        return self.state not in ("Z", "X")


def read_stat(pid: int) -> ProcStat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its last ")".
    closing = raw.rfind(")")
    if closing < 0:
        return None
    fields = raw[closing + 2 :].split()
    try:
        # fields[0] is field 3 (state); field N sits at index N - 3.
        return ProcStat(
            pid=pid, state=fields[0], ppid=int(fields[1]), pgid=int(fields[2]), sid=int(fields[3]),
            start_time=int(fields[19]), cpu_ticks=int(fields[11]) + int(fields[12]),
        )
    except (IndexError, ValueError):
        return None


def start_time_of(pid: int) -> int | None:
    stat = read_stat(pid)
    return stat.start_time if stat is not None else None


def is_same_process(pid: int | None, start_time: int | None) -> bool:
    """True when ``pid`` is alive and is the very process that started at ``start_time``."""
    if not pid or start_time is None:
        return False
    stat = read_stat(pid)
    return stat is not None and stat.alive and stat.start_time == start_time


def _all_stats() -> list[ProcStat]:
    stats: list[ProcStat] = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = read_stat(int(entry.name))
            if stat is not None:
                stats.append(stat)
    return stats


def tree_members(leader_pid: int, leader_start: int | None) -> list[ProcStat]:
    """Live processes that belong to the component started as ``leader_pid`` at ``leader_start``.

    Members are the process group ``leader_pid`` and every descendant reachable through parent
    links. When the leader is gone its group may still hold children; they are recognised by
    having started no earlier than the leader, so a reused pid never matches.
    """
    stats = _all_stats()
    leader = next((s for s in stats if s.pid == leader_pid), None)
    if leader is not None and leader_start is not None and leader.start_time != leader_start:
        leader = None  # the pid now names someone else: the recorded process is long gone
    floor = leader_start if leader_start is not None else 0
    members: dict[int, ProcStat] = {}
    if leader is not None and leader.alive:
        members[leader.pid] = leader
    for stat in stats:
        if stat.pgid == leader_pid and stat.start_time >= floor and stat.alive and stat.pid != leader_pid:
            members[stat.pid] = stat
    if leader is not None:
        # Children that left the group (own session) are still found through their parents.
        children: dict[int, list[ProcStat]] = {}
        for stat in stats:
            children.setdefault(stat.ppid, []).append(stat)
        frontier = [leader.pid, *members]
        seen = set(frontier)
        while frontier:
            parent = frontier.pop()
            for child in children.get(parent, []):
                if child.pid not in seen and child.start_time >= floor:
                    seen.add(child.pid)
                    frontier.append(child.pid)
                    if child.alive:
                        members[child.pid] = child
    return list(members.values())


def signal_tree(leader_pid: int, leader_start: int | None, sig: int) -> list[int]:
    """Send ``sig`` to the component's group and to every member; returns the pids signalled."""
    members = tree_members(leader_pid, leader_start)
    if not members:
        return []
    try:
        os.killpg(leader_pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    signalled: list[int] = []
    for member in members:
        try:
            os.kill(member.pid, sig)
            if sig == signal.SIGTERM:
                os.kill(member.pid, signal.SIGCONT)
            signalled.append(member.pid)
        except (ProcessLookupError, PermissionError):
            pass
    return signalled


def terminate_trees(
    trees: list[tuple[int, int | None]],
    *,
    grace: float = 2.5,
    reap: Callable[[], None] | None = None,
) -> list[int]:
    """End every tree: SIGTERM its leader, then the rest of the tree, SIGKILL what is left, verify.

    The leader (the component itself) is asked first and alone: it finishes its work, such as
    closing its W&B run through W&B's helper process, while that helper still lives. Signalling
    the whole tree at once kills the helper under it and leaves a traceback as the log's last
    word. The rest of each tree is signalled once its leader has exited or ``grace`` is spent.
    ``reap`` lets the parent collect its exited children while waiting (a zombie no longer
    runs, but reaping keeps the process table clean). Returns pids still alive at the end,
    which should always be empty.
    """

    def wait_until(done: Callable[[], bool], seconds: float, step: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            if reap is not None:
                reap()
            if done():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(step)

    for pid, start in trees:
        if is_same_process(pid, start):
            try:
                os.kill(pid, signal.SIGTERM)
                os.kill(pid, signal.SIGCONT)  # a stopped (frozen) component can only act on SIGTERM once it runs
            except (ProcessLookupError, PermissionError):
                pass
    wait_until(lambda: not any(is_same_process(pid, start) for pid, start in trees), grace, 0.05)
    for pid, start in trees:
        signal_tree(pid, start, signal.SIGTERM)
    if wait_until(lambda: not any(tree_members(pid, start) for pid, start in trees), 0.5, 0.05):
        return []
    for pid, start in trees:
        signal_tree(pid, start, signal.SIGKILL)
    left: list[int] = []

    def all_gone() -> bool:
        nonlocal left
        left = [m.pid for pid, start in trees for m in tree_members(pid, start)]
        return not left

    return [] if wait_until(all_gone, 1.0, 0.02) else left


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``).

    A grandchild that started a session of its own and whose parent then died would otherwise
    be re-parented to init and escape both the group kill and the parent-link walk. With this
    set, it becomes a child of the supervisor, which can still find and end it.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # 36 = PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def descendants(root_pid: int) -> list[ProcStat]:
    """Every live process below ``root_pid`` through parent links."""
    children: dict[int, list[ProcStat]] = {}
    for stat in _all_stats():
        children.setdefault(stat.ppid, []).append(stat)
    found: list[ProcStat] = []
    frontier = [root_pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            frontier.append(child.pid)
            if child.alive:
                found.append(child)
    return found


def reap_adopted(keep: set[int]) -> None:
    """Collect exited adopted orphans; never the children in ``keep`` (their owner waits for them)."""
    me = os.getpid()
    for stat in _all_stats():
        if stat.ppid == me and not stat.alive and stat.pid not in keep:
            try:
                os.waitpid(stat.pid, os.WNOHANG)
            except ChildProcessError:
                pass


RUN_MARKER_VARIABLE = "HERMES_RL_RUN_MARKER"


def marked_processes(marker: str) -> list[ProcStat]:
    """Live processes whose environment carries ``HERMES_RL_RUN_MARKER=<marker>``.

    Every component of a run is started with the marker and its descendants inherit it, so a
    run's processes are found even after their parents died and parent links are gone.
    """
    needle = f"{RUN_MARKER_VARIABLE}={marker}".encode()
    found: list[ProcStat] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            stat = read_stat(int(entry.name))
            if stat is not None and stat.alive:
                found.append(stat)
    return found


def kill_all(stats: list[ProcStat], *, grace: float) -> list[int]:
    """SIGTERM (and SIGCONT, for stopped ones) each process, SIGKILL what is left after ``grace``.

    Processes are identified by pid and start time throughout. Returns the pids still alive.
    """
    for stat in stats:
        for sig in (signal.SIGTERM, signal.SIGCONT):
            try:
                os.kill(stat.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def alive() -> list[ProcStat]:
        return [s for s in stats if is_same_process(s.pid, s.start_time)]

    deadline = time.monotonic() + grace
    while alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    for stat in alive():
        try:
            os.kill(stat.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 1.0
    while (left := alive()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [s.pid for s in left]
