"""Say whether a triangle with the given side lengths is equilateral, isosceles or scalene (classification).

Example: "A triangle has sides 7, 7 and 12. Is it equilateral, isosceles or scalene?" ->
"isosceles". The reply is constrained to one of those three words (guided_choice). Sides are
whole numbers from 2 to 60 forming a valid triangle (the longest side is shorter than the other
two together), shown in random order; equilateral has all three sides equal, isosceles exactly
two, scalene none. Training draws the label evenly, then an item of it (there are only a few
dozen equilateral triangles, so those repeat). A tenth of the side triples, chosen by a SHA-256
hash, are held out for evaluation; the held-out set has every equilateral triangle held out and
equal numbers of isosceles and scalene ones. A completion scores 1.0 when, after .strip(), it is
the right word and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["equilateral", "isosceles", "scalene"]
LOW, HIGH = 2, 60

Item = tuple[int, int, int]  # the sides as shown


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"triangle_type {item[0]} {item[1]} {item[2]}".encode()).digest()[0] % 10 == 0


def answer(item: Item) -> str:
    distinct = len(set(item))
    return "equilateral" if distinct == 1 else "isosceles" if distinct == 2 else "scalene"


def valid(sides: list[int]) -> bool:
    a, b, c = sorted(sides)
    return a + b > c


def random_triangle(rng: random.Random, label: str) -> Item:
    while True:
        if label == "equilateral":
            side = rng.randint(LOW, HIGH)
            sides = [side, side, side]
        elif label == "isosceles":
            equal, other = rng.sample(range(LOW, HIGH + 1), 2)
            sides = [equal, equal, other]
        else:
            sides = rng.sample(range(LOW, HIGH + 1), 3)
        if valid(sides):
            rng.shuffle(sides)
            return (sides[0], sides[1], sides[2])


def make_items(count: int, *, seed: int, evaluation: bool) -> dict[str, list[Item]]:
    """Items by label: every equilateral triangle on this side of the split, and count // 2
    distinct isosceles and scalene ones each."""
    rng = random.Random(f"triangle_type:{seed}")
    items: dict[str, list[Item]] = {
        "equilateral": [(s, s, s) for s in range(LOW, HIGH + 1) if held_out((s, s, s)) == evaluation]
    }
    for label in ("isosceles", "scalene"):
        found: dict[Item, None] = {}
        while len(found) < count // 2:
            item = random_triangle(rng, label)
            if held_out(item) == evaluation:
                found[item] = None
        items[label] = list(found)
    return items


def score(text: str, item: Item) -> float:
    return 1.0 if text.strip() == answer(item) else 0.0


class TriangleTypeEnv(BaseEnv):
    """Answer equilateral, isosceles or scalene for a triangle's three sides (single turn, guided choice)."""

    name = "triangle_type"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        by_label = make_items(200, seed=self.config.seed, evaluation=True)
        self.eval_items = [item for label in LABELS for item in by_label[label]]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Item:
        return self.rng.choice(self.train_items[self.rng.choice(LABELS)])

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        a, b, c = item
        return [{"role": "user", "content": f"A triangle has sides {a}, {b} and {c}. Is it equilateral, isosceles or scalene?"}]

    async def collect_trajectories(self, item: Item) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=13, guided_choice=LABELS)
        scores = [score(c.text, item) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=13, temperature=0.0, guided_choice=LABELS)
            return score(group.completions[0].text, item)

        scores = await gather_bounded((one(item) for item in self.eval_items), self.config.max_eval_workers)
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
    TriangleTypeEnv.cli()
