"""How fast a run notices its faults: a supervisor killed with no server running, and a
trainer frozen by SIGSTOP (stall limits 2 s and 8 s, set the way an operator would).

    python bench/bench_faults.py

Real local runs (reverse_text) in a temporary state directory; prints seconds from the fault
to every process of the run gone, and to the stall shown and the run failed.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from test_run_faults import alive, local_run, run_processes  # noqa: E402 - the tests' own helpers


def wait(run_id: str, state: Path, done, timeout: float):
    from hermes_rl_mcp.runs import check_status

    deadline = time.monotonic() + timeout
    while not done(status := check_status(run_id, state=state)):
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up: {status.status} {status.reason}")
        time.sleep(0.02)
    return status


def orphans(state: Path) -> None:
    from hermes_rl_mcp.runs import check_status, start_run

    run_id = start_run(local_run(100_000, use_wandb=True), state=state).run_id
    status = wait(run_id, state, lambda s: s.step >= 3 and len(run_processes(s)) >= 7, 90)
    everything = run_processes(status)
    began = time.monotonic()
    os.kill(status.supervisor_pid, signal.SIGKILL)
    while any(alive(pid) for pid in everything):
        time.sleep(0.01)
    gone = time.monotonic() - began
    print(f"supervisor SIGKILLed, no server: all {len(everything)} processes of the run gone after {gone:.2f} s")
    print(f"  then status says: {check_status(run_id, state=state).reason}")


def frozen(state: Path) -> None:
    from hermes_rl_mcp.runs import start_run

    os.environ["HERMES_RL_STALL_AFTER_S"], os.environ["HERMES_RL_STALL_FAIL_S"] = "2", "8"
    run_id = start_run(local_run(100_000, use_wandb=False), state=state).run_id
    status = wait(run_id, state, lambda s: s.status == "running" and s.step >= 2, 90)
    everything = run_processes(status)
    began = time.monotonic()
    os.kill(status.components["trainer"].pid, signal.SIGSTOP)
    stalled = wait(run_id, state, lambda s: s.stall is not None, 20)
    shown = time.monotonic() - began
    failed = wait(run_id, state, lambda s: s.status == "failed", 30)
    ended = time.monotonic() - began
    while any(alive(pid) for pid in everything):
        time.sleep(0.01)
    print(f"trainer SIGSTOPped (limits 2 s / 8 s): stall shown after {shown:.2f} s, run failed after {ended:.2f} s, "
          f"every process gone after {time.monotonic() - began:.2f} s")
    print(f"  stall: {stalled.stall.summary}\n  reason: {failed.reason}")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HERMES_RL_HOME"] = tmp
        for name in ("WANDB_API_KEY", "WANDB_BASE_URL"):
            os.environ.pop(name, None)
        orphans(Path(tmp))
        frozen(Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
