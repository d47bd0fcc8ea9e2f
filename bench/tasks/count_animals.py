"""Count the animals in a list of five words: "How many of these are animals: cat, lamp, horse,
cup, fox?" -> "3" (counting).

Items are five different common English nouns in random order, drawn from twenty animals and
twenty-five household objects (no word that could be either, like "mouse" or "bat"), with one
to four animals (each count equally likely). A tenth of the word lists, chosen by a SHA-256
hash, are held out for evaluation (every word also appears in training items). A completion
scores 1.0 when, after .strip(), it is the number of animals written in digits, and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ANIMALS = """
cat dog horse cow sheep goat pig fox wolf bear lion tiger rabbit camel deer frog duck owl eagle
zebra
""".split()
OBJECTS = """
lamp cup chair table spoon book hat coat door window pencil bottle clock bucket brick shoe
candle basket pillow ladder kettle plate rope key mirror
""".split()

Item = tuple[str, str, str, str, str]


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"animals among {', '.join(item)}".encode()).digest()[0] % 10 == 0


def answer(item: Item) -> str:
    return str(sum(word in ANIMALS for word in item))


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"count_animals:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        animals = rng.randint(1, 4)
        words = rng.sample(ANIMALS, animals) + rng.sample(OBJECTS, 5 - animals)
        rng.shuffle(words)
        item = tuple(words)
        if held_out(item) == evaluation:  # type: ignore[arg-type]
            found[item] = None  # type: ignore[index]
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class CountAnimalsEnv(BaseEnv):
    """Say how many of five words name animals (single turn)."""

    name = "count_animals"

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
        return [{"role": "user", "content": f"How many of these are animals: {', '.join(item)}?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4)
        scores = [exact(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0)
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
    CountAnimalsEnv.cli()
