"""Model-tool figures: how long an agent waits for rl_test_inference, rl_sample and rl_evaluate.

    python bench/bench_model_tools.py [--repeats 3]

Trains one short arithmetic run (4 steps) in a temporary state directory, then times, each
``--repeats`` times: a 2-group and an 8-group trial against the local policy, a 4-completion
sample of the final checkpoint, and an evaluation job from start to completed. Each figure
includes starting the policy server (and for trials and evaluations, the environment process).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SHORT_RUN = {"env.total_steps": 4, "env.steps_per_eval": 100, "env.use_wandb": False, "env.batch_size": 16,
             "trainer.batch_size": 16, "trainer.checkpoint_interval": 2}


def wait_done(run_id: str, state: Path) -> str:
    from hermes_rl_mcp import runs

    while (status := runs.check_status(run_id, state=state).status) not in ("completed", "failed", "stopped"):
        time.sleep(0.1)
    return status


def timed(label: str, repeats: int, call: Callable[[], object]) -> None:
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    print(f"{label:<40} median {statistics.median(seconds):6.2f} s   min {min(seconds):6.2f} s   ({repeats} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["HERMES_RL_HOME"] = scratch
        from hermes_rl_mcp import runs
        from hermes_rl_mcp.core import endpoints, evaluation, sampling, trial
        from hermes_rl_mcp.core.control import ControlPlane

        state = Path(scratch)
        control = ControlPlane(state)
        control.select_environment("arithmetic")
        for field, value in SHORT_RUN.items():
            control.edit_config(field, value)
        document = control.run_document()
        run_id = runs.start_run(document, state=state).run_id
        assert wait_done(run_id, state) == "completed"
        local = endpoints.choose(None, None, None, state=state, document=document)
        final = endpoints.choose(None, run_id, None, state=state)

        for groups in (2, 8):
            timed(f"rl_test_inference, {groups} groups (local)", args.repeats,
                  lambda: trial.run_trial(document, local, groups, 60, state))
        timed("rl_sample, n=4 (final checkpoint)", args.repeats,
              lambda: sampling.sample(final, [{"role": "user", "content": "3+4"}], 4, 1.0, 8, state))
        timed("rl_evaluate, start to completed", args.repeats,
              lambda: wait_done(evaluation.start_evaluation(run_id, None, state=state).run_id, state))


if __name__ == "__main__":
    main()
