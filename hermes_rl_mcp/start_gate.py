"""Start gate: a component waits for the one before it, after paying for its own imports.

A run's supervisor spawns its three components together so that their slow imports overlap,
and gives the trainer and the environment the health URL of the component before them in
``HERMES_RL_START_AFTER``. Each calls ``wait_for_predecessor()`` once its imports are done and
before it serves or registers, so the run still comes up in order (api, then trainer, then env)
without paying for three interpreter start-ups one after another. Without the variable (a person
starting the components by hand) it returns at once.
"""

from __future__ import annotations

import os
import sys
import time

from hermes_rl_mcp.runs.probe import http_ok

GATE_VARIABLE = "HERMES_RL_START_AFTER"
GATE_TIMEOUT_S = 300.0


def wait_for_predecessor(timeout: float = GATE_TIMEOUT_S) -> None:
    url = os.environ.get(GATE_VARIABLE)
    if not url:
        return
    deadline = time.monotonic() + timeout
    interval = 0.02
    while not http_ok(url):
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up after {timeout:.0f} s waiting for {url} (the component before this one) to answer")
        time.sleep(interval)
        interval = min(0.2, interval * 1.5)
    print(f"start gate: {url} answered; starting", file=sys.stderr, flush=True)
