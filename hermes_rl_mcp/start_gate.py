"""Start gate: a component waits for the one before it only where it first needs it.

A run's supervisor spawns its three components together, and gives the trainer and the
environment the health URL of the component before them in ``HERMES_RL_START_AFTER``. Each does
all it can on its own first (imports; the trainer builds its learner and serves its policy
endpoint, the environment runs its ``setup()``) and calls ``wait_for_predecessor()`` just before
it needs the one before it (the trainer to register with the API, the environment to start
collecting). So the start-ups overlap, and the run still depends on its components in order
(api, then trainer, then env). Without the variable (a person starting the components by hand)
it returns at once.
"""

from __future__ import annotations

import os
import sys
import time

GATE_VARIABLE = "HERMES_RL_START_AFTER"
GATE_TIMEOUT_S = 300.0
# A refused connection on loopback costs well under a millisecond: poll often, so a component
# starts within a few tens of milliseconds of the one before it.
POLL_S = 0.02


def wait_for_predecessor(timeout: float = GATE_TIMEOUT_S) -> None:
    url = os.environ.get(GATE_VARIABLE)
    if not url:
        return
    # Here, not at the top: the supervisor's entry point imports this module for the variable's
    # name, before it spawns the components, and must not wait for http.client.
    from hermes_rl_mcp.runs.probe import http_ok

    deadline = time.monotonic() + timeout
    while not http_ok(url):
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up after {timeout:.0f} s waiting for {url} (the component before this one) to answer")
        time.sleep(POLL_S)
    print(f"start gate: {url} answered; starting", file=sys.stderr, flush=True)
