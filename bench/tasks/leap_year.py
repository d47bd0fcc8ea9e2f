"""Say whether a year is a leap year, answering yes or no through guided_choice (classification).

The prompt is "Is 1996 a leap year?" -> "yes"; "Is 1900 a leap year?" -> "no". The Gregorian
rule decides: divisible by 4, except years divisible by 100 that are not divisible by 400.
Years run from 1600 to 2400; a tenth of them, chosen by CRC-32, are held out for evaluation.
Answers are constrained to the two labels. A completion scores 1.0 for the right label and 0
otherwise.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["yes", "no"]
YEARS = range(1600, 2401)


def is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def held_out(year: int) -> bool:
    return zlib.crc32(str(year).encode()) % 10 == 0


def all_items() -> list[tuple[int, str]]:
    return [(year, "yes" if is_leap(year) else "no") for year in YEARS]


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class LeapYearEnv(BaseEnv):
    """Tell whether a year is a leap year (single turn, guided_choice)."""

    name = "leap_year"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
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
        return [{"role": "user", "content": f"Is {item[0]} a leap year?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=5, guided_choice=LABELS)
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=5, guided_choice=LABELS, temperature=0.0)
            return exact(group.completions[0].text, item[1])

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
    LeapYearEnv.cli()
