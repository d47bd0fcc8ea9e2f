"""Pick the word that belongs to a category: "Which of these is a fruit: bus, plum, green?" ->
"plum" (selection by meaning).

Categories are colour, animal, fruit and vehicle, eight fixed words each. An item names one
category and lists three words in random order: one from that category and two from two
different other categories. A tenth of the items, chosen by a SHA-256 hash, are held out for
evaluation (every word also appears in training items). A completion scores 1.0 for the word
of the category, after .strip(), and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CATEGORIES = {
    "a colour": "red blue green pink brown black white grey".split(),
    "an animal": "dog cat horse cow pig sheep goat lion".split(),
    "a fruit": "apple pear plum grape lemon mango peach cherry".split(),
    "a vehicle": "car bus train bike truck boat van tram".split(),
}

Item = tuple[str, tuple[str, str, str], str]  # (category, words in order, answer)


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"{item[0]}: {', '.join(item[1])}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"pick_category:{seed}")
    names = list(CATEGORIES)
    found: dict[Item, None] = {}
    while len(found) < count:
        category = rng.choice(names)
        others = rng.sample([n for n in names if n != category], 2)
        answer = rng.choice(CATEGORIES[category])
        words = [answer] + [rng.choice(CATEGORIES[o]) for o in others]
        rng.shuffle(words)
        item = (category, (words[0], words[1], words[2]), answer)
        if held_out(item) == evaluation:
            found[item] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class PickCategoryEnv(BaseEnv):
    """Name the one word of three that belongs to the category asked (single turn)."""

    name = "pick_category"

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
        return [{"role": "user", "content": f"Which of these is {item[0]}: {', '.join(item[1])}?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=10)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=10, temperature=0.0)
            return exact(group.completions[0].text, item[2])

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
    PickCategoryEnv.cli()
