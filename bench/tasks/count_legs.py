"""Count the legs of a group of animals of two kinds (counting).

The prompt is e.g. "There are 3 cows and 2 ducks in the yard. How many legs are there
altogether?" and the answer is "16". Animals are two-legged birds (chicken, duck, goose),
four-legged mammals (cow, dog, cat, horse, sheep, pig, goat), six-legged insects (ant, beetle)
and spiders; an item has two different kinds, one to five of each, in either order. A tenth of
the (pair of kinds, counts) combinations, chosen by CRC-32 of the combination regardless of
order, are held out for evaluation (150 of them are used). A reply scores 1.0 when, stripped
and without a final period, it is exactly the total, and 0 otherwise.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

# name: (plural, legs)
ANIMALS = {
    "chicken": ("chickens", 2),
    "duck": ("ducks", 2),
    "goose": ("geese", 2),
    "cow": ("cows", 4),
    "dog": ("dogs", 4),
    "cat": ("cats", 4),
    "horse": ("horses", 4),
    "sheep": ("sheep", 4),
    "pig": ("pigs", 4),
    "goat": ("goats", 4),
    "ant": ("ants", 6),
    "beetle": ("beetles", 6),
    "spider": ("spiders", 8),
}
COUNTS = range(1, 6)

Item = tuple[str, int, str, int]  # (first animal, how many, second animal, how many)


def key(item: Item) -> str:
    a, na, b, nb = item
    return ":".join(f"{x}={n}" for x, n in sorted(((a, na), (b, nb))))


def held_out(item: Item) -> bool:
    return zlib.crc32(key(item).encode()) % 10 == 0


def all_items() -> list[Item]:
    return [(a, na, b, nb) for a in ANIMALS for b in ANIMALS if a != b for na in COUNTS for nb in COUNTS]


def total(item: Item) -> int:
    a, na, b, nb = item
    return na * ANIMALS[a][1] + nb * ANIMALS[b][1]


def phrase(animal: str, n: int) -> str:
    return f"{n} {animal if n == 1 else ANIMALS[animal][0]}"


def score(reply: str, item: Item) -> float:
    return 1.0 if reply.strip().rstrip(".").strip() == str(total(item)) else 0.0


class CountLegsEnv(BaseEnv):
    """Count the legs of some animals of two kinds (single turn, counting)."""

    name = "count_legs"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i)]
        held = [i for i in items if held_out(i)]
        self.eval_items = random.Random(f"count_legs:{self.config.seed}").sample(held, min(150, len(held)))
        self.rng = random.Random(self.config.seed)
        self.max_tokens = 6  # at most 2 digits (5 * 8 + 5 * 6 = 70)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        a, na, b, nb = item
        verb = "is" if na == 1 else "are"
        text = f"There {verb} {phrase(a, na)} and {phrase(b, nb)} in the yard. How many legs are there altogether?"
        return [{"role": "user", "content": text}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=self.max_tokens)
        scores = [score(c.text, item) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=self.max_tokens, temperature=0.0)
            return score(group.completions[0].text, item)

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
    CountLegsEnv.cli()
