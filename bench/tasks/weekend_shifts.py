"""Count how many shifts on a work rota fall on a weekend (counting).

"My shifts this month: Sat 3, Mon 5, Sun 11, Wed 14. How many of them are on a weekend?" -> "2".
A rota lists 3 to 6 dates of one month in date order, each with its weekday (the month may start
on any weekday); the answer is the number of Saturdays and Sundays among them. A tenth of the
rotas, chosen by a SHA-256 hash, are held out for evaluation. A reply scores 1.0 when it is the
right number in digits and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
TEMPLATES = (
    "My shifts this month: {rota}. How many of them are on a weekend?",
    "Here's my rota: {rota}. How many weekend shifts do I have?",
    "I'm working {rota}. How many of those days are a Saturday or a Sunday?",
)


def held_out(rota: str) -> bool:
    return hashlib.sha256(rota.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(rota, prompt, weekend count) for ``count`` distinct rotas on one side of the split."""
    rng = random.Random(f"weekend_shifts:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        first = rng.randrange(7)  # weekday of the 1st
        dates = sorted(rng.sample(range(1, 31), rng.randint(3, 6)))
        days = [WEEKDAYS[(first + d - 1) % 7] for d in dates]
        rota = ", ".join(f"{day} {date}" for day, date in zip(days, dates))
        if held_out(rota) != evaluation or rota in found:
            continue
        weekend = sum(day in ("Sat", "Sun") for day in days)
        found[rota] = (rota, rng.choice(TEMPLATES).format(rota=rota), str(weekend))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip().rstrip(".") == target else 0.0


class WeekendShiftsEnv(BaseEnv):
    """Count the weekend shifts on a rota (single turn)."""

    name = "weekend_shifts"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0)
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
    WeekendShiftsEnv.cli()
