"""Minutes to the next hour: "It is 7:40. How many minutes until 8:00?" -> "20" (clock arithmetic).

Items are the times h:mm with h from 1 to 11 and mm from 01 to 59; a tenth, chosen by a
SHA-256 hash, are held out for evaluation. A completion scores 1.0 for the minutes left and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

Item = tuple[int, int]  # (hour, minute)


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"clock {item[0]}:{item[1]:02d}".encode()).digest()[0] % 10 == 0


def all_items(*, evaluation: bool) -> list[Item]:
    return [(h, m) for h in range(1, 12) for m in range(1, 60) if held_out((h, m)) == evaluation]


def answer(item: Item) -> str:
    return str(60 - item[1])


class MinutesLeftEnv(BaseEnv):
    """Say how many minutes are left until the next full hour (single turn)."""

    name = "minutes_left"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = all_items(evaluation=False)
        self.eval_items = all_items(evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        hour, minute = item
        return [{"role": "user", "content": f"It is {hour}:{minute:02d}. How many minutes until {hour + 1}:00?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4)
        scores = [1.0 if c.text.strip() == answer(item) else 0.0 for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0)
            return 1.0 if group.completions[0].text.strip() == answer(item) else 0.0

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
    MinutesLeftEnv.cli()
