"""Run states, component names and log URIs: plain constants, cheap to import (no pydantic).

The supervisor imports only pydantic-free modules so that a run reaches ``running`` quickly.
"""

from __future__ import annotations

from typing import Literal, get_args

RunState = Literal["starting", "running", "stopping", "completed", "failed", "stopped"]
RUN_STATES: tuple[str, ...] = get_args(RunState)
TERMINAL_STATES: frozenset[str] = frozenset({"completed", "failed", "stopped"})
ACTIVE_STATES: tuple[str, ...] = ("starting", "running", "stopping")

COMPONENTS: tuple[str, ...] = ("api", "trainer", "env")
LOG_COMPONENTS: tuple[str, ...] = ("api", "trainer", "env", "supervisor")

# Metrics check_status reports, in this order.
STATUS_METRICS: tuple[str, ...] = (
    "train/percent_correct",
    "eval/percent_correct",
    "reward/mean",
    "train/loss",
)


def log_uri(run_id: str, component: str) -> str:
    return f"rl://runs/{run_id}/logs/{component}"
