"""Model-guided vs uniform item sampling on the full local stack: real trainer, real runs.

    python bench/bench_sampler_stack.py [--env arithmetic] [--target 0.9] [--seeds 0 1] [--timeout 300]

For each seed, two runs of the same environment start exactly as the MCP server starts them,
identical but for ``env.exploration_rate``: the environment's default (model-guided sampling,
mixed with that share of uniform picks) and 1.0 (plain uniform sampling). Printed per run and
as guided/uniform ratios (below 1 means guided is better):

* the fraction of generated groups dropped because all their scores were equal;
* trainer steps, and wall seconds from the start, until ``eval/percent_correct`` first reaches
  the target (evaluation runs every ``env.steps_per_eval`` steps, so steps are multiples of it).

bench/bench_sampler.py runs the same comparison against a small stand-in policy, many seeds fast.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.metrics_log import read_metrics
from hermes_rl_mcp.runs import TERMINAL_STATES, check_status, start_run, stop_run
from stopping import exit_on_sigterm  # this script's folder: python bench/bench_sampler_stack.py


def one_run(env: str, exploration_rate: float | None, seed: int, state: Path, timeout: float, target: float) -> dict[str, Any]:
    plane = ControlPlane(state_dir=state)
    plane.select_environment(env)
    plane.edit_config("env.seed", seed)
    plane.edit_config("trainer.seed", seed)
    if exploration_rate is not None:
        plane.edit_config("env.exploration_rate", exploration_rate)
    document = plane.run_document().to_data()
    began = time.time()
    started = start_run(document, state=state)
    try:
        while check_status(started.run_id, state=state).status not in TERMINAL_STATES:
            if time.time() - began > timeout:
                break
            time.sleep(0.5)
    finally:
        stop_run(started.run_id, state=state)
    rows = read_metrics(Path(started.run_dir) / "metrics.jsonl")
    counts = [r for r in rows if "env/groups_sent" in r]
    sent = counts[-1]["env/groups_sent"] if counts else 0
    dropped = counts[-1].get("env/groups_dropped_same_score", 0) if counts else 0
    reached = next((r for r in rows if (r.get("eval/percent_correct") or 0) >= target), None)
    return {
        "exploration_rate": document["env"].get("exploration_rate"),
        "dropped_fraction": dropped / (sent + dropped) if sent + dropped else float("nan"),
        "steps_to_target": reached["step"] if reached else None,
        "seconds_to_target": reached["time"] - began if reached else None,
        "final_eval": next((r["eval/percent_correct"] for r in reversed(rows) if "eval/percent_correct" in r), None),
    }


def ratio(guided: list[float | None], uniform: list[float | None]) -> str:
    if any(v is None for v in guided + uniform) or not guided:
        return "n/a (a run did not reach the target)"
    return f"{statistics.mean(guided) / statistics.mean(uniform):.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="arithmetic")
    parser.add_argument("--target", type=float, default=0.9, help="eval/percent_correct to reach")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run")
    args = parser.parse_args()
    exit_on_sigterm()
    root = Path(tempfile.mkdtemp(prefix="hermes-rl-sampler-"))
    results: dict[str, list[dict[str, Any]]] = {"guided": [], "uniform": []}
    try:
        for seed in args.seeds:
            for label, rate in (("guided", None), ("uniform", 1.0)):
                outcome = one_run(args.env, rate, seed, root / f"{label}-{seed}", args.timeout, args.target)
                results[label].append(outcome)
                print(f"{args.env} seed {seed} {label:<7} (exploration_rate {outcome['exploration_rate']}): "
                      f"dropped {outcome['dropped_fraction']:.3f}, steps to eval>={args.target} "
                      f"{outcome['steps_to_target']}, seconds {outcome['seconds_to_target'] and round(outcome['seconds_to_target'], 1)}, "
                      f"final eval {outcome['final_eval']}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    g, u = results["guided"], results["uniform"]
    print(f"\nguided / uniform over {len(args.seeds)} seed(s):")
    print(f"  dropped fraction: {ratio([r['dropped_fraction'] for r in g], [r['dropped_fraction'] for r in u])}")
    print(f"  steps to target:  {ratio([r['steps_to_target'] for r in g], [r['steps_to_target'] for r in u])}")
    print(f"  wall to target:   {ratio([r['seconds_to_target'] for r in g], [r['seconds_to_target'] for r in u])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
