"""Summaries of a run's ``metrics.jsonl``: latest values (cheap, for status) and results."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from hermes_rl_mcp.runs.file_memo import while_unchanged
from hermes_rl_mcp.runs.models import BestMetric, MetricPoint
from hermes_rl_mcp.runs.tail import json_object

HISTORY_POINTS = 40
# Status reads backwards from the end in blocks until every wanted metric is seen or this
# budget is spent: eval metrics are rare lines, so they may sit further back than the last block.
STATUS_SCAN_BYTES = 1024 * 1024
_BLOCK = 64 * 1024
# The trainer and the environment append to the same file, so the highest step is taken over
# the last few records rather than the very last one.
_STEP_LINES = 8
_NOT_METRICS = frozenset({"step", "time"})


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _step(record: dict[str, Any]) -> int | None:
    step = record.get("step")
    return step if isinstance(step, int) and not isinstance(step, bool) else None


@while_unchanged()
def latest_metrics(path: Path, names: tuple[str, ...]) -> tuple[int, dict[str, tuple[float, int]]]:
    """The latest step and, for each name found, its last value and the step it was logged at.

    Lines are scanned from the end; only the newest few and those mentioning a metric still
    missing are parsed as JSON, so the cost stays flat however long the run has been going.
    """
    found: dict[str, tuple[float, int]] = {}
    top_step = 0
    wanted = {name: json.dumps(name).encode() for name in names}
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return 0, found
    with handle:
        end = os.fstat(handle.fileno()).st_size
        carry = b""
        scanned = 0
        steps_seen = 0
        while end > 0 and scanned < STATUS_SCAN_BYTES and (len(found) < len(names) or steps_seen < _STEP_LINES):
            start = max(0, end - _BLOCK)
            handle.seek(start)
            data = handle.read(end - start) + carry
            scanned += end - start
            pieces = data.split(b"\n")
            # The first piece may continue in the block before; keep it for the next round.
            carry = pieces[0] if start > 0 else b""
            complete = pieces[1:] if start > 0 else pieces
            for raw in reversed(complete):
                missing = [name for name in wanted if name not in found and wanted[name] in raw]
                if not missing and steps_seen >= _STEP_LINES:
                    continue
                record = json_object(raw)
                step = _step(record) if record is not None else None
                if record is None or step is None:
                    continue
                steps_seen += 1
                top_step = max(top_step, step)
                for name in missing:
                    value = _number(record.get(name))
                    if value is not None:
                        found[name] = (value, step)
                if len(found) == len(names) and steps_seen >= _STEP_LINES:
                    break
            end = start
    return top_step, found




def metric_goal(name: str) -> str:
    """Whether higher or lower is better for a metric, from its name."""
    lowered = name.lower()
    if any(word in lowered for word in ("loss", "kl", "time", "length", "dropped", "error")):
        return "min"
    return "max"


def _ranked(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in ("percent_correct", "reward", "return", "loss", "accuracy", "success"))


def summarize(records: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, BestMetric], dict[str, list[MetricPoint]]]:
    """Final value of each metric, best of the ranked ones, and a downsampled history of each."""
    series: dict[str, list[MetricPoint]] = {}
    for record in records:
        step = _step(record)
        if step is None:
            continue
        for name, raw in record.items():
            if name in _NOT_METRICS:
                continue
            value = _number(raw)
            if value is not None:
                series.setdefault(name, []).append(MetricPoint(step=step, value=value))
    final = {name: points[-1].value for name, points in series.items()}
    best: dict[str, BestMetric] = {}
    for name, points in series.items():
        if not _ranked(name):
            continue
        goal = metric_goal(name)
        chosen = min(points, key=lambda p: p.value) if goal == "min" else max(points, key=lambda p: p.value)
        best[name] = BestMetric(value=chosen.value, step=chosen.step, goal=goal)  # type: ignore[arg-type]
    history = {name: downsample(points, HISTORY_POINTS) for name, points in sorted(series.items())}
    return final, best, history


def downsample(points: list[MetricPoint], limit: int) -> list[MetricPoint]:
    """At most ``limit`` points evenly spread over the series, first and last always kept."""
    if len(points) <= limit:
        return list(points)
    if limit == 1:
        return [points[-1]]
    last = len(points) - 1
    indices = sorted({round(i * last / (limit - 1)) for i in range(limit)})
    return [points[i] for i in indices]
