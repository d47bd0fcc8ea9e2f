"""A run's first components start before its supervisor has imported the rest of itself.

The server has the new run's document and its backend loaded, so it works out the run's ports,
its components and its stall limits, and writes them to ``launch.json`` in the run directory.
The supervisor's entry point reads that plan without pydantic, spawns the components that start
together (``start_chain``) at once, then imports the rest of itself while they import theirs,
and takes them over. The supervisor never needs the run document unless it must start a
component again on a new port, or the plan is missing or damaged (then it works everything out
from ``config.yaml`` itself, as before).

``spawn_component`` is the one way a component process is started, here and in the supervisor.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from hermes_rl_mcp.runs.backends import ComponentSpec, Ports
from hermes_rl_mcp.runs.childenv import minimal_environment
from hermes_rl_mcp.runs.ids import validate_run_id
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.lifeline import component_environment, open_lifeline
from hermes_rl_mcp.runs.stall import StallLimits
from hermes_rl_mcp.start_gate import GATE_VARIABLE

PLAN_FILE = "launch.json"


@dataclass(frozen=True)
class Plan:
    ports: Ports
    specs: list[ComponentSpec]  # in start order
    stall: StallLimits | None  # None: no training steps to watch (an evaluation)


def start_chain(specs: Sequence[ComponentSpec], first: int = 0) -> list[tuple[ComponentSpec, str | None]]:
    """The components spawned together from ``first`` on, each with its start gate.

    Each one after the first waits at its gate until the component before it answers its health
    URL; the chain ends before a component whose predecessor has no health URL (it is spawned
    only once that predecessor is ready).
    """
    chain: list[tuple[ComponentSpec, str | None]] = []
    for index in range(first, len(specs)):
        gate = specs[index - 1].health_url if index > first else None
        if index > first and gate is None:
            break
        chain.append((specs[index], gate))
    return chain


def write_plan(run_dir: Path, plan: Plan) -> None:
    data = {
        "ports": dataclasses.asdict(plan.ports),
        "components": [dataclasses.asdict(spec) for spec in plan.specs],
        "stall": dataclasses.asdict(plan.stall) if plan.stall is not None else None,
    }
    (run_dir / PLAN_FILE).write_text(json.dumps(data), encoding="utf-8")


def read_plan(run_dir: Path) -> Plan | None:
    """The server's plan, taken (the file is removed); None when there is none or it is damaged."""
    path = run_dir / PLAN_FILE
    try:
        text = path.read_text(encoding="utf-8")
        path.unlink()
    except OSError:
        return None
    try:
        data: Any = json.loads(text)
        specs = [_spec(raw) for raw in data["components"]]
        stall = StallLimits(**data["stall"]) if data["stall"] is not None else None
        return Plan(Ports(**data["ports"]), specs, stall) if specs else None
    except (ValueError, KeyError, TypeError):
        return None


def _spec(raw: dict[str, Any]) -> ComponentSpec:
    spec = ComponentSpec(**{**raw, "extra_env_keys": tuple(raw["extra_env_keys"])})
    if not (isinstance(spec.name, str) and isinstance(spec.argv, list) and all(isinstance(a, str) for a in spec.argv)):
        raise TypeError("a component needs a name and an argument list of strings")
    return spec


@dataclass
class Launched:
    """What the entry point hands the supervisor: the plan and the processes it spawned from it."""

    lifeline: tuple[int, int]
    plan: Plan | None = None
    processes: list[tuple[ComponentSpec, subprocess.Popen[bytes], int]] | None = None  # with each log's offset
    stop_requested: bool = False

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True


def spawn_component(
    argv: list[str], env_keys: Iterable[str], gate: str | None, *, log_path: Path, cwd: Path,
    lifeline_read_end: int, marker: str,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start one component with only the environment it needs; returns it and its log's offset."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        offset = log.tell()
        env = minimal_environment(env_keys)
        env.update(component_environment(lifeline_read_end, marker))
        if gate:
            env[GATE_VARIABLE] = gate
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,  # own process group: the whole tree can be signalled at once
            close_fds=True,
            pass_fds=(lifeline_read_end,),
        )
    return process, offset  # the child holds its own descriptor of the log


def launch(paths: RunPaths) -> Launched:
    """Spawn the planned components of the run at ``paths``; a stop asked for meanwhile is kept."""
    launched = Launched(lifeline=open_lifeline())
    signal.signal(signal.SIGTERM, launched.on_signal)
    signal.signal(signal.SIGINT, launched.on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # outlive the terminal/session that started us
    launched.plan = read_plan(paths.root)
    if launched.plan is None or launched.stop_requested:
        return launched
    launched.processes = []
    for spec, gate in start_chain(launched.plan.specs):
        try:
            process, offset = spawn_component(
                spec.argv, spec.extra_env_keys, gate, log_path=paths.log(spec.name), cwd=paths.root,
                lifeline_read_end=launched.lifeline[0], marker=paths.run_id,
            )
        except OSError:
            break  # the supervisor spawns the rest itself, and says why if that fails too
        launched.processes.append((spec, process, offset))
    return launched


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: hermes-rl-mcp supervise RUN_DIR  (internal: started by start_run)", file=sys.stderr)
        return 2
    paths = RunPaths(Path(argv[0]).resolve())
    validate_run_id(paths.run_id)
    launched = launch(paths)
    from hermes_rl_mcp.runs.supervisor import supervise

    return supervise(paths, launched)
