"""Pick the one rainy day out of a short weather forecast (selection).

"Here's the forecast: Monday sunny, Tuesday rain, Wednesday cloudy. Which day should I take an
umbrella?" -> "Tuesday". A forecast covers 3 to 5 consecutive days starting on any weekday;
exactly one of them is rain or showers, the others are dry (sunny, cloudy, windy, foggy). A
tenth of the forecasts, chosen by a SHA-256 hash, are held out for evaluation. A reply scores
1.0 when it names the rainy day (case and a final full stop ignored) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DRY = ("sunny", "cloudy", "windy", "foggy")
WET = ("rain", "showers")
TEMPLATES = (
    "Here's the forecast: {forecast}. Which day should I take an umbrella?",
    "Weather this week: {forecast}. On which day is it going to rain?",
    "Forecast for our trip: {forecast}. Which day will be wet?",
)


def held_out(forecast: str) -> bool:
    return hashlib.sha256(forecast.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(forecast, prompt, rainy day) for ``count`` distinct forecasts on one side of the split."""
    rng = random.Random(f"rainy_day:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        start = rng.randrange(7)
        length = rng.randint(3, 5)
        days = [DAYS[(start + k) % 7] for k in range(length)]
        wet = rng.randrange(length)
        weather = [rng.choice(WET) if k == wet else rng.choice(DRY) for k in range(length)]
        forecast = ", ".join(f"{d} {w}" for d, w in zip(days, weather))
        if held_out(forecast) != evaluation or forecast in found:
            continue
        found[forecast] = (forecast, rng.choice(TEMPLATES).format(forecast=forecast), days[wet])
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip().rstrip(".").lower() == target.lower() else 0.0


class RainyDayEnv(BaseEnv):
    """Name the rainy day in a forecast (single turn)."""

    name = "rainy_day"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0)
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
    RainyDayEnv.cli()
