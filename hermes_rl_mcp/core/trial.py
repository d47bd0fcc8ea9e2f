"""Try the selected environment against a policy endpoint before training (rl_test_inference).

The environment's own code runs as it does in a run: in a child process with the minimal
environment, its output in a log file, here in ``trial`` mode (see ``sdk/trial.py``). The child
gets the endpoint's address and, for an operator's endpoint, only the one variable holding its
key; the config file it reads holds no key. The whole trial is bounded in time: when the bound
is reached the child's process tree is ended and the groups finished by then are reported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_rl_mcp import run_document
from hermes_rl_mcp.core.endpoints import Endpoint, Served, serving
from hermes_rl_mcp.core.errors import InvalidCount
from hermes_rl_mcp.core.inference_models import EnvironmentFailure, PromptMessage, TrialGroup, TrialResult
from hermes_rl_mcp.run_document import RunDocument, TrialSettings
from hermes_rl_mcp.runs.childenv import minimal_environment
from hermes_rl_mcp.runs.procs import start_time_of, terminate_trees
from hermes_rl_mcp.runs.redact import redact_text
from hermes_rl_mcp.start_gate import GATE_VARIABLE

MAX_GROUPS = 16
MAX_SECONDS = 240.0
DEFAULT_SECONDS = 45.0
MIN_SECONDS = 5.0
LOG_TAIL_CHARS = 1500
RESULTS_FILE = "trial.jsonl"


def check_bounds(groups: int, seconds: float) -> None:
    if isinstance(groups, bool) or not isinstance(groups, int) or not 1 <= groups <= MAX_GROUPS:
        raise InvalidCount(f"groups must be an integer from 1 to {MAX_GROUPS}, not {groups!r}")
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise InvalidCount(f"time_limit_seconds must be from {MIN_SECONDS:g} to {MAX_SECONDS:g}, not {seconds!r}")


def trial_document(document: RunDocument, work_dir: Path, served: Served, groups: int, group_timeout: float) -> RunDocument:
    """The run document of a trial: the current config, aimed at the endpoint, never holding a key."""
    servers = [dict(server) for server in document.openai] or [{}]
    for server in servers:
        server.update({"base_url": served.base_url, "model_name": served.model})
        server.pop("api_key", None)  # the child reads an operator's key from run.policy_key_env
    return document.model_copy(update={
        "run": document.run.model_copy(update={
            "dir": str(work_dir), "policy_url": served.base_url, "policy_key_env": served.key_variable,
            "trial": TrialSettings(groups=groups, group_timeout=group_timeout),
        }),
        "env": document.env.model_copy(update={"use_wandb": False}),  # a trial is not a run: nothing to mirror
        "openai": servers,
    })


def run_trial(document: RunDocument, endpoint: Endpoint, groups: int, seconds: float, state_dir: Path) -> TrialResult:
    check_bounds(groups, seconds)
    started = time.monotonic()
    (state_dir / "trials").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trial-", dir=state_dir / "trials") as scratch:
        work_dir = Path(scratch)
        with serving(endpoint, work_dir, ready=False) as served:
            config_path = work_dir / "config.yaml"
            run_document.write(config_path, trial_document(document, work_dir, served, groups, seconds))
            timed_out, code = _run_child(document.run.env_file or "", config_path, work_dir, served, started + seconds)
        lines = _read_lines(work_dir / RESULTS_FILE)
        log_tail = redact_text((work_dir / "env.log").read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:].strip())
    return _result(document.run.environment or "", endpoint, groups, lines, started, seconds, timed_out, code, log_tail)


def _run_child(env_file: str, config_path: Path, work_dir: Path, served: Served, deadline: float) -> tuple[bool, int | None]:
    """Run the environment's trial until it exits or ``deadline``; (timed out, exit code)."""
    env = minimal_environment([served.key_variable] if served.key_variable else [])
    if served.health_url:
        env[GATE_VARIABLE] = served.health_url  # imports overlap with the policy server's start
    with open(work_dir / "env.log", "ab") as log:
        process = subprocess.Popen(
            [sys.executable, str(Path(env_file).resolve()), "trial", "--config", str(config_path)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=work_dir,
            env=env, start_new_session=True, close_fds=True,
        )
    started_at = start_time_of(process.pid)
    try:
        served.wait_ready()
        return False, process.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return True, None
    finally:
        terminate_trees([(process.pid, started_at)], grace=1.0, reap=process.poll)
        process.poll()


def _read_lines(path: Path) -> list[dict[str, Any]]:
    records = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut off by the time bound
        if isinstance(record, dict):
            records.append(record)
    return records


def _group(record: dict[str, Any]) -> TrialGroup:
    calls = record.get("calls") or []
    scores = [float(s) for s in record.get("scores") or []]
    return TrialGroup(
        index=int(record.get("index", 0)),
        item=record.get("item"),
        prompt=[PromptMessage(**m) for m in calls[0]["prompt"]] if calls else [],
        completions=[text for call in calls for text in call["completions"]],
        finish_reasons=[reason for call in calls for reason in call["finish_reasons"]],
        requests=len(calls),
        scores=scores,
        scores_differ=len(scores) > 1 and max(scores) - min(scores) > 1e-9,
        seconds=float(record.get("seconds", 0.0)),
        error=EnvironmentFailure(**record["error"]) if record.get("error") else None,
    )


def _result(environment: str, endpoint: Endpoint, asked: int, lines: list[dict[str, Any]], started: float,
            bound: float, timed_out: bool, code: int | None, log_tail: str) -> TrialResult:
    groups = sorted((_group(r) for r in lines if "index" in r), key=lambda g: g.index)
    setup = next((r for r in lines if "setup_seconds" in r or "setup_error" in r), {})
    finished = [g for g in groups if g.scores and g.error is None]
    scores = [s for g in finished for s in g.scores]
    error = EnvironmentFailure(**setup["setup_error"]) if "setup_error" in setup else None
    if error is None and not groups and not timed_out and code not in (0, None):
        error = EnvironmentFailure(type="ProcessExited", message=f"the environment process exited with code {code} before any group")
    if error is None and timed_out and len(groups) < asked:
        error = EnvironmentFailure(type="TimeoutError", message=f"the trial reached its bound of {bound:g} s after {len(groups)} of {asked} groups")
    return TrialResult(
        environment=environment,
        endpoint=endpoint,
        groups_asked=asked,
        groups_finished=len(finished),
        groups=groups,
        share_differing=round(sum(g.scores_differ for g in finished) / len(finished), 4) if finished else 0.0,
        mean_score=round(sum(scores) / len(scores), 4) if scores else None,
        setup_seconds=setup.get("setup_seconds"),
        total_seconds=round(time.monotonic() - started, 3),
        time_bound_seconds=bound,
        timed_out=timed_out,
        error=error,
        log_tail=log_tail if error is not None else None,
    )
