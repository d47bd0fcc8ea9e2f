"""Pick whose birthday comes next after a given day (selection).

"Birthdays in our group: Mia (3 May), Leo (20 June) and Sam (9 March). Today is 1 April. Whose
birthday comes next?" -> "Mia". Three people with different birthdays are listed in a
random order; none has a birthday on the day named as today, and the next one may fall in the
following year (in December, a January birthday is next). Dates are in a 365-day year. Items are
generated at random under five phrasings; a tenth of the (today, people, birthdays)
combinations, chosen by a SHA-256 hash, are held out for evaluation and never trained on. A
completion scores 1.0 when it is exactly the right name and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

MONTHS = (
    ("January", 31), ("February", 28), ("March", 31), ("April", 30), ("May", 31), ("June", 30),
    ("July", 31), ("August", 31), ("September", 30), ("October", 31), ("November", 30), ("December", 31),
)
DATES = [f"{day} {month}" for month, days in MONTHS for day in range(1, days + 1)]  # index = day of year
NAMES = (
    "Mia", "Leo", "Sam", "Ava", "Noah", "Zoe", "Omar", "Lily", "Ben", "Ella", "Raj", "Nina", "Tom", "Ivy",
    "Luca", "Maya", "Finn", "Rosa", "Jack", "Amir", "Grace", "Hugo", "Ines", "Kai", "Lena", "Max", "Nora",
    "Oscar", "Priya", "Ruby", "Theo", "Una", "Yusuf", "Alice", "Dan", "Eva", "Jonas", "Kim", "Sofia", "Wes",
)
TEMPLATES = (
    "Birthdays in our group: {people}. Today is {today}. Whose birthday comes next?",
    "It's {today}. {people} all have birthdays coming. Who's next?",
    "Birthday list: {people}. If today is {today}, who has the next birthday?",
    "Today's {today}. Whose birthday is next: {people}?",
    "Today is {today}. Who gets the next birthday card: {people}?",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def listing(people: list[tuple[str, int]]) -> str:
    parts = [f"{name} ({DATES[day]})" for name, day in people]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def next_one(people: list[tuple[str, int]], today: int) -> str:
    return min(people, key=lambda p: (p[1] - today) % len(DATES))[0]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(key, prompt, name) items whose key is on the requested side of the held-out split."""
    rng = random.Random(f"next_birthday:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        today = rng.randrange(len(DATES))
        size = 3
        days = rng.sample([d for d in range(len(DATES)) if d != today], size)
        people = list(zip(rng.sample(NAMES, size), days))
        key = f"{today}|" + ",".join(f"{n}:{d}" for n, d in sorted(people))
        if held_out(key) != evaluation or key in found:
            continue
        prompt = rng.choice(TEMPLATES).format(people=listing(people), today=DATES[today])
        found[key] = (key, prompt, next_one(people, today))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


MAX_TOKENS = max(len(n) for n in NAMES) + 4


class NextBirthdayEnv(BaseEnv):
    """Name the person whose birthday is the next one after today (single turn, selection)."""

    name = "next_birthday"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(5000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
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
    NextBirthdayEnv.cli()
