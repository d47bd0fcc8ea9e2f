"""A test environment that a random tiny model can improve on: emit one given string.

One fixed prompt; a completion scores the share of its characters that belong to runs of
``target`` (default "#"). Every completion has the same length (``completion_tokens``), so the
engine compiles each shape once. Used by the tinker backend's end-to-end and learning tests.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup


class EmitTextConfig(BaseEnvConfig):
    target: str = Field("#", min_length=1, max_length=8, description="The string rewarded in completions.")
    completion_tokens: int = Field(8, ge=1, le=64, description="Tokens sampled per completion.")


def share_of_target(text: str, target: str) -> float:
    return text.count(target) * len(target) / len(text) if text else 0.0


class EmitTextEnv(BaseEnv):
    """Emit a given string as often as possible (single turn; tests the tinker backend)."""

    name = "emit_text"
    env_config_cls = EmitTextConfig

    @classmethod
    def config_init(cls) -> tuple[EmitTextConfig, list[APIServerConfig]]:
        config = EmitTextConfig(
            group_size=8, batch_size=8, total_steps=20, steps_per_eval=10, max_token_length=64,
            max_batches_offpolicy=1, use_wandb=False, wandb_name="emit_text",
        )
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.messages = [{"role": "user", "content": f"Write {self.config.target} many times."}]
        self.rewards: list[float] = []

    async def get_next_item(self) -> int:
        return 0

    async def collect_trajectories(self, item: int) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.messages, n=self.config.group_size, max_tokens=self.config.completion_tokens)
        scores = [share_of_target(c.text, self.config.target) for c in group.completions]
        self.rewards.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        group = await self.policy.chat(self.messages, n=8, max_tokens=self.config.completion_tokens)
        scores = [share_of_target(c.text, self.config.target) for c in group.completions]
        metrics = {"eval/percent_correct": sum(scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.rewards:
            metrics["train/percent_correct"] = sum(self.rewards) / len(self.rewards)
            self.rewards = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    EmitTextEnv.cli()
