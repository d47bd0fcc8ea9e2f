"""Say which part of the day a clock time falls in, through guided_choice (classification).

"It is 14:35. Is it morning, afternoon, evening or night?" -> "afternoon". Times are written on
the 24-hour clock as hh:mm. The parts are fixed here: morning from 05:00 to 11:59, afternoon
from 12:00 to 16:59, evening from 17:00 to 20:59 and night from 21:00 to 04:59. Items are all
1,440 minutes of the day; a tenth, chosen by a SHA-256 hash, are held out for evaluation.
Answers are constrained to the four labels; a completion scores 1.0 for the right one and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["morning", "afternoon", "evening", "night"]


def held_out(time: str) -> bool:
    return hashlib.sha256(f"time of day {time}".encode()).digest()[0] % 10 == 0


def all_items(*, evaluation: bool) -> list[str]:
    times = [f"{h:02d}:{m:02d}" for h in range(24) for m in range(60)]
    return [t for t in times if held_out(t) == evaluation]


def answer(time: str) -> str:
    hour = int(time[:2])
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 21:
        return "evening"
    return "night"


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class TimeOfDayEnv(BaseEnv):
    """Label a clock time morning, afternoon, evening or night (single turn, guided_choice)."""

    name = "time_of_day"

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
    def prompt(item: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"It is {item}. Is it morning, afternoon, evening or night?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12, guided_choice=LABELS)
        scores = [exact(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: str) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0, guided_choice=LABELS)
            return exact(group.completions[0].text, answer(item))

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
    TimeOfDayEnv.cli()
