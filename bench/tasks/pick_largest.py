"""Name the largest of four digits: "Which number is largest: 4 9 2 7?" -> "9" (selection).

Items are the ordered lists of four distinct digits; a tenth of them, chosen by CRC-32, are held
out for evaluation. A completion scores 1.0 for the largest digit and 0 otherwise.
"""

from __future__ import annotations

import itertools
import random
import zlib
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup


def held_out(digits: tuple[int, ...]) -> bool:
    return zlib.crc32(bytes(digits)) % 10 == 0


def all_items() -> list[tuple[int, ...]]:
    return list(itertools.permutations(range(10), 4))


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class PickLargestEnv(BaseEnv):
    """Name the largest of four digits (single turn)."""

    name = "pick_largest"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=64, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i)]
        self.eval_items = [i for i in items if held_out(i)][:200]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Which number is largest: {' '.join(map(str, item))}?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        messages = self.prompt(item)
        group = await self.policy.chat(messages, n=self.config.group_size, max_tokens=3)
        scores = [exact(c.text, str(max(item))) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=3, temperature=0.0)
            return exact(group.completions[0].text, str(max(item)))

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    PickLargestEnv.cli()
