"""The environment SDK: an Atropos-compatible ``BaseEnv`` and its configuration.

Method names, signatures and config fields mirror atroposlib's so that an environment written
for one runs on the other. This module is imported by environment files and by the config
introspection child process, so it stays light: no MCP, no W&B, no HTTP at import time.
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from hermes_rl_mcp.sdk.env_types import APIServerConfig, BaseEnvConfig, Item, ScoredDataGroup

__all__ = ["APIServerConfig", "BaseEnv", "BaseEnvConfig", "Item", "ScoredDataGroup"]

if TYPE_CHECKING:  # the client pulls in httpx; environments get it lazily through ``policy``
    from hermes_rl_mcp.sdk.policy_client import PolicyClient


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
        from hermes_rl_mcp.sdk.runtime import main

        # Under a supervisor, main waits for the policy endpoint only after the environment's own
        # setup: imports and setup overlap with the start of the trajectory API and the trainer.
        sys.exit(main(cls, sys.argv[1:]))
