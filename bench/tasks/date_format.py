"""Rewrite a date given as YYYY-MM-DD in the form DD/MM/YYYY (string map).

Example: "Write the date 2021-07-04 as DD/MM/YYYY." -> "04/07/2021". Items are calendar dates
from 1990-01-01 to 2029-12-31 (about 14,600 of them). A tenth of the dates, chosen by a SHA-256
hash, are held out for evaluation (every year, month and day also appears in training dates). A
completion scores 1.0 when, after .strip(), it is exactly the rewritten date (two-digit day and
month, four-digit year, slashes) and 0 otherwise.
"""

from __future__ import annotations

import datetime
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FIRST = datetime.date(1990, 1, 1)
DAYS = (datetime.date(2029, 12, 31) - FIRST).days + 1

Item = str  # the date as YYYY-MM-DD


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"date_format {item}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"date_format:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        item = (FIRST + datetime.timedelta(days=rng.randrange(DAYS))).isoformat()
        if held_out(item) == evaluation:
            found[item] = None
    return list(found)


def answer(item: Item) -> str:
    year, month, day = item.split("-")
    return f"{day}/{month}/{year}"


def score(text: str, item: Item) -> float:
    return 1.0 if text.strip() == answer(item) else 0.0


class DateFormatEnv(BaseEnv):
    """Rewrite a YYYY-MM-DD date as DD/MM/YYYY (single turn)."""

    name = "date_format"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Item:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Write the date {item} as DD/MM/YYYY."}]

    async def collect_trajectories(self, item: Item) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [score(c.text, item) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0)
            return score(group.completions[0].text, item)

        scores = await gather_bounded((one(item) for item in self.eval_items), self.config.max_eval_workers)
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
    DateFormatEnv.cli()
