"""Child process: check one environment the way a run meets it, reporting as JSON lines.

Run as ``python -m hermes_rl_mcp.core.check_child FILE CLASS GROUPS``. Like introspection, it
imports untrusted code, so the parent runs it in its own session under a deadline with no
secrets in its environment. Stdout is swapped for stderr before the import, so nothing the
environment prints can pass for an answer; the answer lines go to a duplicate of the real
stdout. Each stage is announced before it starts, so when the parent has to end the child at
its deadline it knows which stage hung; on SIGUSR1 the child dumps every thread's stack to
stderr first, which gives the line it hung on.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

STACK_DUMP_SIGNAL = signal.SIGUSR1


class Reporter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def emit(self, **record: Any) -> None:
        self.out.write(json.dumps(record, default=repr) + "\n")
        self.out.flush()


def check(file: Path, class_name: str, groups: int, report: Reporter) -> None:
    from hermes_rl_mcp.core.dry_run import error_lines

    report.emit(stage="config")
    try:
        from hermes_rl_mcp.core.introspect import describe

        described = describe(file, class_name)
    except BaseException as exc:  # noqa: BLE001 - untrusted code: every failure is a finding
        line, tail = error_lines(exc, file)
        report.emit(failed="config", error=f"{type(exc).__name__}: {exc}"[:500], line=line, traceback=tail)
        return
    report.emit(config={"config_class": described["config_class"], "fields": sorted(described["fields"])})
    env_cls = getattr(sys.modules[f"hermes_rl_env_{file.stem}"], class_name)
    try:
        outcomes = _dry_run(env_cls, groups, report)
    except BaseException as exc:  # noqa: BLE001
        line, tail = error_lines(exc, file)
        report.emit(failed="dry_run", error=f"{type(exc).__name__}: {exc}"[:500], line=line, traceback=tail)
        return
    shown = []
    for outcome in outcomes:
        entry = outcome.as_dict()
        if outcome.error is not None:
            entry["line"], entry["traceback"] = error_lines(outcome.error, file)
        shown.append(entry)
    report.emit(groups=shown)


def _dry_run(env_cls: type, groups: int, report: Reporter) -> list:
    import anyio

    from hermes_rl_mcp.core.dry_run import dry_run_groups, serve_initial_policy
    from hermes_rl_mcp.trainer.tokenizer import CharTokenizer

    async def run() -> list:
        report.emit(stage="policy")
        async with serve_initial_policy() as policy_url:
            return await dry_run_groups(
                env_cls, policy_url, groups, decode=CharTokenizer().decode, on_stage=lambda stage: report.emit(stage=stage)
            )

    return anyio.run(run)


def main() -> int:
    real_stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the environment prints lands on stderr, never among the answer lines
    sys.stdout = sys.stderr
    faulthandler.register(STACK_DUMP_SIGNAL, file=sys.stderr, all_threads=True)
    report = Reporter(real_stdout)
    check(Path(sys.argv[1]).resolve(), sys.argv[2], int(sys.argv[3]), report)
    report.emit(done=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
