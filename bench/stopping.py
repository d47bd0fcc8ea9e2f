"""How the benchmark scripts stop: SIGTERM exits through their clean-up, and the clean-up finishes.

`timeout`, `kill` and `pkill` send SIGTERM, often twice (``pkill -f`` signals both a script and
the ``timeout`` wrapper around it, which passes its own on). The first one raises ``SystemExit``
so the script's ``finally`` blocks stop the runs it started; later ones are ignored, since a
second ``SystemExit`` raised inside ``stop_run`` would leave a run's processes going.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType


def _exit_once(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(128 + signum)


def exit_on_sigterm() -> None:
    """The first SIGTERM exits through the ``finally`` blocks; any after it is ignored."""
    signal.signal(signal.SIGTERM, _exit_once)


def stop_runs(state: Path) -> None:
    """Stop every run still going in a script's own state directory, reporting any that fails.

    All of them, not only those the script recorded: a SIGTERM that lands while ``start_run``
    is starting one leaves a run the script never heard of."""
    from hermes_rl_mcp.runs import TERMINAL_STATES, list_runs, stop_run

    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a SIGTERM now would cut the stopping short
    for run in list_runs(state=state).runs:
        if run.status in TERMINAL_STATES:
            continue
        try:
            stop_run(run.run_id, state=state)
        except Exception as exc:  # noqa: BLE001 - report and keep stopping the others
            print(f"could not stop {run.run_id}: {exc}", file=sys.stderr)
