"""Count the things of one colour in a short list (counting).

"In the box there is a red sock, a blue mug, a red pen and a green hat. How many red things are
there?" -> "2".
Each list names four to seven different everyday things, each with a colour from a list of six,
and the question asks about one colour, which appears zero to seven times (each thing has that
colour with probability 0.4). Each list is asked under one of three phrasings. A tenth of the
lists, chosen by a SHA-256 hash of the list and the colour asked about, are held out for
evaluation, so the policy must count, not memorise answers. The answer is the count in digits;
a completion scores 1.0 when it is exactly that number and 0 otherwise; evaluation is greedy
and exact.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

COLORS = ("red", "blue", "green", "yellow", "black", "white")
THINGS = (
    "sock", "hat", "scarf", "mug", "pen", "ball", "cup", "book", "shirt", "bag",
    "towel", "lamp", "kite", "glove", "plate", "comb", "box", "spoon", "candle", "pencil",
)
TEMPLATES = (
    "In the box there is {things}. How many {color} things are there?",
    "My shopping bag holds {things}. How many of them are {color}?",
    "On the shelf: {things}. Count the {color} ones.",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def listing(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(list key, prompt, count) for ``count`` distinct lists on one side of the split."""
    rng = random.Random(f"count_color:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        color = rng.choice(COLORS)
        others = [c for c in COLORS if c != color]
        things = rng.sample(THINGS, rng.randint(4, 7))
        colors = [color if rng.random() < 0.4 else rng.choice(others) for _ in things]
        parts = [f"a {c} {t}" for c, t in zip(colors, things)]
        key = f"{color}: " + ", ".join(parts)
        if key in found or held_out(key) != evaluation:
            continue
        prompt = rng.choice(TEMPLATES).format(things=listing(parts), color=color)
        found[key] = (key, prompt, str(colors.count(color)))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class CountColorEnv(BaseEnv):
    """Count the things of one colour (single turn, counting)."""

    name = "count_color"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

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
    CountColorEnv.cli()
