"""The SDK's shared types: environment and policy-endpoint configuration, and the scored
group's wire format.

This module imports nothing else of the SDK, and the modules that need these types import
them from here, so the SDK's imports point one way: ``base`` (the environment class) ->
``runtime`` (only once ``BaseEnv.cli`` runs) -> ``run_config`` and the clients -> ``env_types``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class BaseEnvConfig(BaseModel):
    """Fields every environment has. Defaults follow atroposlib's, but for
    ``max_batches_offpolicy``: 1 here, 3 there. The local policy moves far in one step, and
    groups sampled up to three batches behind it taught less: on five tasks through the servers,
    3 of 5 reached 0.9 held out in 3 minutes at 3 and 5 of 5 at 1 (``docs/design-notes.md``).
    The hosted Tinker profile locks it at 3."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    group_size: int = Field(4, gt=0, le=1024, description="Completions sampled and scored per item.")
    max_num_workers: int = Field(-1, ge=-1, le=65536, description="Concurrent item workers; -1: automatic.")
    max_eval_workers: int = Field(16, gt=0, le=4096, description="Concurrent evaluation workers.")
    max_num_workers_per_node: int = Field(8, gt=0, le=4096, description="Worker cap per node.")
    steps_per_eval: int = Field(100, gt=0, le=1_000_000, description="Trainer steps between evaluations.")
    max_token_length: int = Field(2048, gt=0, le=1_048_576, description="Longest prompt + completion, in tokens.")
    eval_handling: Literal["STOP_TRAIN", "LIMIT_TRAIN", "NONE"] = Field("STOP_TRAIN", description="What training does during an evaluation.")
    eval_limit_ratio: float = Field(0.5, ge=0, le=1, description="Share of workers training during eval.")
    inference_weight: float = Field(1.0, ge=0, le=1000, description="Weight of this environment in batch allocation.")
    batch_size: int = Field(-1, ge=-1, le=1_000_000, description="Sequences per batch; -1: the trainer's value.")
    max_batches_offpolicy: int = Field(1, gt=0, le=64, description="Batches queued ahead of the trainer.")
    tokenizer_name: str = Field("hermes-rl/char", description="Tokenizer of the policy model.")
    use_wandb: bool = Field(True, description="Mirror metrics to W&B (offline without a key).")
    rollout_server_url: str = Field("http://localhost:8000", description="Trajectory API address.")
    total_steps: int = Field(1000, gt=0, le=10_000_000, description="Trainer steps in the run.")
    wandb_name: str | None = Field(None, description="W&B run name.")
    num_rollouts_to_keep: int = Field(32, ge=0, le=100_000, description="Rollouts kept for W&B tables.")
    num_rollouts_per_group_for_logging: int = Field(1, ge=-1, le=1024, description="Rollouts per group logged; -1 for all.")
    ensure_scores_are_not_same: bool = Field(True, description="Drop groups whose scores are all equal.")
    data_path_to_save_groups: str | None = Field(None, description="JSONL file to write scored groups to.")
    min_items_sent_before_logging: int = Field(2, ge=0, le=1_000_000, description="Items sent before metrics are logged.")
    include_messages: bool = Field(False, description="Send chat messages with scored groups.")
    min_batch_allocation: float | None = Field(None, ge=0, le=1, description="Minimum share of every batch for this env.")
    worker_timeout: float = Field(600, gt=0, le=86_400, description="Seconds before a stuck worker is abandoned.")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of item generation and sampling.")


class APIServerConfig(BaseModel):
    """An OpenAI-compatible policy endpoint the environment asks for completions."""

    model_config = ConfigDict(extra="allow")

    model_name: str = "default"
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = Field(120, gt=0, le=3600, description="Seconds a completion request may take.")
    num_max_requests_at_once: int = Field(512, ge=1, le=65536, description="Requests in flight at once.")
    num_requests_for_eval: int = Field(64, ge=1, le=65536, description="Requests in flight during evaluation.")
    server_type: str = "openai"


PROMPT_MASK = -100
"""The ``masks`` entry of a token the policy did not generate (prompt, environment turns): the
trainer does not train on it. A generated token's entry is its token id."""

PROMPT_LOGPROB = 1.0
"""The ``inference_logprobs`` entry of a prompt token: a placeholder, as Atropos sends it."""

PURPOSE_HEADER = "X-Hermes-RL-Purpose"
"""HTTP header of a policy request the environment makes while it evaluates (value
``evaluation``): the run's policy server then samples the policy alone, with no exploration.
Any other OpenAI-compatible server ignores it."""

ScoredDataGroup = dict[str, Any]
"""One group on the wire: ``tokens``, ``masks``, ``scores`` and optional ``inference_logprobs``,
``messages``, ``overrides``, ``group_overrides``, ``advantages``, ``ref_logprobs``."""

Item = Any
