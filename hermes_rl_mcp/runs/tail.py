"""Reading the end of append-only files without reading the rest of them.

The cost depends on the number and length of the lines asked for, never on the file's size:
blocks are read backwards from the end until enough line breaks are found or a byte budget is
spent (a log made of one enormous line must not be read whole either).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

BLOCK = 64 * 1024
MAX_TAIL_BYTES = 8 * 1024 * 1024


def tail_lines(path: Path, lines: int, *, max_bytes: int = MAX_TAIL_BYTES) -> tuple[list[str], int, bool]:
    """The last ``lines`` lines of ``path``, its size, and whether earlier content was left out."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        end = size
        chunks: list[bytes] = []
        newlines = 0
        read = 0
        # One more line break than lines wanted marks the start of the first wanted line; a
        # trailing line break ends the last line rather than starting an empty one.
        needed = lines + 1
        while end > 0 and newlines < needed and read < max_bytes:
            start = max(0, end - BLOCK)
            handle.seek(start)
            chunk = handle.read(end - start)
            chunks.append(chunk)
            newlines += chunk.count(b"\n")
            read += len(chunk)
            end = start
    data = b"".join(reversed(chunks))
    text = data.decode("utf-8", "replace")
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    truncated = end > 0 or len(parts) > lines
    if end > 0 and parts:
        parts = parts[1:]  # the first piece may be the end of a longer line
    return parts[-lines:] if lines > 0 else [], size, truncated


def tail_records(path: Path, *, max_bytes: int = BLOCK) -> list[dict[str, Any]]:
    """JSON object lines from the last ``max_bytes`` of a JSONL file, oldest first."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(0, size - max_bytes)
            handle.seek(start)
            data = handle.read(size - start)
    except FileNotFoundError:
        return []
    raw_lines = data.split(b"\n")
    if start > 0:
        raw_lines = raw_lines[1:]  # cut mid-line
    records: list[dict[str, Any]] = []
    for raw in raw_lines:
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            continue  # a torn line being written right now
        if isinstance(value, dict):
            records.append(value)
    return records


def latest_step(path: Path) -> int:
    """The highest integer ``step`` among the last lines of a metrics file (0 when none)."""
    steps = [
        r["step"] for r in tail_records(path) if isinstance(r.get("step"), int) and not isinstance(r.get("step"), bool)
    ]
    return max(steps, default=0)


def read_if_present(path: Path) -> bytes | None:
    """A small file's bytes, or None when it is absent. Status reads such files on every check,
    and usually none is there: a plain descriptor then costs half of what a pathlib read does."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, BLOCK):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def json_object(raw: bytes) -> dict[str, Any] | None:
    """The JSON object in ``raw``; None for blank text, invalid JSON or any other JSON value."""
    if not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
