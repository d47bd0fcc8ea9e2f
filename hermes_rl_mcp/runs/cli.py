"""Human-readable run commands: ``runs``, ``status``, ``logs``, ``stop`` (and internal ``supervise``)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from hermes_rl_mcp.runs.control import check_status, list_runs, read_log, stop_run
from hermes_rl_mcp.runs.errors import RunError
from hermes_rl_mcp.runs.models import LOG_COMPONENTS, RUN_STATES


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else "-"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m{rest % 60:02d}s" if hours else f"{rest // 60}m{rest % 60:02d}s"


def runs_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hermes-rl-mcp runs", description="List runs, newest first.")
    parser.add_argument("--status", choices=RUN_STATES, help="only runs in this status")
    args = parser.parse_args(argv)
    return _guard(lambda: _print_runs(args.status))


def _print_runs(status: str | None) -> None:
    found = list_runs(status)
    if not found.runs:
        print("no runs" + (f" with status {status}" if status else ""))
        return
    print(f"{'RUN':24} {'ENVIRONMENT':16} {'STATUS':10} {'STARTED':19} PROGRESS")
    for run in found.runs:
        total = run.total_steps if run.total_steps is not None else "?"
        print(f"{run.run_id:24} {run.environment[:16]:16} {run.status:10} {_when(run.created_at):19} {run.step}/{total}")


def status_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hermes-rl-mcp status", description="Show one run's status.")
    parser.add_argument("run_id")
    args = parser.parse_args(argv)
    return _guard(lambda: _print_status(args.run_id))


def _print_status(run_id: str) -> None:
    s = check_status(run_id)
    total = s.total_steps if s.total_steps is not None else "?"
    print(f"run        {s.run_id}  ({s.environment}, backend {s.backend})")
    print(f"status     {s.status}" + (f": {s.reason}" if s.reason else ""))
    print(f"progress   step {s.step}/{total} ({s.progress:.0%}), running {_duration(s.running_seconds)}")
    for c in s.components.values():
        detail = f"exit code {c.exit_code}" if c.exit_code is not None else (f"pid {c.pid}" if c.pid else "")
        port = f", port {c.port}" if c.port else ""
        print(f"  {c.name:8} {c.state:8} {detail}{port}")
    for name, value in s.metrics.items():
        print(f"  {name:24} {'-' if value is None else f'{value:.4g}'}")
    if s.log_tail:
        print(f"last lines of the {s.failed_component} log:")
        print(s.log_tail)
    print(f"directory  {s.run_dir}")


def logs_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hermes-rl-mcp logs", description="Print the end of a component's log.")
    parser.add_argument("run_id")
    parser.add_argument("component", choices=LOG_COMPONENTS)
    parser.add_argument("-n", "--lines", type=int, default=200, help="number of lines (default 200)")
    args = parser.parse_args(argv)

    def show() -> None:
        log = read_log(args.run_id, args.component, args.lines)
        if log.text:
            print(log.text)
        else:
            print(f"(the {args.component} log is empty)", file=sys.stderr)

    return _guard(show)


def stop_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hermes-rl-mcp stop", description="Stop a run and all its processes.")
    parser.add_argument("run_id")
    args = parser.parse_args(argv)

    def stop() -> None:
        result = stop_run(args.run_id)
        if result.changed:
            print(f"{result.run_id}: {result.status}" + (f" ({result.reason})" if result.reason else ""))
        else:
            print(f"{result.run_id} had already finished: {result.status}" + (f" ({result.reason})" if result.reason else ""))

    return _guard(stop)


def _guard(action: Callable[[], None]) -> int:
    try:
        action()
    except RunError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
