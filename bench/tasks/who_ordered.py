"""Say which diner at a table ordered a given dish (selection).

"Nina ordered the soup, Omar ordered the salad and Jo ordered the pasta. Who ordered the salad?"
-> "Omar". Each table has three diners with distinct names and three distinct dishes, told under
three phrasings; the question names one of the dishes. A tenth of the tables (diners, dishes and
the dish asked about), chosen by a SHA-256 hash, are held out for evaluation, so the policy must
read the order off the prompt. A completion scores 1.0 when it is the diner's name and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Nina", "Omar", "Jo", "Lena", "Paul", "Mia", "Raj", "Eva", "Tom", "Sara",
    "Ben", "Ida", "Leo", "Kim", "Ali", "Rosa", "Finn", "Zoe", "Hugo", "Ana",
)
DISHES = (
    "soup", "salad", "pasta", "burger", "steak", "pizza", "curry", "risotto",
    "omelette", "fish", "tacos", "lasagne", "noodles", "chili", "quiche",
)
TEMPLATES = (
    "{a} ordered the {x}, {b} ordered the {y} and {c} ordered the {z}. Who ordered the {q}?",
    "At our table {a} had the {x}, {b} had the {y} and {c} had the {z}. The waiter is holding the {q}. Whose is it?",
    "Order for table 4: {a} - {x}; {b} - {y}; {c} - {z}. Who gets the {q}?",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(key, prompt, name) for ``count`` distinct tables."""
    rng = random.Random(f"who_ordered:{seed}")
    found: dict[str, tuple[str, str]] = {}
    while len(found) < count:
        names = rng.sample(NAMES, 3)
        dishes = rng.sample(DISHES, 3)
        asked = rng.randrange(3)
        key = f"{','.join(names)}|{','.join(dishes)}|{dishes[asked]}"
        if key in found or held_out(key) != evaluation:
            continue
        prompt = rng.choice(TEMPLATES).format(
            a=names[0], b=names[1], c=names[2], x=dishes[0], y=dishes[1], z=dishes[2], q=dishes[asked]
        )
        found[key] = (prompt, names[asked])
    return [(key, prompt, name) for key, (prompt, name) in found.items()]


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


MAX_REPLY = max(len(n) for n in NAMES) + 4


class WhoOrderedEnv(BaseEnv):
    """Name the diner who ordered a dish (single turn, selection)."""

    name = "who_ordered"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_REPLY)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_REPLY, temperature=0.0)
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
    WhoOrderedEnv.cli()
