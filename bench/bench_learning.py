"""Learning bars of the shipped environments with their default configs, on the local backend.

    python bench/bench_learning.py [reverse_text|arithmetic|navigation|all] [--timeout 300] [--keep] [--set FIELD=VALUE ...]

Each run starts exactly as the MCP server starts one: a control plane on a temporary state
directory selects the environment, makes no edits, resolves ``run_document()`` and hands it to
``start_run``; the script then polls ``check_status`` until the run ends and reads
``get_results``. It prints the learning curve (step, train and eval percent correct, and for
navigation the eval mean discounted return), the wall time from start to the final checkpoint,
and checks the bars:

* reverse_text: final ``eval/percent_correct`` >= 0.95 on held-out strings;
* arithmetic: final ``eval/percent_correct`` >= 0.9 on held-out problems;
* navigation: final success rate >= 0.9 and an eval mean return well above that of a policy
  moving uniformly at random (simulated with the environment's own scoring code): at least
  halfway from the random policy's return to the best possible one (walking straight there;
  random walks in a short corridor often reach the goal, so "twice random" is out of reach);
* every run: at most 180 s from start to the final checkpoint.

``--set`` edits the config of every run (``--set env.max_batches_offpolicy=1``), for exploring
a change; the bars are defined on the defaults.

Runs still going when the script exits (timeout, Ctrl-C, error) are stopped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml
from config_edits import add_set_option  # this script's folder: python bench/bench_learning.py
from stopping import exit_on_sigterm, stop_runs

REPO = Path(__file__).resolve().parent.parent
ENVIRONMENTS = ("reverse_text", "arithmetic", "navigation")
BARS = {"reverse_text": 0.95, "arithmetic": 0.9, "navigation": 0.9}
MAX_WALL = 180.0
RETURN_SHARE = 0.5  # "well above random": this share of the way from random to the best return
POLL = 0.5


def load_environment_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_env_{name}", REPO / "environments" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def random_navigation_return(env_section: dict[str, Any], episodes_per_pair: int = 4000) -> dict[str, float]:
    """Mean discounted return and success rate of uniformly random L/R moves on the eval pairs,
    played by the environment's own corridor and scoring code."""
    nav = load_environment_module("navigation")
    defaults, _ = nav.NavigationEnv.config_init()
    length = int(env_section.get("corridor_length", defaults.corridor_length))
    max_turns = int(env_section.get("max_turns", defaults.max_turns))
    discount = float(env_section.get("discount_factor", defaults.discount_factor))
    _, eval_pairs = nav.split_pairs(length)
    rng = random.Random(0)
    returns: list[float] = []
    successes = 0
    for start, goal in eval_pairs:
        for _ in range(episodes_per_pair):
            moves = [rng.choice("LR") for _ in range(max_turns)]
            reached, ret = nav.play_script(start, goal, moves, length=length, max_turns=max_turns, discount_factor=discount)
            returns.append(ret)
            successes += reached
    best = [
        nav.play_script(s, g, ["R" if g > s else "L"] * max_turns, length=length, max_turns=max_turns, discount_factor=discount)[1]
        for s, g in eval_pairs
    ]
    return {"mean_return": sum(returns) / len(returns), "success": successes / len(returns), "best_return": sum(best) / len(best)}


def read_metrics(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def learning_curve(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per evaluation: the eval metrics and the mean train percent correct logged since
    the previous evaluation."""
    curve: list[dict[str, Any]] = []
    pending: list[float] = []
    for row in sorted(rows, key=lambda r: (r.get("step", 0), r.get("time", 0))):
        if "train/percent_correct" in row:
            pending.append(float(row["train/percent_correct"]))
        if "eval/percent_correct" in row:
            curve.append(
                {
                    "step": int(row["step"]),
                    "train": sum(pending) / len(pending) if pending else None,
                    "eval": float(row["eval/percent_correct"]),
                    "return": row.get("eval/mean_return"),
                }
            )
            pending = []
    return curve


def fmt(value: Any, width: int = 8) -> str:
    return f"{value:>{width}.3f}" if isinstance(value, (int, float)) else f"{'-':>{width}}"


def run_one(name: str, state: Path, timeout: float, edits: dict[str, str]) -> dict[str, Any]:
    from hermes_rl_mcp.core.control import ControlPlane
    from hermes_rl_mcp.runs import TERMINAL_STATES, check_status, get_results, start_run

    plane = ControlPlane(state_dir=state)
    plane.select_environment(name)
    for field, value in edits.items():
        plane.edit_config(field, yaml.safe_load(value))
    document = plane.run_document().to_data()
    began = time.time()
    started = start_run(document, state=state)
    print(f"\n== {name}: run {started.run_id}; defaults{' with edits ' + json.dumps(edits) if edits else ''}: env.total_steps={document['env'].get('total_steps')} "
          f"env.group_size={document['env'].get('group_size')} trainer={json.dumps(document.get('trainer', {}))}", flush=True)
    last_print = 0.0
    status = check_status(started.run_id, state=state)
    while status.status not in TERMINAL_STATES:
        if time.time() - began > timeout:
            print(f"   timeout after {timeout:.0f} s; stopping the run", flush=True)
            break
        if time.time() - last_print > 15:
            print(f"   {time.time() - began:6.1f} s  {status.status:<9} step {status.step}/{status.total_steps}", flush=True)
            last_print = time.time()
        time.sleep(POLL)
        status = check_status(started.run_id, state=state)
    results = get_results(started.run_id, state=state)
    run_dir = Path(started.run_dir)
    curve = learning_curve(read_metrics(run_dir / "metrics.jsonl"))
    final_ckpt = next((c for c in reversed(results.checkpoints) if c.kind == "final"), None)
    to_final = (final_ckpt.time - began) if final_ckpt and final_ckpt.time else None
    ended = (results.ended_at or time.time()) - began

    header = f"   {'step':>6} {'train%':>8} {'eval%':>8}" + (f" {'eval_ret':>8}" if name == "navigation" else "")
    print(header)
    for point in curve:
        line = f"   {point['step']:>6} {fmt(point['train'])} {fmt(point['eval'])}"
        if name == "navigation":
            line += f" {fmt(point['return'])}"
        print(line)
    print(f"   status {results.status} ({results.reason or ''}); step {results.step}/{results.total_steps}")
    print(f"   wall: start -> final checkpoint {fmt(to_final, 0)} s; start -> run ended {ended:.1f} s")
    final_eval = curve[-1]["eval"] if curve else None
    outcome: dict[str, Any] = {
        "env": name,
        "status": results.status,
        "final_eval": final_eval,
        "to_final_checkpoint": to_final,
        "passed_accuracy": final_eval is not None and final_eval >= BARS[name],
        "passed_time": to_final is not None and to_final <= MAX_WALL,
    }
    if name == "navigation":
        baseline = random_navigation_return(document["env"])
        final_return = curve[-1]["return"] if curve else None
        print(f"   random L/R policy on the eval pairs: mean discounted return {baseline['mean_return']:.3f}, "
              f"success {baseline['success']:.3f}; best possible return {baseline['best_return']:.3f}; "
              f"trained: {fmt(final_return, 0)}")
        needed = baseline["mean_return"] + RETURN_SHARE * (baseline["best_return"] - baseline["mean_return"])
        outcome["random_return"] = baseline["mean_return"]
        outcome["needed_return"] = needed
        outcome["final_return"] = final_return
        outcome["passed_return"] = final_return is not None and final_return >= needed
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env", nargs="?", default="all", choices=[*ENVIRONMENTS, "all"])
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is stopped (default 300)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary state directory")
    add_set_option(parser, "a config edit for every run (default: none)")
    args = parser.parse_args(argv)
    edits = dict(args.set)
    exit_on_sigterm()

    state = Path(tempfile.mkdtemp(prefix="hermes-rl-bench-learning-"))
    os.environ["HERMES_RL_HOME"] = str(state)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.pop("WANDB_API_KEY", None)  # a benchmark never uploads
    outcomes: list[dict[str, Any]] = []
    try:
        for name in ENVIRONMENTS if args.env == "all" else (args.env,):
            outcomes.append(run_one(name, state, args.timeout, edits))
    finally:
        stop_runs(state)
        if args.keep:
            print(f"\nstate kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)

    print("\n== bars")
    all_met = True
    for o in outcomes:
        parts = [
            f"eval {fmt(o['final_eval'], 0)} >= {BARS[o['env']]}: {'met' if o['passed_accuracy'] else 'NOT met'}",
            f"start -> final checkpoint {fmt(o['to_final_checkpoint'], 0)} s <= {MAX_WALL:.0f}: {'met' if o['passed_time'] else 'NOT met'}",
        ]
        met = o["passed_accuracy"] and o["passed_time"] and o["status"] == "completed"
        if "passed_return" in o:
            parts.append(
                f"return {fmt(o['final_return'], 0)} >= {o['needed_return']:.3f} (random {o['random_return']:.3f}): "
                f"{'met' if o['passed_return'] else 'NOT met'}"
            )
            met = met and o["passed_return"]
        all_met = all_met and met
        print(f"   {o['env']:<13} [{o['status']}] " + "; ".join(parts))
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
