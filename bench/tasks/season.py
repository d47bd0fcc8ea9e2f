"""Name the season a calendar date falls in, answering through guided_choice (classification).

"My birthday is on 14 July. Which season is that, in the northern hemisphere?" -> "summer".
Seasons are the meteorological ones: December to February winter, March to May spring, June to
August summer, September to November autumn. Every day of a 365-day year is asked under three
phrasings; a tenth of the dates, chosen by a SHA-256 hash, are held out (under all phrasings)
for evaluation, so the policy must go by the month, not memorise dates. Answers are constrained
to the four labels; a completion scores 1.0 for the right season and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["winter", "spring", "summer", "autumn"]
MONTHS = (
    ("January", 31, "winter"), ("February", 28, "winter"), ("March", 31, "spring"), ("April", 30, "spring"),
    ("May", 31, "spring"), ("June", 30, "summer"), ("July", 31, "summer"), ("August", 31, "summer"),
    ("September", 30, "autumn"), ("October", 31, "autumn"), ("November", 30, "autumn"), ("December", 31, "winter"),
)
TEMPLATES = (
    "Which season is {date} in, in the northern hemisphere?",
    "My birthday is on {date}. Which season is that, in the northern hemisphere?",
    "We're going to Canada on {date}. What season will it be there?",
)


def held_out(date: str) -> bool:
    return hashlib.sha256(date.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(date, prompt, season) for every date and phrasing."""
    items = []
    for month, days, season in MONTHS:
        for day in range(1, days + 1):
            date = f"{day} {month}"
            for template in TEMPLATES:
                items.append((date, template.format(date=date), season))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class SeasonEnv(BaseEnv):
    """Say which season a date falls in (single turn, guided_choice)."""

    name = "season"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        self.eval_items = [i for i in items if held_out(i[0])]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=8, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=8, guided_choice=LABELS, temperature=0.0)
            return exact(group.completions[0].text, item[2])

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
    SeasonEnv.cli()
