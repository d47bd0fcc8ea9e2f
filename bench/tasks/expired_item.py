"""Pick the one food in the fridge that is past its use-by date (selection).

"Today is 14 May. In the fridge I have milk (use by 16 May), ham (use by 11 May) and eggs (use
by 20 May). Which one is past its use-by date?" -> "ham". Each fridge holds three or four foods
with use-by dates in the same month as today; exactly one date is before today and the others
are after it, so the answer is never in doubt. Fridges are drawn at random and asked under three
phrasings; a tenth of them, chosen by a SHA-256 hash of the fridge (today and the foods with
their dates, whatever the phrasing), are held out for evaluation, so the policy must compare
days, not memorise fridges. A completion scores 1.0 when it names the expired food (case,
spacing and a final full stop aside) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FOODS = (
    "milk", "yoghurt", "ham", "cheese", "eggs", "butter", "cream", "hummus", "chicken",
    "salmon", "tofu", "salad", "juice", "soup", "pesto", "bacon", "sausages", "custard",
)
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
TEMPLATES = (
    "Today is {today}. In the fridge I have {listing}. Which one is past its use-by date?",
    "It's {today} and I'm clearing out the fridge: {listing}. Which one has expired? Just name it.",
    "Which of these has gone out of date, if today is {today}? {listing}",
)
MAX_TOKENS = max(len(food) for food in FOODS) + 4


def held_out(fridge: str) -> bool:
    return hashlib.sha256(fridge.encode()).digest()[0] % 10 == 0


def listing(foods: list[tuple[str, str]]) -> str:
    parts = [f"{food} (use by {date})" for food, date in foods]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(fridge, prompt, expired food) for ``count`` distinct fridges on the chosen side of the split."""
    rng = random.Random(f"expired_item:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        month = rng.choice(MONTHS)
        today = rng.randint(8, 20)
        foods = rng.sample(FOODS, rng.randint(3, 4))
        days = [rng.randint(today - 7, today - 1)] + rng.sample(range(today + 1, today + 9), len(foods) - 1)
        expired = foods[0]
        pairs = list(zip(foods, (f"{day} {month}" for day in days)))
        rng.shuffle(pairs)
        fridge = f"{today} {month}: {listing(pairs)}"
        if fridge in found or held_out(fridge) != evaluation:
            continue
        prompt = rng.choice(TEMPLATES).format(today=f"{today} {month}", listing=listing(pairs))
        found[fridge] = (fridge, prompt, expired)
    return list(found.values())


def normalise(text: str) -> str:
    return " ".join(text.split()).removesuffix(".").lower()


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == normalise(target) else 0.0


class ExpiredItemEnv(BaseEnv):
    """Name the food whose use-by date has passed (single turn, selection)."""

    name = "expired_item"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=288, use_wandb=False)
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
    ExpiredItemEnv.cli()
