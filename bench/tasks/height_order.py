"""List people from shortest to tallest given their heights (ordering).

Example: "Heights: Ana 165 cm, Ben 172 cm, Cara 158 cm. List the names from shortest to tallest,
separated by commas." -> "Cara, Ana, Ben". Each item has three or four different names from a
pool of twenty-four, with different heights from 150 to 195 cm, in random order. A tenth of the
items, chosen by a SHA-256 hash, are held out for evaluation (every name also appears in
training items). A completion scores 1.0 when, after .strip(), splitting it at the commas and
stripping each piece gives exactly the names in order from shortest to tallest ("Cara,Ana,Ben"
counts as "Cara, Ana, Ben"), and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Ana Ben Cara Dan Elsa Finn Greta Hugo Ines Jonas Kemal Lara Marco Nadia Oskar Priya Quinn Rosa "
    "Sven Tomas Ulla Victor Wanda Yusuf"
).split()

Item = tuple[tuple[str, int], ...]  # (name, height in cm) pairs as shown


def held_out(item: Item) -> bool:
    text = ", ".join(f"{name} {cm}" for name, cm in item)
    return hashlib.sha256(f"height_order {text}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"height_order:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        size = rng.choice((3, 4))
        item = tuple(zip(rng.sample(NAMES, size), rng.sample(range(150, 196), size)))
        if held_out(item) == evaluation:
            found[item] = None
    return list(found)


def answer(item: Item) -> str:
    return ", ".join(name for name, _ in sorted(item, key=lambda pair: pair[1]))


def score(text: str, item: Item) -> float:
    return 1.0 if [piece.strip() for piece in text.strip().split(",")] == answer(item).split(", ") else 0.0


class HeightOrderEnv(BaseEnv):
    """List three or four people from shortest to tallest (single turn)."""

    name = "height_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Item:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        heights = ", ".join(f"{name} {cm} cm" for name, cm in item)
        return [{"role": "user", "content": f"Heights: {heights}. List the names from shortest to tallest, separated by commas."}]

    async def collect_trajectories(self, item: Item) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=32)
        scores = [score(c.text, item) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=32, temperature=0.0)
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
    HeightOrderEnv.cli()
