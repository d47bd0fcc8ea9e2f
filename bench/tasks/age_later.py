"""Say an age some years on: "Sam is 34 now. How old will Sam be in 7 years?" -> "41" (a sum).

Items are an age from 1 to 80 and a number of years from 1 to 30; a tenth of the pairs, chosen
by a SHA-256 hash, are held out for evaluation (200 of them are evaluated). A completion scores
1.0 for the right age and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

Item = tuple[int, int]  # (age now, years on)


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"age {item[0]} {item[1]}".encode()).digest()[0] % 10 == 0


def all_items(*, evaluation: bool) -> list[Item]:
    return [(age, years) for age in range(1, 81) for years in range(1, 31) if held_out((age, years)) == evaluation]


class AgeLaterEnv(BaseEnv):
    """Say how old someone will be after some years (single turn)."""

    name = "age_later"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = all_items(evaluation=False)
        self.eval_items = random.Random(self.config.seed).sample(all_items(evaluation=True), 200)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Sam is {item[0]} now. How old will Sam be in {item[1]} years?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4)
        scores = [1.0 if c.text.strip() == str(sum(item)) else 0.0 for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0)
            return 1.0 if group.completions[0].text.strip() == str(sum(item)) else 0.0

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
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
    AgeLaterEnv.cli()
