"""List shop items from cheapest to most expensive (ordering).

"Sort these by price, cheapest first: milk $2.49, bread $1.99, eggs $3.20. Just give me the
names, separated by commas." -> "bread, milk, eggs".
Each prompt prices three or four different groceries (all prices distinct, $0.50 to $9.99) in
random order, under three phrasings. A tenth of the priced sets, chosen by a SHA-256 hash of the
sorted "name price" pairs, are held out (in every order and phrasing) for evaluation, so the
policy must compare the prices, not memorise lists. A completion scores 1.0 when it is exactly
the names in price order, joined by ", ", and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

GROCERIES = (
    "milk", "bread", "eggs", "butter", "cheese", "rice", "pasta", "coffee", "tea", "apples",
    "bananas", "yogurt", "honey", "jam", "cereal", "flour", "sugar", "juice", "chicken", "soup",
    "beans", "oats", "crackers", "tomatoes", "onions", "potatoes", "lettuce", "carrots",
)
TEMPLATES = (
    "Sort these by price, cheapest first: {items}. Just give me the names, separated by commas.",
    "I'm comparing prices at the shop: {items}. Can you list them from cheapest to most expensive? Names only, comma-separated.",
    "Order these from lowest to highest price: {items}. Only the item names please, with commas between them.",
)
MAX_TOKENS = 40


def held_out(priced: list[str]) -> bool:
    return hashlib.sha256(",".join(sorted(priced)).encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """``count`` distinct (priced set, prompt, ordered names) items on the chosen side of the split."""
    rng = random.Random(f"price_order:{seed}")
    found: dict[tuple[str, str, str], None] = {}
    while len(found) < count:
        size = rng.randint(3, 4)
        names = rng.sample(GROCERIES, size)
        cents = rng.sample(range(50, 1000), size)
        priced = [f"{name} ${c // 100}.{c % 100:02d}" for name, c in zip(names, cents)]
        if held_out(priced) != evaluation:
            continue
        answer = ", ".join(name for _, name in sorted(zip(cents, names)))
        prompt = rng.choice(TEMPLATES).format(items=", ".join(priced))
        found[(",".join(sorted(priced)), prompt, answer)] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class PriceOrderEnv(BaseEnv):
    """Put priced groceries in order from cheapest to dearest (single turn)."""

    name = "price_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=288, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
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
    PriceOrderEnv.cli()
