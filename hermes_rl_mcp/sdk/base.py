"""The environment SDK: an Atropos-compatible ``BaseEnv`` and its configuration.

Method names, signatures and config fields mirror atroposlib's so that an environment written
for one runs on the other. This module is imported by environment files and by the config
introspection child process, so it stays light: no MCP, no W&B, no HTTP at import time.
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # the client pulls in httpx; environments get it lazily through ``policy``
    from hermes_rl_mcp.sdk.policy_client import PolicyClient


class BaseEnvConfig(BaseModel):
    """Fields every environment has. Defaults follow atroposlib."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    group_size: int = Field(4, gt=0, le=1024, description="Completions sampled and scored together per item.")
    max_num_workers: int = Field(-1, ge=-1, le=65536, description="Concurrent item workers; -1 lets the runtime decide.")
    max_eval_workers: int = Field(16, gt=0, le=4096, description="Concurrent evaluation workers.")
    max_num_workers_per_node: int = Field(8, gt=0, le=4096, description="Worker cap per node.")
    steps_per_eval: int = Field(100, gt=0, le=1_000_000, description="Trainer steps between evaluations.")
    max_token_length: int = Field(2048, gt=0, le=1_048_576, description="Longest sequence (prompt + completion) in tokens.")
    eval_handling: Literal["STOP_TRAIN", "LIMIT_TRAIN", "NONE"] = Field("STOP_TRAIN", description="What training does while an evaluation runs.")
    eval_limit_ratio: float = Field(0.5, ge=0, le=1, description="Share of workers kept for training during eval.")
    inference_weight: float = Field(1.0, ge=0, le=1000, description="Weight of this environment in batch allocation.")
    batch_size: int = Field(-1, ge=-1, le=1_000_000, description="Sequences per trainer batch; -1 takes the trainer's value.")
    max_batches_offpolicy: int = Field(3, gt=0, le=64, description="Batches that may be queued ahead of the trainer.")
    tokenizer_name: str = Field("hermes-rl/char", description="Tokenizer of the policy model.")
    use_wandb: bool = Field(True, description="Mirror metrics to Weights & Biases (offline without a key).")
    rollout_server_url: str = Field("http://localhost:8000", description="Trajectory API address.")
    total_steps: int = Field(1000, gt=0, le=10_000_000, description="Trainer steps in the run.")
    wandb_name: str | None = Field(None, description="W&B run name.")
    num_rollouts_to_keep: int = Field(32, ge=0, le=100_000, description="Rollouts kept for W&B tables.")
    num_rollouts_per_group_for_logging: int = Field(1, ge=-1, le=1024, description="Rollouts per group logged; -1 for all.")
    ensure_scores_are_not_same: bool = Field(True, description="Drop groups whose scores are all equal.")
    data_path_to_save_groups: str | None = Field(None, description="JSONL file to write scored groups to.")
    min_items_sent_before_logging: int = Field(2, ge=0, le=1_000_000, description="Items sent before metrics are logged.")
    include_messages: bool = Field(False, description="Send the chat messages with each scored group.")
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
    num_requests_for_eval: int = Field(64, ge=1, le=65536, description="Requests in flight at once during evaluation.")
    server_type: str = "openai"


ScoredDataGroup = dict[str, Any]
"""One group on the wire: ``tokens``, ``masks``, ``scores`` and optional ``inference_logprobs``,
``messages``, ``overrides``, ``group_overrides``, ``advantages``, ``ref_logprobs``."""

Item = Any


class BaseEnv(abc.ABC):
    """An RL environment: hands out items, collects and scores groups of completions, evaluates.

    Subclasses set ``name`` and ``env_config_cls`` and implement the abstract methods. Either
    ``collect_trajectories`` (a whole group at once) or ``collect_trajectory`` (one rollout,
    called ``group_size`` times) is overridden.
    """

    name: ClassVar[str | None] = None
    env_config_cls: ClassVar[type[BaseEnvConfig]] = BaseEnvConfig
    # Trainer settings this environment suggests (``trainer.*`` field -> value): a run selected
    # through the MCP server starts from them; a trainer started by hand reads its YAML only.
    trainer_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        config: BaseEnvConfig,
        server_configs: list[APIServerConfig],
        slurm: bool = False,
        testing: bool = False,
    ) -> None:
        self.config = config
        self.server_configs = server_configs
        self.slurm = slurm
        self.testing = testing

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        """The environment's own defaults; they override the config class's field defaults."""
        return cls.env_config_cls(), [APIServerConfig()]

    @abc.abstractmethod
    async def setup(self) -> None:
        """Load or generate data. Called once before the first item."""

    @abc.abstractmethod
    async def get_next_item(self) -> Item:
        """The next training item."""

    async def collect_trajectories(self, item: Item) -> tuple[ScoredDataGroup | None, list[Item]]:
        """Generate and score a group for ``item``; return it and any backlog items."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement collect_trajectories or collect_trajectory"
        )

    async def collect_trajectory(self, item: Item) -> tuple[Any, list[Item]]:
        """Generate one rollout for ``item``; the runtime calls it ``group_size`` times."""
        raise NotImplementedError

    @abc.abstractmethod
    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        """Run the held-out evaluation and log its metrics."""

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        """Log metrics; the runtime routes them to metrics.jsonl and W&B.

        Subclasses add their own metrics and call ``super().wandb_log(metrics)``. Without a
        runtime attached (tests, notebooks) the metrics are simply not recorded.
        """
        sink: Callable[[dict[str, float]], None] | None = getattr(self, "metrics_sink", None)
        if sink is not None and wandb_metrics:
            sink(dict(wandb_metrics))

    # -- runtime hooks -------------------------------------------------------------------------

    @property
    def policy(self) -> PolicyClient:
        """The client of the policy endpoints in ``server_configs``, created on first use."""
        client = self.__dict__.get("_policy_client")
        if client is None:
            from hermes_rl_mcp.sdk.policy_client import PolicyClient

            client = PolicyClient(self.server_configs, temperature=getattr(self, "temperature", 1.0))
            self.__dict__["_policy_client"] = client
        return client

    @policy.setter
    def policy(self, client: PolicyClient) -> None:
        self.__dict__["_policy_client"] = client

    @classmethod
    def cli(cls) -> None:
        """Entry point of a runnable environment file: ``serve``, ``process`` or ``evaluate``."""
        from hermes_rl_mcp.runs.lifeline import watch_supervisor

        watch_supervisor()  # under a supervisor, end with it (and end the run's other processes)
        import hermes_rl_mcp.sdk.api_client  # noqa: F401 - imported before the gate, see below
        import hermes_rl_mcp.sdk.policy_client  # noqa: F401
        from hermes_rl_mcp.sdk.runtime import main
        from hermes_rl_mcp.start_gate import wait_for_predecessor

        wait_for_predecessor()  # imports done; under a supervisor, start once the policy answers
        sys.exit(main(cls, sys.argv[1:]))
