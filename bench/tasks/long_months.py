"""Count how many of the months named have 31 days (counting).

"We're away in March, June and August. How many of those months have 31 days?" -> "2". Three to
five different months are named in a shuffled order; the answer is the number of them with 31
days (January, March, May, July, August, October and December), written in digits. Every set of
three to five months is used; a tenth of the sets, chosen by a SHA-256 hash, are held out (in
every order and phrasing) for evaluation. A completion scores 1.0 when it is exactly the right
number and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

MONTHS = (
    ("January", 31), ("February", 28), ("March", 31), ("April", 30), ("May", 31), ("June", 30),
    ("July", 31), ("August", 31), ("September", 30), ("October", 31), ("November", 30), ("December", 31),
)
DAYS = dict(MONTHS)
TEMPLATES = (
    "We're away in {months}. How many of those months have 31 days?",
    "How many of these months have 31 days: {months}?",
    "My gym charges by the day. Of {months}, how many are 31-day months?",
    "Quick one: {months}. How many of them have 31 days?",
    "I'm working abroad in {months}. How many of those months are 31 days long?",
)


def held_out(months: tuple[str, ...]) -> bool:
    key = ",".join(sorted(months))
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def spoken(months: list[str]) -> str:
    return ", ".join(months[:-1]) + " and " + months[-1]


def all_sets() -> list[tuple[str, ...]]:
    names = [m for m, _ in MONTHS]
    return [s for size in (3, 4, 5) for s in itertools.combinations(names, size)]


def make_item(months: tuple[str, ...], template: int, rng: random.Random) -> tuple[tuple[str, ...], str, str]:
    shown = list(months)
    rng.shuffle(shown)
    count = sum(DAYS[m] == 31 for m in months)
    return months, TEMPLATES[template].format(months=spoken(shown)), str(count)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class LongMonthsEnv(BaseEnv):
    """Count the 31-day months among those named (single turn, counting)."""

    name = "long_months"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        sets = all_sets()
        self.train_sets = [s for s in sets if not held_out(s)]
        eval_rng = random.Random(f"long_months:eval:{self.config.seed}")
        # each held-out set once, in a fixed shuffled order, rotating through the phrasings
        held = [s for s in sets if held_out(s)]
        self.eval_items = [make_item(s, n % len(TEMPLATES), eval_rng) for n, s in enumerate(held)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return make_item(self.rng.choice(self.train_sets), self.rng.randrange(len(TEMPLATES)), self.rng)

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
    LongMonthsEnv.cli()
