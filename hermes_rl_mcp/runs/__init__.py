"""Run control: the registry, the detached per-run supervisor, status, stop, results and logs.

Plain functions returning pydantic models; expected failures raise ``RunError`` subclasses whose
message tells the user what to do. Nothing here imports ``mcp``.

Names are loaded on first use: the supervisor imports submodules of this package and must not
pay for pydantic and the control functions it never calls.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_rl_mcp.runs.control import (
        check_status,
        get_results,
        kept_results,
        list_runs,
        read_log,
        run_events,
        start_run,
        stop_run,
    )
    from hermes_rl_mcp.runs.errors import (
        BackendUnavailable,
        InvalidArgument,
        InvalidRunConfig,
        InvalidRunId,
        LogNotAvailable,
        RunError,
        UnknownRun,
    )
    from hermes_rl_mcp.runs.ids import RUN_ID_PATTERN, validate_run_id
    from hermes_rl_mcp.runs.models import (
        BestMetric,
        CheckpointInfo,
        ComponentStatus,
        LogText,
        MetricPoint,
        RunEvent,
        RunList,
        RunResults,
        RunStarted,
        RunStatus,
        RunSummary,
        StopResult,
        WandbInfo,
    )
    from hermes_rl_mcp.runs.redact import REDACTED, redact_data, redact_text
    from hermes_rl_mcp.runs.states import LOG_COMPONENTS, RUN_STATES, TERMINAL_STATES, log_uri

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ["check_status", "get_results", "kept_results", "list_runs", "read_log", "run_events", "start_run", "stop_run"],
        "control",
    ),
    **dict.fromkeys(
        ["BackendUnavailable", "InvalidArgument", "InvalidRunConfig", "InvalidRunId", "LogNotAvailable", "RunError", "UnknownRun"],
        "errors",
    ),
    **dict.fromkeys(["RUN_ID_PATTERN", "validate_run_id"], "ids"),
    **dict.fromkeys(
        [
            "BestMetric", "CheckpointInfo", "ComponentStatus", "LogText", "MetricPoint", "RunEvent", "RunList",
            "RunResults", "RunStarted", "RunStatus", "RunSummary", "StopResult", "WandbInfo",
        ],
        "models",
    ),
    **dict.fromkeys(["REDACTED", "redact_data", "redact_text"], "redact"),
    **dict.fromkeys(["LOG_COMPONENTS", "RUN_STATES", "TERMINAL_STATES", "log_uri"], "states"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
