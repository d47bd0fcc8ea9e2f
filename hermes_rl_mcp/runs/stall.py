"""Noticing a run that has stopped making progress, and which component has gone quiet.

The measure of progress is the training step in ``metrics.jsonl``. Once the run is ``running``
its step must advance within ``quiet_after`` seconds, or the run is shown as stalled; within
``fail_after`` seconds, or it fails. The first step after start-up may take longer (a real model's
first sampling and compile), so until it arrives both limits are ``FIRST_STEP_FACTOR`` times longer.

Which component is to blame is read from the processes themselves: one stopped by a signal
(state ``T``), or one whose CPU time has not grown for a while. A component waiting on a frozen
peer is usually quiet too; a stopped one is named first, then the longest quiet.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_rl_mcp.runs.procs import ProcStat
from hermes_rl_mcp.runs.tail import json_object, read_if_present

FIRST_STEP_FACTOR = 2.0
QUIET_VARIABLE = "HERMES_RL_STALL_AFTER_S"
FAIL_VARIABLE = "HERMES_RL_STALL_FAIL_S"


@dataclass(frozen=True)
class StallLimits:
    quiet_after: float
    fail_after: float

    @classmethod
    def of(cls, backend: Any, environ: Any = None) -> StallLimits:
        """The backend's defaults, each replaced by the operator's variable when that is a positive number."""
        source = os.environ if environ is None else environ
        quiet = _seconds(source.get(QUIET_VARIABLE)) or float(getattr(backend, "stall_after", 60.0))
        fail = _seconds(source.get(FAIL_VARIABLE)) or float(getattr(backend, "stall_fail", 600.0))
        return cls(quiet_after=quiet, fail_after=max(fail, quiet))


def _seconds(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw and raw.strip() else None
    except ValueError:
        return None  # an operator's typo falls back to the default rather than breaking runs
    return value if value is not None and 0 < value < 1e9 else None


@dataclass
class _Activity:
    cpu_ticks: int
    changed_at: float


@dataclass
class StallWatch:
    limits: StallLimits
    started_at: float  # when the run became running
    step: int = 0
    advanced_at: float | None = None  # None until the first step after start
    _activity: dict[str, _Activity] = field(default_factory=dict)

    def observe(self, now: float, step: int, processes: dict[str, ProcStat | None]) -> dict[str, Any] | None:
        """Feed the latest step and each running component's process; returns the stall, or None."""
        for name, stat in processes.items():
            if stat is None:
                continue
            seen = self._activity.get(name)
            if seen is None or stat.cpu_ticks != seen.cpu_ticks:
                self._activity[name] = _Activity(stat.cpu_ticks, now)
        if step > self.step:
            self.step, self.advanced_at = step, now
            return None
        since = self.advanced_at if self.advanced_at is not None else self.started_at
        factor = 1.0 if self.advanced_at is not None else FIRST_STEP_FACTOR
        quiet_after, fail_after = self.limits.quiet_after * factor, self.limits.fail_after * factor
        waited = now - since
        if waited < quiet_after:
            return None
        quiet = []
        for name, stat in processes.items():
            if stat is None:
                continue
            stopped = stat.state in ("T", "t")
            quiet_for = now - self._activity[name].changed_at
            if stopped or quiet_for >= waited / 2:
                quiet.append({"component": name, "quiet_seconds": round(quiet_for, 1), "stopped_by_signal": stopped})
        quiet.sort(key=lambda q: (not q["stopped_by_signal"], -q["quiet_seconds"]))
        return {
            "since": round(since, 3),
            "step": self.step,
            "seconds": round(waited, 1),
            "quiet_after_seconds": quiet_after,
            "fail_after_seconds": fail_after,
            "failing": waited >= fail_after,
            "quiet_components": quiet,
        }


def describe(stall: dict[str, Any]) -> str:
    """One sentence for a reason or a log line."""
    where = "before the first step" if stall["step"] == 0 else f"stuck at step {stall['step']}"
    quiet = stall["quiet_components"]
    parts = [
        f"{q['component']} " + ("is stopped by a signal" if q["stopped_by_signal"] else f"has used no CPU for {q['quiet_seconds']:.0f} s")
        for q in quiet
    ]
    blame = "; ".join(parts) if parts else "every component is busy"
    return f"no training step for {stall['seconds']:.0f} s ({where}): {blame}"


def write_stall(path: Path, stall: dict[str, Any] | None) -> None:
    """The supervisor's view for status: written atomically while stalled, removed once steps advance."""
    if stall is None:
        try:
            path.unlink()
        except OSError:
            pass
        return
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(json.dumps(stall, separators=(",", ":")), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        pass  # a full disk: status goes without the report, the stall limits still apply


def read_stall(path: Path) -> dict[str, Any] | None:
    raw = read_if_present(path)
    return None if raw is None else json_object(raw)
