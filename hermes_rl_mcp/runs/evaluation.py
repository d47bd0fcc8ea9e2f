"""An evaluation job: a checkpoint's policy served, and the environment's held-out evaluation
run against it (``python env.py evaluate``), supervised exactly like a training run.

The job is a run whose document says ``run.job: evaluate`` and names what it evaluates in
``run.evaluates`` (the run, the step, the checkpoint archive or tinker sampler weights, and
the base model on tinker). Its components are the policy server (in the trainer's place, so
its log is the trainer log) and the environment; it completes when the evaluation exits 0.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_rl_mcp.backend_names import DEFAULT_BACKEND, TINKER
from hermes_rl_mcp.runs.backends import WANDB_VARIABLES, Backend, ComponentSpec, LocalBackend, Ports
from hermes_rl_mcp.runs.errors import BackendUnavailable

if TYPE_CHECKING:
    from hermes_rl_mcp.run_document import RunDocument

JOB = "evaluate"
EVALUATION_COMPONENTS = ("trainer", "env")  # the policy server stands in the trainer's place


def policy_argv(
    port: int,
    *,
    checkpoint: str | None = None,
    backend: str = DEFAULT_BACKEND,
    base_model: str | None = None,
    state: str | None = None,
    lora_rank: int | None = None,
    step: int = 0,
    seed: int = 0,
    hidden_size: int = 64,
    temperature: float = 1.0,
) -> tuple[list[str], tuple[str, ...]]:
    """``hermes-rl-mcp policy`` serving a checkpoint (or, without one, the initial local policy)
    on ``port``, and the variables of the operator's environment it needs."""
    argv = [sys.executable, "-m", "hermes_rl_mcp", "policy", "--port", str(port), "--temperature", str(temperature)]
    if checkpoint is None:
        return [*argv, "--init", "--seed", str(seed), "--hidden-size", str(hidden_size)], ()
    if backend == TINKER:
        from hermes_rl_mcp.runs.tinker_backend import COMPONENT_VARIABLES

        argv += ["--tinker-sampler", checkpoint, "--base-model", str(base_model), "--step", str(step)]
        if state and lora_rank:
            argv += ["--tinker-state", state, "--lora-rank", str(lora_rank)]
        return argv, COMPONENT_VARIABLES
    return [*argv, "--checkpoint", checkpoint], ()


class EvaluationJob:
    """The components of an evaluation, shaped like a backend for the supervisor."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = backend.name
        self.stop_grace = backend.stop_grace

    def check(self, config: RunDocument, environ: Any) -> None:
        LocalBackend().check(config, environ)  # the environment file runs on this machine
        if config.run.evaluates is None:
            raise BackendUnavailable("an evaluation needs run.evaluates: the checkpoint to serve")
        if self.name == TINKER and not environ.get("TINKER_API_KEY"):
            raise BackendUnavailable(
                "evaluating a tinker checkpoint needs TINKER_API_KEY in the server's environment, as training did"
            )

    def components(self, config: RunDocument, config_path: Path, ports: Ports) -> list[ComponentSpec]:
        evaluates = config.run.evaluates
        assert evaluates is not None
        argv, variables = policy_argv(
            ports.policy, checkpoint=evaluates.checkpoint, backend=self.name, base_model=evaluates.base_model,
            state=evaluates.state, lora_rank=evaluates.lora_rank, step=evaluates.step,
            temperature=float(config.trainer_value("temperature", 1.0)),
        )
        env_file = str(Path(config.run.env_file or "").resolve())
        return [
            ComponentSpec(
                name="trainer", argv=argv, port_role="policy", health_url=f"http://127.0.0.1:{ports.policy}/health",
                ready_timeout=600.0 if self.name == TINKER else 120.0, extra_env_keys=variables,
            ),
            ComponentSpec(
                name="env", argv=[sys.executable, env_file, "evaluate", "--config", str(config_path)],
                ready_timeout=120.0, extra_env_keys=WANDB_VARIABLES, finishes_run=True,
            ),
        ]

    def secret_keys(self) -> tuple[str, ...]:
        return self.backend.secret_keys()
