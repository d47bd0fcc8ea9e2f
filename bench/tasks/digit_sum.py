"""Add up the digits of a number: "Digit sum of 4713?" -> "15" (a number computed from the prompt's).

Items are the numbers 10 to 9999; a tenth, chosen by a SHA-256 hash, are held out for
evaluation. A completion scores 1.0 for the right sum and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup


def held_out(n: int) -> bool:
    return hashlib.sha256(f"digit sum {n}".encode()).digest()[0] % 10 == 0


def digit_sum(n: int) -> str:
    return str(sum(int(d) for d in str(n)))


class DigitSumEnv(BaseEnv):
    """Say the sum of a number's digits (single turn)."""

    name = "digit_sum"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        numbers = range(10, 10000)
        self.train_items = [n for n in numbers if not held_out(n)]
        self.eval_items = [n for n in numbers if held_out(n)][:200]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(n: int) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Digit sum of {n}?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=3)
        scores = [1.0 if c.text.strip() == digit_sum(item) else 0.0 for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(n: int) -> float:
            group = await self.policy.chat(self.prompt(n), n=1, max_tokens=3, temperature=0.0)
            return 1.0 if group.completions[0].text.strip() == digit_sum(n) else 0.0

        scores = await gather_bounded((one(n) for n in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    DigitSumEnv.cli()
