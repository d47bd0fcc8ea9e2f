"""Append-only metrics for a run: ``metrics.jsonl`` first, W&B as a mirror.

Both the trainer and the environment process append to the same file; each record is written
with a single ``write`` on a file opened in append mode, so lines from the two never interleave.

W&B runs in a thread of its own (``_Mirror``): training hands it each record and never waits on
it. It is imported there (importing it takes seconds) and runs offline unless ``WANDB_API_KEY``
is set. Online, its server must first answer a plain request within ``REACH_TIMEOUT``, and W&B's
own start-up is bounded by ``ONLINE_INIT_TIMEOUT``; a server that is unreachable, silent or slow
turns the mirror offline, with a note in the run's ``notes.jsonl`` (status and results show it).
A W&B failure never stops training.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import queue
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from hermes_rl_mcp.runs.notes import append_note

DEFAULT_WANDB_URL = "https://api.wandb.ai"
REACH_TIMEOUT = 5.0  # seconds for W&B's server to answer anything at all
ONLINE_INIT_TIMEOUT = 20.0  # seconds for an online wandb.init once the server answered
# close() waits this long for the mirror to finish; metrics.jsonl already holds every record.
CLOSE_TIMEOUT = 30.0


class MetricsLog:
    def __init__(
        self,
        path: Path,
        *,
        use_wandb: bool = False,
        wandb_dir: Path | None = None,
        wandb_name: str | None = None,
        wandb_project: str = "hermes-rl",
        wandb_group: str | None = None,
        component: str = "metrics",
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._mirror: _Mirror | None = None
        if use_wandb:
            self._mirror = _Mirror(
                wandb_dir=Path(wandb_dir) if wandb_dir else self.path.parent / "wandb",
                init_args={"project": wandb_project, "group": wandb_group, "name": wandb_name},
                notes=self.path.parent / "notes.jsonl",
                component=component,
            )

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        record: dict[str, Any] = {"step": int(step), "time": round(time.time(), 3)}
        for key, value in metrics.items():
            if isinstance(value, float) and not math.isfinite(value):
                value = None  # JSON has no NaN; a reader must never choke on a line
            record[key] = value
        line = json.dumps(record, separators=(",", ":")) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        if self._mirror is not None:
            self._mirror.put(int(step), dict(metrics))

    def close(self, *, hurry: bool = False) -> None:
        """Finish the W&B run and stop W&B's service process now, while this process is in
        charge of its exit (left to interpreter exit, the service can be ended first by the
        run's supervisor, and W&B then prints a traceback into the component's log).

        ``hurry`` (the component is being stopped): a mirror that has not begun W&B's start-up
        yet never begins it, so the component ends within its supervisor's grace period.
        """
        if self._mirror is not None:
            self._mirror.close(CLOSE_TIMEOUT, hurry=hurry)
            self._mirror = None


class _Mirror:
    """W&B in a daemon thread, started with the first record, fed through a queue."""

    def __init__(self, *, wandb_dir: Path, init_args: dict[str, Any], notes: Path, component: str) -> None:
        self._dir = wandb_dir
        self._init_args = init_args
        self._notes = notes
        self._component = component
        self._records: queue.SimpleQueue[tuple[int, dict[str, Any]] | None] = queue.SimpleQueue()
        # Started at once: the reachability check waits on the network, not the CPU, so it
        # overlaps the component's start-up; W&B itself is imported only with the first record.
        self._lock = threading.Lock()
        self._started = False  # W&B's start-up has begun: a close must wait for its finish
        self._abandoned = False  # set by a hurried close before W&B's start-up began
        self._ended = False  # W&B has been finished and torn down (or that is under way)
        self._thread = threading.Thread(target=self._run, name="wandb-mirror", daemon=True)
        self._thread.start()

    def put(self, step: int, metrics: dict[str, Any]) -> None:
        self._records.put((step, metrics))

    def close(self, timeout: float, *, hurry: bool = False) -> None:
        self._records.put(None)
        with self._lock:
            if hurry and not self._started:
                self._abandoned = True  # it may still be checking the server or importing W&B: not waited for
                return
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._note(f"W&B did not finish within {timeout:.0f} s; left behind (metrics.jsonl holds every record)")

    def _note(self, text: str) -> None:
        print(f"W&B mirror: {text}", file=sys.stderr, flush=True)
        try:
            append_note(self._notes, self._component, text)
        except OSError:
            pass

    def _run(self) -> None:
        online = bool(os.environ.get("WANDB_API_KEY"))
        base_url = (os.environ.get("WANDB_BASE_URL") or DEFAULT_WANDB_URL).rstrip("/")
        problem = unreachable(base_url, REACH_TIMEOUT) if online else None
        item = self._records.get()
        if item is None:
            return  # closed before the first record: W&B was never needed
        try:
            run = self._start(online, base_url, problem)
            if run is None:
                return  # stopped before W&B started: metrics.jsonl holds every record
            # Registered after W&B's own exit hook, so it runs first (atexit is last in, first
            # out): a component that exits without closing the mirror (a second signal during
            # its stop) still ends W&B quietly.
            atexit.register(self._end, None)
        except Exception as exc:  # noqa: BLE001 - the mirror must never stop training
            self._note(f"W&B mirror disabled: {type(exc).__name__}: {exc}")
            run = None
        while item is not None:
            if run is not None:  # else drain: the records are in metrics.jsonl
                try:
                    run.log(item[1], step=item[0])
                except Exception as exc:  # noqa: BLE001
                    self._note(f"W&B mirror disabled: {type(exc).__name__}: {exc}")
                    run = None
            item = self._records.get()
        if self._started:
            self._end(run)

    def _end(self, run: Any) -> None:
        """Finish the run and end W&B's helper process, each on its own: the teardown also
        withdraws W&B's exit hook, which otherwise prints a traceback at the component's exit
        when the helper has already died (killed, or ended with the component's process tree)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        import wandb

        steps = [("finishing the run", run.finish)] if run is not None else []
        problems = []
        for what, action in [*steps, ("teardown", wandb.teardown)]:
            try:
                action()
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - W&B's errors differ by version
                problems.append(f"{what}: {type(exc).__name__}: {exc}".rstrip(": "))
        if problems:
            self._note(
                "W&B's helper process did not end the run cleanly (" + "; ".join(problems)
                + "); metrics.jsonl holds every record"
            )

    def _start(self, online: bool, base_url: str, problem: str | None) -> Any:
        if not online or problem is not None:
            _offline_process()
        import wandb  # slow import, deliberately late and off the training thread

        _no_sdk_telemetry()

        with self._lock:  # a hurried close either comes before this or waits for W&B to finish
            if self._abandoned:
                return None
            self._started = True
        self._dir.mkdir(parents=True, exist_ok=True)
        if not online:
            return self._init(wandb, "offline")
        if problem is None:
            try:
                return self._init(wandb, "online")
            except Exception as exc:  # noqa: BLE001 - W&B's errors differ by version
                problem = f"did not start an online run within {ONLINE_INIT_TIMEOUT:.0f} s ({type(exc).__name__})"
                wandb.teardown()  # its process-wide state was made for online use
                _offline_process()
        self._note(
            f"W&B server {base_url} {problem}: mirroring offline to {self._dir} "
            "(upload later with the wandb sync command in the results)"
        )
        return self._init(wandb, "offline")

    def _init(self, wandb: Any, mode: str) -> Any:
        return wandb.init(
            **self._init_args,
            dir=str(self._dir),
            mode=mode,
            reinit="create_new",
            settings=wandb.Settings(silent=True, console="off", init_timeout=ONLINE_INIT_TIMEOUT),
        )


def _offline_process() -> None:
    """Make W&B offline for the whole process, not only for the run: its process-wide
    settings otherwise send its own telemetry to the server at exit, and a silent server then
    holds the component's exit for W&B's 10 s request timeout."""
    os.environ["WANDB_MODE"] = "offline"


def _no_sdk_telemetry() -> None:
    """Turn off the W&B SDK's reports about itself (not the run's metrics), where this W&B has
    them: at exit they are sent to the W&B server, and a server that accepts and never answers
    then holds the component's exit for W&B's 10 s request timeout, once per exporter."""
    try:
        from wandb.analytics.opentelemetry import opentelemetry_proxy

        opentelemetry_proxy.disable()
    except (ImportError, AttributeError):
        pass


def unreachable(base_url: str, timeout: float) -> str | None:
    """Why W&B's server at ``base_url`` cannot be used now, or None when it answers at all."""
    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=timeout):  # noqa: S310 - the operator's W&B server
            return None
    except urllib.error.HTTPError:
        return None  # it answered: any status will do, W&B itself judges the rest
    except (TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return f"did not answer within {timeout:.0f} s"
        return f"could not be reached ({reason})"


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Every well-formed record of a metrics file; a torn last line is skipped."""
    records: list[dict[str, Any]] = []
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    records.append(value)
    except FileNotFoundError:
        pass
    return records
