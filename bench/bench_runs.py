"""Run-control figures: start -> running, check_status with 1,000 runs, log tail of a 1 GiB log.

    python bench/bench_runs.py [--backend local|procs] [--starts 5] [--keep]

``local`` starts the real trajectory API, trainer and environment (reverse_text); ``procs`` uses
the tiny HTTP components of the run-control tests (tests/test_runs_components.py) and measures
the supervisor's own overhead. Everything runs in a temporary state directory on loopback.
Targets: start -> running median <= 2 s; check_status <= 10 ms; 200-line tail of 1 GiB <= 20 ms.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from stopping import exit_on_sigterm  # this script's folder: python bench/bench_runs.py

REPO = Path(__file__).resolve().parent.parent


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def bench_start(state: Path, backend: str, starts: int) -> None:
    from hermes_rl_mcp.runs import check_status, start_run, stop_run

    if backend == "procs":
        os.environ["HERMES_RL_BACKENDS"] = "procs=test_runs_components:ProcBackend"
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "tests"), os.environ.get("PYTHONPATH")) if p)
        sys.path.insert(0, str(REPO / "tests"))  # this process resolves the backend too
        config = {"run": {"environment": "demo", "backend": "procs"}, "env": {"total_steps": 10_000}, "test": {"step_time": 0.2}}
    else:
        config = {
            "run": {"environment": "reverse_text", "backend": "local", "env_file": str(REPO / "environments" / "reverse_text.py")},
            "env": {"total_steps": 10_000, "use_wandb": False},
            "trainer": {},
        }
    returns: list[float] = []
    to_running: list[float] = []
    for _ in range(starts):
        began = time.monotonic()
        started = start_run(config, state=state)
        returns.append(time.monotonic() - began)
        while True:
            status = check_status(started.run_id, state=state)
            if status.status == "running":
                to_running.append(time.monotonic() - began)
                break
            if status.status in ("failed", "stopped", "completed"):
                print(f"  run {started.run_id} ended as {status.status}: {status.reason}\n{status.log_tail or ''}")
                break
            time.sleep(0.01)
        stop_began = time.monotonic()
        stopped = stop_run(started.run_id, state=state)
        print(
            f"  {started.run_id}: start_run returned in {returns[-1] * 1000:.0f} ms, "
            f"running after {to_running[-1] if len(to_running) == len(returns) else float('nan'):.2f} s, "
            f"stop_run -> {stopped.status} in {time.monotonic() - stop_began:.2f} s"
        )
    if to_running:
        print(
            f"start -> running ({backend} backend, {len(to_running)} runs): median {statistics.median(to_running):.2f} s, "
            f"max {max(to_running):.2f} s (target <= 2 s); start_run returns in median "
            f"{statistics.median(returns) * 1000:.0f} ms"
        )


def bench_status(state: Path) -> None:
    from hermes_rl_mcp.runs import check_status, list_runs
    from hermes_rl_mcp.runs.ids import new_run_id
    from hermes_rl_mcp.runs.registry import Registry

    ids: list[str] = []
    with Registry(state) as registry:
        for i in range(1000):
            run_id = new_run_id(1_800_000_000 + 60 * i)
            run_dir = state / "runs" / run_id
            registry.insert_run(run_id=run_id, environment="reverse_text", backend="local", run_dir=str(run_dir), total_steps=400, reason="run created")
            registry.transition(run_id, "running", "all components ready", from_states=("starting",))
            registry.transition(run_id, "completed", "done", ended_at=time.time())
            ids.append(run_id)
    # The run asked about has a long metrics file: 400 steps of trainer and env lines, evals every 50.
    target = ids[500]
    run_dir = state / "runs" / target
    (run_dir / "logs").mkdir(parents=True)
    with open(run_dir / "metrics.jsonl", "w") as handle:
        for step in range(1, 20_001):
            handle.write(json.dumps({"step": step, "time": 0.0, "train/loss": 1 / step, "reward/mean": 0.5, "advantages/mean": 0.0, "train/learning_rate": 0.003, "train/step_time": 0.2}) + "\n")
            handle.write(json.dumps({"step": step, "time": 0.0, "train/percent_correct": 0.9, "train/completion_length": 5.0, "env/groups_sent": step}) + "\n")
            if step % 50 == 0:
                handle.write(json.dumps({"step": step, "time": 0.0, "eval/percent_correct": 0.95}) + "\n")
    size = (run_dir / "metrics.jsonl").stat().st_size
    check_status(target, state=state)  # warm imports
    samples = []
    for _ in range(300):
        began = time.perf_counter()
        status = check_status(target, state=state)
        samples.append(time.perf_counter() - began)
    assert status.metrics["eval/percent_correct"] == 0.95
    print(
        f"check_status with 1,000 runs in the registry ({size / 1e6:.1f} MB metrics file): "
        f"median {statistics.median(samples) * 1000:.2f} ms, p95 {percentile(samples, 0.95) * 1000:.2f} ms (target <= 10 ms)"
    )
    samples = []
    for _ in range(20):
        began = time.perf_counter()
        listed = list_runs(state=state)
        samples.append(time.perf_counter() - began)
    print(f"list_runs of {listed.count} runs: median {statistics.median(samples) * 1000:.1f} ms")


def bench_log_tail(state: Path) -> None:
    from hermes_rl_mcp.runs import read_log
    from hermes_rl_mcp.runs.ids import new_run_id
    from hermes_rl_mcp.runs.registry import Registry

    run_id = new_run_id()
    run_dir = state / "runs" / run_id
    with Registry(state) as registry:  # before the run directory, as a server does it
        (run_dir / "logs").mkdir(parents=True)
        registry.insert_run(run_id=run_id, environment="reverse_text", backend="local", run_dir=str(run_dir), total_steps=400, reason="run created")
    log = run_dir / "logs" / "trainer.log"
    line = b"2026-11-30 01:32:00 INFO step 123: loss=0.1234 reward=0.5678 lr=0.003 sequences=64 took 0.21 s\n"
    chunk = line * (8 * 1024 * 1024 // len(line))
    target = 1024**3
    with open(log, "wb") as handle:
        written = 0
        while written < target:
            handle.write(chunk)
            written += len(chunk)
    size = log.stat().st_size
    samples = []
    for _ in range(50):
        began = time.perf_counter()
        tail = read_log(run_id, "trainer", 200, state=state)
        samples.append(time.perf_counter() - began)
    assert tail.lines == 200
    print(
        f"read_log last 200 lines of a {size / 1024**3:.2f} GiB log (redaction and registry lookup included): "
        f"median {statistics.median(samples) * 1000:.2f} ms, p95 {percentile(samples, 0.95) * 1000:.2f} ms (target <= 20 ms)"
    )
    log.unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    has_trainer = importlib.util.find_spec("hermes_rl_mcp.trainer.cli") is not None
    parser.add_argument("--backend", choices=["local", "procs"], default="local" if has_trainer else "procs")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the temporary state directory")
    args = parser.parse_args()
    exit_on_sigterm()
    root = Path(tempfile.mkdtemp(prefix="hermes-rl-bench-"))
    os.environ["HERMES_RL_HOME"] = str(root / "starts")
    try:
        print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}")
        bench_start(root / "starts", args.backend, args.starts)
        bench_status(root / "status")
        bench_log_tail(root / "logs")
    finally:
        if args.keep:
            print(f"state kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
