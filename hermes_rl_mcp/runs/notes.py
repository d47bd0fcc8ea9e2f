"""Notes a run's components leave for status and results: ``notes.jsonl`` in the run directory.

One JSON object per line (``time``, ``component``, ``note``), each written with a single
``write`` in append mode, so notes from several processes never interleave. For what a user
should know that is neither a failure nor a metric, such as W&B mirroring offline.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from hermes_rl_mcp.runs.tail import read_if_present

MAX_NOTES = 20  # a component repeating itself must not swell every status answer


def append_note(path: Path, component: str, note: str) -> None:
    line = json.dumps({"time": round(time.time(), 3), "component": component, "note": note}, separators=(",", ":")) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_notes(path: Path) -> list[str]:
    """Each note as ``"<component>: <note>"``, oldest first; none when the file is absent."""
    raw = read_if_present(path)
    if raw is None:
        return []
    notes: list[str] = []
    for line in raw.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("note"), str):
            notes.append(f"{record.get('component', '?')}: {record['note']}")
    return notes[:MAX_NOTES]

