"""Name the cheapest of three priced groceries: "Tea costs $4, jam costs $2 and rice costs $7.
Which is the cheapest?" -> "jam" (selection by a rule).

Items are three different groceries from a list of twenty, in random order, each with a
different whole-dollar price from $1 to $9. A tenth of the items, chosen by a SHA-256 hash, are
held out for evaluation (every grocery and every price also appears in training items). A
completion scores 1.0 for the grocery with the lowest price, after .strip(), and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

GROCERIES = """
tea jam rice milk eggs bread butter cheese apples pasta flour sugar coffee honey onions
carrots beans salt soap lemons
""".split()

Item = tuple[tuple[str, str, str], tuple[int, int, int]]  # (groceries, prices in dollars)


def held_out(item: Item) -> bool:
    priced = ", ".join(f"{g} ${p}" for g, p in zip(*item))
    return hashlib.sha256(f"cheapest of {priced}".encode()).digest()[0] % 10 == 0


def answer(item: Item) -> str:
    return min(zip(*item), key=lambda pair: pair[1])[0]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"cheapest:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        item = (tuple(rng.sample(GROCERIES, 3)), tuple(rng.sample(range(1, 10), 3)))
        if held_out(item) == evaluation:  # type: ignore[arg-type]
            found[item] = None  # type: ignore[index]
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


def costs(grocery: str) -> str:
    return "cost" if grocery.endswith("s") else "costs"


class CheapestEnv(BaseEnv):
    """Name the cheapest of three priced groceries (single turn)."""

    name = "cheapest"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        (a, b, c), (pa, pb, pc) = item
        text = f"{a.capitalize()} {costs(a)} ${pa}, {b} {costs(b)} ${pb} and {c} {costs(c)} ${pc}. Which is the cheapest?"
        return [{"role": "user", "content": text}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=8)
        scores = [exact(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=8, temperature=0.0)
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
    CheapestEnv.cli()
