"""Free space on the disk that holds the state directory, and what to say when it runs out.

A full disk must read as a full disk: which path, how much is free, what to do. Starting a run
needs room for its logs, metrics and checkpoints, so starts are refused below a floor the
operator sets with ``HERMES_RL_MIN_FREE_MB`` (default 200 MB; 0 turns the check off).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

MIN_FREE_VARIABLE = "HERMES_RL_MIN_FREE_MB"
DEFAULT_MIN_FREE_MB = 200.0


def min_free_bytes() -> int:
    raw = os.environ.get(MIN_FREE_VARIABLE, "").strip()
    try:
        megabytes = float(raw) if raw else DEFAULT_MIN_FREE_MB
    except ValueError:
        megabytes = DEFAULT_MIN_FREE_MB  # an operator's typo keeps the default, never disables the check
    return int(max(0.0, megabytes) * 1024 * 1024)


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the filesystem of ``path`` (None if unknown)."""
    for candidate in (Path(path), *Path(path).parents):
        try:
            stat = os.statvfs(candidate)
        except OSError:
            continue
        return stat.f_bavail * stat.f_frsize
    return None


def human(size: int | None) -> str:
    if size is None:
        return "an unknown amount"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def below_floor(path: Path) -> bool:
    floor = min_free_bytes()
    free = free_bytes(path)
    return floor > 0 and free is not None and free < floor


def is_out_of_space(exc: BaseException) -> bool:
    """An OSError or SQLite error that means the disk (or the user's quota) is full."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return getattr(exc, "sqlite_errorname", None) == "SQLITE_FULL"


def disk_full_message(path: Path, what: str) -> str:
    return (
        f"{what}: the disk holding {path} is full ({human(free_bytes(path))} free); nothing was changed. "
        "Free some space there (old runs' checkpoints are under runs/*/checkpoints) and try again."
    )


def floor_message(path: Path) -> str:
    return (
        f"the disk holding {path} has {human(free_bytes(path))} free, below the {human(min_free_bytes())} a run needs "
        f"for its logs, metrics and checkpoints; nothing was started. Free some space there (old runs' checkpoints "
        f"are under runs/*/checkpoints), or an operator can lower the floor with {MIN_FREE_VARIABLE}."
    )
