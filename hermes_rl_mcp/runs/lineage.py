"""The link from a resumed run to the run it started from, kept in the resumed run's directory.

``resumed_from.json`` is written once, before the run's supervisor starts, and only read after;
it repeats ``run.resumed_from`` of the run's config so that listings need not parse every config.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hermes_rl_mcp.runs.file_memo import while_unchanged
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.models import ResumedFrom


def record_lineage(paths: RunPaths, resumed_from: dict[str, Any]) -> None:
    point = ResumedFrom.model_validate(resumed_from)
    temporary = paths.lineage.with_name(f".{paths.lineage.name}.{os.getpid()}.tmp")
    temporary.write_text(point.model_dump_json(), encoding="utf-8")
    os.replace(temporary, paths.lineage)


def read_lineage(paths: RunPaths) -> ResumedFrom | None:
    """The parent of a resumed run; None for a run started afresh (or an unreadable record)."""
    return _read_lineage_file(paths.lineage)


@while_unchanged()
def _read_lineage_file(path: Path) -> ResumedFrom | None:
    try:
        return ResumedFrom.model_validate(json.loads(path.read_bytes()))
    except (OSError, ValueError, ValidationError):
        return None  # absent, or unreadable
