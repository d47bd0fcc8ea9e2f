"""Check an environment file the way a run meets it, and report every problem with its line.

In order: the file compiles; discovery finds an environment class in it under a name nobody
else has; its config is introspected, and a dry run collects and scores groups against the
local backend's initial policy. The last two run in one sandboxed child (``check_child``): its
own session, no secrets, output to files, never to this process's stdout, and ended, with all
it spawned, at the deadline. Nothing here imports or runs environment code itself.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_rl_mcp.core.check_child import STACK_DUMP_SIGNAL
from hermes_rl_mcp.core.check_models import CheckProblem, DryRunGroup, EnvironmentCheck
from hermes_rl_mcp.core.config import untrusted_child_environment
from hermes_rl_mcp.core.discovery import Discovery, parse_file
from hermes_rl_mcp.core.models import EnvironmentInfo

DRY_RUN_GROUPS = 2
STACK_DUMP_WAIT_S = 0.3  # for the child's stack dump to reach its stderr file before it is killed
STDERR_TAIL_BYTES = 64 * 1024
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def check_file(
    file: Path, directories: list[Path], *, bound: float, groups: int = DRY_RUN_GROUPS
) -> EnvironmentCheck:
    """Every problem of ``file``, discovered among ``directories`` (which must contain it)."""
    started = time.monotonic()
    file = file.resolve()

    def answer(problems: list[CheckProblem], env: EnvironmentInfo | None = None, **found: Any) -> EnvironmentCheck:
        return EnvironmentCheck(
            environment=env.name if env else None, class_name=env.class_name if env else None, file=str(file),
            ok=not problems, problems=problems, bound_seconds=bound,
            seconds=round(time.monotonic() - started, 3), **found,
        )

    compiled = _compile_problem(file)
    if compiled is not None:
        return answer([compiled])
    env, problems, notes = _discover(file, directories)
    if env is None:
        return answer(problems, notes=notes)
    # The bound covers the whole check: the child gets what compiling and discovery left of it.
    remaining = bound - (time.monotonic() - started) - STACK_DUMP_WAIT_S
    child_problems, found = _run_child(env, deadline=max(remaining, 0.5), bound=bound, groups=groups)
    found["notes"] = notes + found.get("notes", [])
    return answer(problems + child_problems, env, **found)


def _compile_problem(file: Path) -> CheckProblem | None:
    try:
        source = file.read_bytes()
    except OSError as exc:
        return CheckProblem(stage="parse", message=f"cannot read the file: {exc.strerror or exc}")
    try:
        compile(source, str(file), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return CheckProblem(stage="parse", line=exc.lineno, message=f"syntax error: {exc.msg}")
    except ValueError as exc:  # NUL bytes
        return CheckProblem(stage="parse", message=f"not a Python source file: {exc}")
    return None


def _discover(file: Path, directories: list[Path]) -> tuple[EnvironmentInfo | None, list[CheckProblem], list[str]]:
    listing = Discovery().scan(directories)
    classes = parse_file(file).classes
    problems = []
    for problem in listing.problems:
        if Path(problem.file).resolve() == file:
            line = next((c.line for c in classes if f"({c.name})" in problem.reason), None)
            problems.append(CheckProblem(stage="discovery", line=line, message=problem.reason))
    mine = [env for env in listing.environments if Path(env.file).resolve() == file]
    if not mine:
        if not problems:
            problems.append(CheckProblem(
                stage="discovery",
                message="no environment class found: define a class deriving from BaseEnv "
                        "(from hermes_rl_mcp.sdk import BaseEnv) that implements setup, get_next_item, "
                        "collect_trajectories and evaluate, with no abstract methods of its own",
            ))
        return None, problems, []
    notes = []
    if len(mine) > 1:
        notes.append(f"the file defines {len(mine)} environments ({', '.join(e.name for e in mine)}); checked {mine[0].name}")
    return mine[0], problems, notes


# -- the child ------------------------------------------------------------------------------------

_STAGE_TEXT = {
    "config": "importing the file and reading its config (config_init)",
    "policy": "starting the local policy",
    "settings": "resolving the run settings",
    "setup": "setup()",
}


def _run_child(env: EnvironmentInfo, *, deadline: float, bound: float, groups: int) -> tuple[list[CheckProblem], dict[str, Any]]:
    command = [sys.executable, "-m", "hermes_rl_mcp.core.check_child", env.file, env.class_name, str(groups)]
    with tempfile.TemporaryDirectory(prefix="hermes-rl-check-") as scratch, \
            open(Path(scratch) / "answer", "w+b") as out, open(Path(scratch) / "stderr", "w+b") as err:
        child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=scratch,
            # No bytecode beside the environment's file: checking changes nothing on disk.
            env={**untrusted_child_environment(), "PYTHONDONTWRITEBYTECODE": "1"}, start_new_session=True,
        )
        timed_out = False
        try:
            child.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            timed_out = True
            _signal(child.pid, STACK_DUMP_SIGNAL)
            time.sleep(STACK_DUMP_WAIT_S)
        _end_group(child)
        records = _records(out)
        stderr_text = _tail(err)
    return _findings(env, records, stderr_text, timed_out=timed_out, exit_code=child.returncode, bound=bound)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _end_group(child: subprocess.Popen) -> None:
    """End the child and everything the environment started in its session."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _records(out) -> list[dict[str, Any]]:
    out.seek(0)
    records = []
    for raw in out.read().splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _tail(err) -> str:
    size = err.seek(0, os.SEEK_END)
    err.seek(max(0, size - STDERR_TAIL_BYTES))
    return err.read().decode(errors="replace")


def _findings(
    env: EnvironmentInfo, records: list[dict[str, Any]], stderr_text: str, *, timed_out: bool, exit_code: int | None, bound: float
) -> tuple[list[CheckProblem], dict[str, Any]]:
    problems: list[CheckProblem] = []
    found: dict[str, Any] = {"notes": []}
    stage = "config"
    finished = False
    for record in records:
        if "stage" in record:
            stage = str(record["stage"])
        elif "config" in record:
            found["config_class"] = record["config"].get("config_class")
            found["config_fields"] = list(record["config"].get("fields", []))
        elif "failed" in record:
            problems.append(CheckProblem(
                stage="config" if record["failed"] == "config" else "dry_run", line=record.get("line"),
                message=str(record.get("error")), traceback=list(record.get("traceback") or []),
            ))
        elif "groups" in record:
            problems += _group_findings(record["groups"], found)
        elif record.get("done"):
            finished = True
    stage_text = _STAGE_TEXT.get(stage, f"{stage} (get_next_item and collect_trajectories)")
    check_stage = "config" if stage == "config" else "dry_run"
    if timed_out:
        problems.append(CheckProblem(
            stage=check_stage, line=_hung_line(stderr_text, env.file),
            message=f"did not finish {stage_text} within the check's bound of {bound:g} s and was ended "
                    "(something there waits, sleeps or loops)",
        ))
    elif not finished:
        problems.append(CheckProblem(
            stage=check_stage, line=_hung_line(stderr_text, env.file),
            message=f"the check process ended with exit code {exit_code} while {stage_text} "
                    "(the environment's code ended its own process)",
            traceback=stderr_text.strip().splitlines()[-5:],
        ))
    if stderr_text.strip() and not timed_out:
        found["notes"].append(
            f"the environment wrote {len(stderr_text.encode())} bytes to stdout/stderr during the check; "
            "a run keeps them in its env log, and the MCP server never shows them on its own output"
        )
    return problems, found


def _group_findings(groups: list[dict[str, Any]], found: dict[str, Any]) -> list[CheckProblem]:
    problems = []
    shown = []
    for group in groups:
        for message in group.get("problems", []):
            problems.append(CheckProblem(
                stage="dry_run", line=group.get("line"), message=f"group {group.get('index')}: {message}",
                traceback=list(group.get("traceback") or []),
            ))
        scores = [s for s in group.get("scores", []) if isinstance(s, (int, float))]
        if not group.get("problems"):
            shown.append(DryRunGroup(
                index=group["index"], prompt=group.get("prompt", ""), completions=group.get("completions", []),
                scores=scores, scores_differ=len(set(scores)) > 1, seconds=group.get("seconds", 0.0),
            ))
    found["dry_run"] = shown
    if shown and not any(g.scores_differ for g in shown):
        found["notes"].append(
            f"every completion in the dry run scored the same ({shown[0].scores[0] if shown[0].scores else 'no score'}); "
            "with env.ensure_scores_are_not_same a run drops such groups, so make sure partial answers earn partial credit"
        )
    return problems


def _hung_line(stderr_text: str, file: str) -> int | None:
    """The innermost line of ``file`` on the child's stack: from the stack dump taken at the
    deadline (most recent call first), else from a traceback it printed (most recent call last)."""
    target = str(Path(file).resolve())
    dump = stderr_text.find("most recent call first")
    if dump >= 0:
        frames = list(_FRAME.finditer(stderr_text, dump))
    else:
        frames = list(reversed(list(_FRAME.finditer(stderr_text))))
    for match in frames:
        if str(Path(match.group("file")).resolve()) == target:
            return int(match.group("line"))
    return None
