"""Evaluate a checkpoint on the environment's held-out split (rl_evaluate), as a background job.

The job is started and supervised as a run (``runs/evaluation.py``), so rl_check_status,
rl_get_results, rl_get_logs and rl_stop_training all work on its id. It evaluates with the
environment and config of the run that wrote the checkpoint.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from hermes_rl_mcp import run_document, runs
from hermes_rl_mcp.core.endpoints import resolve_checkpoint
from hermes_rl_mcp.run_document import EvaluatedCheckpoint, RunSection
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.models import RunStarted


class EvaluationStarted(RunStarted):
    evaluated_run: str = Field(description="The run whose checkpoint is evaluated.")
    checkpoint_step: int
    checkpoint: str = Field(description="The checkpoint archive or tinker:// sampler weights evaluated.")


def start_evaluation(run_id: str, step: int | None, *, state: Path) -> EvaluationStarted:
    results = runs.get_results(run_id, state=state)
    try:
        source = run_document.load(RunPaths.of(state, results.run_id).config)
    except run_document.RunDocumentError as exc:
        raise runs.InvalidRunConfig(f"run {results.run_id}'s config cannot be read, so it cannot be evaluated: {exc}") from None
    if source.run.evaluates is not None:
        raise runs.InvalidArgument(
            f"{results.run_id} is an evaluation, not a training run; evaluate the run it evaluated, {source.run.evaluates.run_id}"
        )
    endpoint = resolve_checkpoint(results, step)
    assert endpoint.step is not None and endpoint.checkpoint is not None
    run = source.run
    document = source.model_copy(update={
        "run": RunSection(
            backend=run.backend, environment=run.environment, env_file=run.env_file, env_class=run.env_class,
            profile=run.profile, job="evaluate",
            evaluates=EvaluatedCheckpoint(run_id=results.run_id, step=endpoint.step, checkpoint=endpoint.checkpoint,
                                          base_model=endpoint.model, state=endpoint.state, lora_rank=endpoint.lora_rank),
        ),
        # The result is in metrics.jsonl; W&B's import would cost seconds.
        "env": source.env.model_copy(update={"use_wandb": False}),
    })
    started = runs.start_run(document, state=state)
    return EvaluationStarted(
        **started.model_dump(), evaluated_run=results.run_id, checkpoint_step=endpoint.step, checkpoint=endpoint.checkpoint
    )
