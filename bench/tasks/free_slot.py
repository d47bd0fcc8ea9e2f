"""Pick the free time out of a day's calendar (selection).

"My calendar for tomorrow: 9am busy, 10:30am free, 1pm busy. When am I free?" -> "10:30am".
A calendar lists three or four times on the half hour between 8am and 5:30pm, in order, each
marked busy or free, with exactly one free. Each calendar is asked under three phrasings; a
tenth of the calendars, chosen by a SHA-256 hash, are held out (under all phrasings) for
evaluation. A completion scores 1.0 when it is the free time exactly as written and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup


def clock(half_hours: int) -> str:
    """Half hours after midnight -> '9am', '10:30am', '12pm', '1:30pm'."""
    hour, half = divmod(half_hours, 2)
    suffix = "am" if hour < 12 else "pm"
    shown = hour if hour <= 12 else hour - 12
    return f"{shown}:30{suffix}" if half else f"{shown}{suffix}"


TIMES = tuple(clock(h) for h in range(16, 36))  # 8am to 5:30pm
TEMPLATES = (
    "My calendar for tomorrow: {calendar}. When am I free?",
    "Here is Sam's day: {calendar}. At what time can I meet Sam?",
    "Which slot is free? {calendar}.",
)
EVAL_SIZE = 300


def held_out(calendar: str) -> bool:
    return hashlib.sha256(calendar.encode()).digest()[0] % 10 == 0


def make_calendars(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """(calendar text, free time), distinct calendars from one side of the split."""
    rng = random.Random(f"free_slot:{seed}:{evaluation}")
    found: dict[str, str] = {}
    while len(found) < count:
        slots = sorted(rng.sample(range(len(TIMES)), rng.choice((3, 4))))
        free = rng.randrange(len(slots))
        calendar = ", ".join(f"{TIMES[s]} {'free' if k == free else 'busy'}" for k, s in enumerate(slots))
        if held_out(calendar) == evaluation:
            found[calendar] = TIMES[slots[free]]
    return list(found.items())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class FreeSlotEnv(BaseEnv):
    """Say which time of a calendar is free (single turn, selection)."""

    name = "free_slot"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.rng = random.Random(self.config.seed)
        self.train_calendars = make_calendars(5000, seed=self.config.seed, evaluation=False)
        eval_rng = random.Random(f"free_slot:eval:{self.config.seed}")
        self.eval_items = [
            (calendar, eval_rng.choice(TEMPLATES).format(calendar=calendar), free)
            for calendar, free in make_calendars(EVAL_SIZE, seed=self.config.seed, evaluation=True)
        ]

    async def get_next_item(self) -> Any:
        calendar, free = self.rng.choice(self.train_calendars)
        return (calendar, self.rng.choice(TEMPLATES).format(calendar=calendar), free)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=10)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=10, temperature=0.0)
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
    FreeSlotEnv.cli()
