"""Run ids: short, sortable by creation time, safe as a directory name and in a URI.

Every id that comes from a user is checked against ``RUN_ID_PATTERN`` before it is used to
build a path, so no id can point outside the runs directory.
"""

from __future__ import annotations

import re
import secrets
import time

from hermes_rl_mcp.runs.errors import InvalidRunId

RUN_ID_PATTERN = re.compile(r"r-[0-9]{8}-[0-9]{4}-[0-9a-f]{6}")
RUN_ID_EXAMPLE = "r-20261130-0132-4f9a2c"


def new_run_id(now: float | None = None) -> str:
    """``r-YYYYMMDD-HHMM-xxxxxx``: UTC minute of creation plus 24 random bits."""
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime(time.time() if now is None else now))
    return f"r-{stamp}-{secrets.token_hex(3)}"


def validate_run_id(run_id: object) -> str:
    if not isinstance(run_id, str) or RUN_ID_PATTERN.fullmatch(run_id) is None:
        shown = repr(run_id) if len(repr(run_id)) <= 60 else repr(run_id)[:57] + "..."
        raise InvalidRunId(
            f"malformed run id {shown}: a run id looks like {RUN_ID_EXAMPLE!r} "
            "(r-, UTC date, hour and minute, six hex digits); list runs to see the valid ids"
        )
    return run_id
