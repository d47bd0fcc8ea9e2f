"""One run's supervisor: a detached process (own session) that owns the run's components.

It takes over the components its entry point spawned from the server's launch plan (or
allocates loopback ports and spawns them itself: runs/launch.py), brings them up in order, each
only once the previous one is ready (their interpreters start together and wait at a start
gate, so that their imports overlap), watches them, records every change in the registry, and
ends every component's whole process tree when the run completes, fails or is stopped (SIGTERM
to the supervisor). Its own output goes to ``logs/supervisor.log``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

from hermes_rl_mcp.runs.backends import Backend, ComponentSpec, Ports, allocate_ports, free_port, job_backend
from hermes_rl_mcp.runs.errors import RunError
from hermes_rl_mcp.runs.launch import Launched, spawn_component, start_chain
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.lifeline import open_lifeline
from hermes_rl_mcp.runs.probe import http_ok
from hermes_rl_mcp.runs.procs import become_subreaper, descendants, read_stat, reap_adopted, start_time_of, terminate_trees
from hermes_rl_mcp.runs.redact import redact_text
from hermes_rl_mcp.runs.recovery import write_supervisor_pid
from hermes_rl_mcp.runs.registry import Registry
from hermes_rl_mcp.runs.stall import StallLimits, StallWatch, describe, write_stall
from hermes_rl_mcp.runs.tail import latest_step, tail_lines

if TYPE_CHECKING:  # read only without a launch plan: the supervisor starts without pydantic
    from hermes_rl_mcp.run_document import RunDocument

WATCH_INTERVAL = 0.05
# Probes start fast and back off, so a quick component is seen at once and a slow one is not
# flooded with requests (each failed probe may be a line in its log). The last component's
# readiness is when the run becomes running: a probe every 40 ms at most keeps that moment
# within a few tens of milliseconds of the fact, for a refused connection or a 404 (well under a
# millisecond on loopback) each time.
PROBE_FIRST_INTERVAL = 0.02
PROBE_MAX_INTERVAL = 0.04
STEP_UPDATE_INTERVAL = 2.0
STALL_CHECK_INTERVAL = 0.5
STOP_GRACE = 2.0
FAILURE_TAIL_LINES = 20
PORT_ATTEMPTS = 4
# After one of trainer/env ends cleanly the other gets this long to finish as well.
FINISH_TIMEOUT = 300.0
_PORT_IN_USE = ("address already in use", "errno 98", "eaddrinuse")


@dataclass
class Running:
    spec: ComponentSpec
    process: subprocess.Popen[bytes]
    start_time: int | None
    log_offset: int
    port: int | None
    exit_code: int | None = None


@dataclass
class Outcome:
    status: str  # completed | failed | stopped
    reason: str
    component: str | None = None
    exit_code: int | None = None
    log_tail: str | None = None


@dataclass
class Supervisor:
    paths: RunPaths
    registry: Registry
    running: dict[str, Running] = field(default_factory=dict)
    stop_requested: bool = False
    _finished_at: dict[str, float] = field(default_factory=dict)
    # Components hold the read end; the write end lives only here, so they see end-of-file
    # the moment this process ends, however it ends (see runs/lifeline.py).
    _lifeline: tuple[int, int] = field(default_factory=open_lifeline)
    # The components the entry point spawned before this module was imported (runs/launch.py).
    _launched: Launched | None = None
    _stall_limits: StallLimits | None = None
    _loaded: tuple[Backend, RunDocument] | None = None  # see _backend_and_document

    @property
    def run_id(self) -> str:
        return self.paths.run_id

    # -- entry ---------------------------------------------------------------------------------

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # outlive the terminal/session that started us
        if self._launched is not None and self._launched.stop_requested:  # asked before these handlers
            self.stop_requested = True
        if not become_subreaper():
            self.say("cannot adopt orphaned descendants on this system; a grandchild that leaves its session may survive")
        me = os.getpid()
        with contextlib.suppress(OSError):  # only a rebuilt registry reads it; a full disk must not stop the run here
            write_supervisor_pid(self.paths, me, start_time_of(me))
        self.registry.update_run(self.run_id, supervisor_pid=me, supervisor_start=start_time_of(me))
        row = self.registry.get_run(self.run_id)
        if row is None:
            self.say("no registry row for this run; nothing to supervise")
            self._end_launched()
            return 2
        if row["status"] != "starting":
            if row["status"] == "stopping":
                self.registry.transition(self.run_id, "stopped", "stopped before the supervisor started", ended_at=time.time())
            self.say(f"run is {row['status']}; nothing to do")
            self._end_launched()
            return 0
        try:
            outcome = self._start_and_watch()
        except Exception as exc:  # noqa: BLE001 - any surprise must still end the components
            self.say(f"supervisor error: {exc!r}")
            outcome = Outcome("failed", f"supervisor error: {type(exc).__name__}: {exc}")
        try:
            self._finish(outcome)
        except RunError as exc:  # a full disk: the end cannot be recorded, but every component still ends
            self.say(f"could not record the end of the run: {exc}")
            self._end_components()
        return 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True

    def say(self, message: str) -> None:
        now = time.time()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
        with contextlib.suppress(OSError):  # its log sits on the state disk, which may be full
            print(f"{stamp} supervisor: {redact_text(message)}", file=sys.stderr, flush=True)

    # -- starting ------------------------------------------------------------------------------

    def _start_and_watch(self) -> Outcome:
        plan = self._launched.plan if self._launched is not None else None
        if plan is not None:
            ports, specs, self._stall_limits = plan.ports, plan.specs, plan.stall
            self.say(f"starting {', '.join(spec.name for spec in specs)}")
            self._adopt_launched(specs, ports)
        else:
            self.say("no launch plan from the server; working out the components from config.yaml")
            backend, document = self._backend_and_document()
            # An evaluation has no training steps to watch; its own timeouts bound it.
            self._stall_limits = StallLimits.of(backend) if document.run.job != "evaluate" else None
            ports = allocate_ports()
            self.say(f"starting {', '.join(spec.name for spec in backend.components(document, self.paths.config, ports))}")
            specs = self._spawn_from(ports, 0)
        order = [spec.name for spec in specs]
        attempts = dict.fromkeys(order, 1)
        index = 0
        while index < len(order):
            name = order[index]
            if name not in self.running:  # its predecessor has no health URL to wait on
                self._spawn(specs[index], ports, gate=None)
            result = self._wait_ready(name)
            if result == "port-in-use":
                spec = specs[index]
                assert spec.port_role is not None
                if attempts[name] >= PORT_ATTEMPTS:
                    return self._failure(name, f"{name} could not bind a free port after {PORT_ATTEMPTS} attempts")
                attempts[name] += 1
                self.say(f"{name}: port {ports.of(spec.port_role)} was taken; retrying on a new port (attempt {attempts[name]})")
                ports = Ports(**{**ports.__dict__, spec.port_role: free_port()})
                # The components after it are still waiting at their start gate and hold the
                # old address: end them and start them again with the new one.
                self._end_waiting(order[index + 1:])
                specs = self._spawn_from(ports, index)
                continue
            if isinstance(result, Outcome):
                return result
            self.registry.set_component(self.run_id, name, state="running")
            self.say(f"{name} ready (pid {self.running[name].process.pid})")
            index += 1
        if self.registry.transition(
            self.run_id, "running", "all components ready", from_states=("starting",), started_at=time.time()
        ):
            self.say("run is running")
        return self._watch()

    def _backend_and_document(self) -> tuple[Backend, RunDocument]:
        """The run's backend and document, read from config.yaml once: needed only without a
        launch plan, or to start components again on new ports (so imported only then: pydantic).
        Later rewrites of the file change only its ports, which ``_spawn_from`` sets again."""
        if self._loaded is None:
            from hermes_rl_mcp import run_document

            document = run_document.load(self.paths.config)
            self._loaded = (job_backend(document), document)
        return self._loaded

    def _spawn_from(self, ports: Ports, first: int) -> list[ComponentSpec]:
        """Write the ports into config.yaml and spawn the components from ``first`` on, together.

        Their interpreters start and import in parallel; each one after the first waits at its
        start gate (see hermes_rl_mcp.start_gate) until the component before it answers its
        health URL, so the run still comes up in order (see ``launch.start_chain``).
        """
        from hermes_rl_mcp import run_document

        backend, document = self._backend_and_document()
        document = document.with_ports(ports.api, ports.policy)
        run_document.write(self.paths.config, document)
        specs = backend.components(document, self.paths.config, ports)
        for spec, gate in start_chain(specs, first):
            self._spawn(spec, ports, gate=gate)
        return specs

    def _end_launched(self) -> None:
        """End the components the entry point spawned that this supervisor did not take over."""
        if self._launched is None or not self._launched.processes:
            return
        processes = [process for _, process, _ in self._launched.processes]
        self._launched.processes = None
        terminate_trees([(p.pid, start_time_of(p.pid)) for p in processes], grace=STOP_GRACE,
                        reap=lambda: [p.poll() for p in processes])

    def _adopt_launched(self, specs: list[ComponentSpec], ports: Ports) -> None:
        """Take over the components the entry point spawned from the plan; spawn any it could not."""
        assert self._launched is not None
        processes, self._launched.processes = self._launched.processes or [], None
        for spec, process, offset in processes:
            self._track(spec, process, offset, ports)
        for spec, gate in start_chain(specs)[len(processes):]:
            self._spawn(spec, ports, gate=gate)

    def _end_waiting(self, names: list[str]) -> None:
        trees = [(self.running[n].process.pid, self.running[n].start_time) for n in names if n in self.running]
        terminate_trees(trees, grace=STOP_GRACE, reap=lambda: [self.running[n].process.poll() for n in names if n in self.running])
        for name in names:
            self.running.pop(name, None)

    def _spawn(self, spec: ComponentSpec, ports: Ports, gate: str | None) -> None:
        process, offset = spawn_component(
            spec.argv, spec.extra_env_keys, gate, log_path=self.paths.log(spec.name), cwd=self.paths.root,
            lifeline_read_end=self._lifeline[0], marker=self.run_id,
        )
        self._track(spec, process, offset, ports)

    def _track(self, spec: ComponentSpec, process: subprocess.Popen[bytes], log_offset: int, ports: Ports) -> None:
        started = start_time_of(process.pid)
        port = ports.of(spec.port_role) if spec.port_role else None
        self.running[spec.name] = Running(spec, process, started, log_offset, port)
        self.registry.set_component(
            self.run_id, spec.name, state="starting", pid=process.pid, start_time=started, port=port, exit_code=None
        )
        self.say(f"started {spec.name}: pid {process.pid}" + (f", port {port}" if port else ""))

    def _wait_ready(self, name: str) -> str | Outcome:
        current = self.running[name]
        spec = current.spec
        deadline = time.monotonic() + spec.ready_timeout
        next_probe = 0.0
        interval = PROBE_FIRST_INTERVAL
        while True:
            if self.stop_requested:
                return self._stop_outcome()
            earlier = self._check_exits(exclude=name)
            if earlier is not None:
                return earlier
            code = current.process.poll()
            if code == 0 and spec.finishes_run:
                return "ready"  # done already: the watch records its exit and completes the run
            if code is not None:
                current.exit_code = code
                self.registry.set_component(self.run_id, name, state="exited", exit_code=code)
                if spec.port_role is not None and self._log_says_port_in_use(current):
                    return "port-in-use"
                return self._failure(name, f"{name} exited with code {code} before it was ready", code)
            if time.monotonic() >= next_probe:
                if self._is_ready(spec):
                    return "ready"
                next_probe = time.monotonic() + interval
                interval = min(PROBE_MAX_INTERVAL, interval * 1.5)
            if time.monotonic() > deadline:
                return self._failure(name, f"{name} did not become ready within {spec.ready_timeout:.0f} s")
            time.sleep(min(WATCH_INTERVAL, max(0.0, next_probe - time.monotonic())))

    def _is_ready(self, spec: ComponentSpec) -> bool:
        return all(http_ok(url) for url in (spec.health_url, spec.ready_url) if url is not None)

    def _log_says_port_in_use(self, current: Running) -> bool:
        try:
            with open(self.paths.log(current.spec.name), "rb") as handle:
                handle.seek(current.log_offset)
                text = handle.read(256 * 1024).decode("utf-8", "replace").lower()
        except OSError:
            return False
        return any(marker in text for marker in _PORT_IN_USE)

    # -- watching ------------------------------------------------------------------------------

    def _watch(self) -> Outcome:
        next_step_update = 0.0
        # From the step the run starts at (a resumed run counts on from its parent's), so that its
        # first new step is given the start-up allowance too.
        stall_watch = (
            StallWatch(self._stall_limits, started_at=time.time(), step=latest_step(self.paths.metrics))
            if self._stall_limits else None
        )
        next_stall_check = 0.0
        stalled = False
        while True:
            if self.stop_requested:
                return self._stop_outcome()
            outcome = self._check_exits()
            if outcome is not None:
                return outcome
            if "env" in self._finished_at and (
                # A trainer may exit after its final checkpoint, or keep serving the policy (for
                # the environment's final evaluation) until it is stopped: both are complete.
                "trainer" in self._finished_at or self._has_final_checkpoint()
            ):
                return Outcome("completed", "environment finished total_steps and the trainer wrote its final checkpoint")
            if self._finished_at:
                first = min(self._finished_at.values())
                if time.monotonic() - first > FINISH_TIMEOUT:
                    waiting = next(n for n in ("trainer", "env") if n not in self._finished_at)
                    return self._failure(
                        waiting, f"{waiting} did not finish within {FINISH_TIMEOUT:.0f} s after the other component ended"
                    )
            now = time.monotonic()
            if stall_watch is not None and now >= next_stall_check and not self._finished_at:
                next_stall_check = now + STALL_CHECK_INTERVAL
                stall = stall_watch.observe(time.time(), latest_step(self.paths.metrics), self._component_stats())
                if stall is not None and stall["failing"]:
                    quiet = stall["quiet_components"]
                    return self._failure(quiet[0]["component"] if quiet else "trainer", describe(stall))
                if (stall is not None) != stalled or stall is not None:
                    write_stall(self.paths.stall, stall)
                    if (stall is not None) != stalled:
                        self.say(describe(stall) if stall is not None else "training advances again")
                    stalled = stall is not None
            if now >= next_step_update:
                self.registry.update_run(self.run_id, step=latest_step(self.paths.metrics))
                reap_adopted({r.process.pid for r in self.running.values()})
                next_step_update = now + STEP_UPDATE_INTERVAL
            time.sleep(WATCH_INTERVAL)

    def _component_stats(self) -> dict[str, Any]:
        return {
            name: read_stat(r.process.pid) for name, r in self.running.items() if r.exit_code is None
        }

    def _check_exits(self, exclude: str | None = None) -> Outcome | None:
        """The first unexpected exit among running components, noting clean finishes."""
        for name, current in self.running.items():
            if name == exclude or current.exit_code is not None:
                continue
            code = current.process.poll()
            if code is None:
                continue
            current.exit_code = code
            self.registry.set_component(self.run_id, name, state="exited", exit_code=code)
            self.say(f"{name} exited with code {code}")
            if code == 0 and current.spec.finishes_run:
                return Outcome("completed", f"{name} finished")
            if code == 0 and name == "env":
                self._finished_at[name] = time.monotonic()
                continue
            if code == 0 and name == "trainer":
                if self._has_final_checkpoint():
                    self._finished_at[name] = time.monotonic()
                    continue
                return self._failure(name, "trainer exited with code 0 without writing its final checkpoint", 0)
            if code == 0:
                return self._failure(name, f"{name} exited with code 0 before the run finished", 0)
            return self._failure(name, f"{name} exited with code {code}", code)
        return None

    def _has_final_checkpoint(self) -> bool:
        try:
            with open(self.paths.checkpoints_index, "rb") as handle:
                for raw in handle:
                    try:
                        record = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and record.get("kind") == "final":
                        return True
        except FileNotFoundError:
            pass
        return False

    def _failure(self, name: str, reason: str, code: int | None = None) -> Outcome:
        tail: str | None = None
        try:
            lines, _, _ = tail_lines(self.paths.log(name), FAILURE_TAIL_LINES)
            tail = redact_text("\n".join(lines))
        except OSError:
            pass
        return Outcome("failed", reason, component=name, exit_code=code, log_tail=tail)

    def _stop_outcome(self) -> Outcome:
        return Outcome("stopped", "stopped on request")

    # -- finishing -----------------------------------------------------------------------------

    def _finish(self, outcome: Outcome) -> None:
        now = time.time()
        if outcome.status == "failed":
            # Recorded before the others are stopped so a reader sees the cause at once.
            self.registry.transition(
                self.run_id, "failed", outcome.reason, failed_component=outcome.component,
                exit_code=outcome.exit_code, log_tail=outcome.log_tail, ended_at=now,
            )
            self.say(f"run failed: {outcome.reason}")
        elif outcome.status == "stopped":
            self.registry.transition(self.run_id, "stopping", "stop requested", from_states=("starting", "running"))
        left = self._end_components()
        write_stall(self.paths.stall, None)  # a stall is a running run's state; the outcome says the rest
        step = latest_step(self.paths.metrics)
        self.registry.update_run(self.run_id, step=step)
        if outcome.status != "failed":
            reason = outcome.reason if not left else f"{outcome.reason}; pids {left} survived SIGKILL"
            self.registry.transition(self.run_id, outcome.status, reason, ended_at=time.time())
            self.say(f"run {outcome.status}: {reason}")

    def _end_components(self) -> list[int]:
        self._end_launched()  # spawned from the plan, but never taken over (the supervisor failed first)
        trees = [(r.process.pid, r.start_time) for r in self.running.values()]
        own = {r.process.pid for r in self.running.values()}

        def reap() -> None:
            for current in self.running.values():
                current.process.poll()
            reap_adopted(own)

        # A component may need longer to end well (the tinker trainer releases its adapter).
        grace = max([STOP_GRACE, *(r.spec.stop_grace for r in self.running.values())])
        left = terminate_trees(trees, grace=grace, reap=reap) if trees else []
        # Then the orphans adopted from the components' trees (see become_subreaper). They are
        # not signalled with the components: a component's helpers (W&B's) must outlive it.
        orphans = [(p.pid, p.start_time) for p in descendants(os.getpid()) if p.pid not in own]
        if orphans:
            left += terminate_trees(orphans, grace=0.5, reap=reap)
        for name, current in self.running.items():
            if current.exit_code is None:
                code = current.process.poll()
                current.exit_code = code
                with contextlib.suppress(RunError):  # recorded if the disk allows; ending them matters more
                    self.registry.set_component(self.run_id, name, state="stopped", exit_code=code)
        if left:
            self.say(f"processes still alive after SIGKILL: {left}")
        return left


def supervise(paths: RunPaths, launched: Launched | None = None) -> int:
    """Supervise the run at ``paths`` (its entry point is ``runs.launch.main``)."""
    registry = Registry(paths.state)
    try:
        if launched is None:
            return Supervisor(paths, registry).run()
        return Supervisor(paths, registry, _lifeline=launched.lifeline, _launched=launched).run()
    finally:
        registry.close()
