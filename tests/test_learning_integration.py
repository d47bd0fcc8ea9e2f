"""The three real processes (trajectory API, trainer, environment) learn: reward improves."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.metrics_log import read_metrics
from hermes_rl_mcp.runs import check_status, get_results, start_run, stop_run


def test_a_short_real_run_improves_reward_over_the_initial_policy() -> None:
    control = ControlPlane()
    control.select_environment("reverse_text")
    for field, value in {"env.total_steps": 60, "env.steps_per_eval": 30, "env.use_wandb": False}.items():
        control.edit_config(field, value)
    started = start_run(control.run_document())
    try:
        deadline = time.monotonic() + 240
        while (status := check_status(started.run_id)).status not in ("completed", "failed", "stopped"):
            assert time.monotonic() < deadline, f"run still {status.status} at step {status.step}"
            time.sleep(0.5)
    finally:
        stop_run(started.run_id)
    assert status.status == "completed", f"{status.reason}\n{status.log_tail}"

    rewards = [(r["step"], r["reward/mean"]) for r in read_metrics(Path(started.run_dir) / "metrics.jsonl") if "reward/mean" in r]
    assert len(rewards) >= 50
    first = statistics.mean(value for step, value in rewards if step <= 5)
    last = statistics.mean(value for step, value in rewards if step > 50)
    assert last > first + 0.1, f"reward did not improve: first steps {first:.3f}, last steps {last:.3f}"
    results = get_results(started.run_id)
    assert results.final_checkpoint and Path(results.final_checkpoint).is_file()
