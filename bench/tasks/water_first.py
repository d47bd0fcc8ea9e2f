"""Pick the houseplant that was watered longest ago (selection).

"I keep forgetting my houseplants. I watered the fern 3 days ago, the basil 9 days ago and the
orchid yesterday. Which one has gone longest without water?" -> "basil". Items are drawn by a
seeded generator: three to five different plants, each last watered a different number of days
ago (1 to 21, one day said as "yesterday"), under one of four phrasings. The answer is the
plant's name as the prompt writes it, without "the". A tenth of the plant lists, chosen by a
SHA-256 hash of the plants and their days, are held out for evaluation under every phrasing.
Evaluation is greedy and exact; in training a reply scores the share of characters right
position by position, over the longer of reply and answer, so a policy trained from scratch can
learn.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

PLANTS = (
    "fern", "basil", "orchid", "cactus", "ivy", "mint", "aloe", "rosemary", "peace lily", "spider plant",
    "snake plant", "rubber plant", "begonia", "geranium", "jade plant", "pothos", "yucca", "lavender",
    "tomato plant", "monstera", "bonsai", "parsley",
)
MAX_TOKENS = max(len(p) for p in PLANTS) + 3  # the longest answer and a little


def when(days: int) -> str:
    return "yesterday" if days == 1 else f"{days} days ago"


def listing(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def key(plants: list[tuple[str, int]]) -> str:
    return ";".join(f"{p}:{d}" for p, d in plants)


def held_out(content: str) -> bool:
    return hashlib.sha256(content.encode()).digest()[0] % 10 == 0


def make_prompt(rng: random.Random, plants: list[tuple[str, int]]) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        watered = listing([f"the {p} {when(d)}" for p, d in plants])
        return f"I keep forgetting my houseplants. I watered {watered}. Which one has gone longest without water?"
    if kind == 1:
        log = ", ".join(f"{p} {when(d)}" for p, d in plants)
        return f"Watering log: {log}. Which plant did I water longest ago?"
    if kind == 2:
        (p0, d0), rest = plants[0], plants[1:]
        others = listing([f"the {p} {when(d)}" for p, d in rest])
        return (f"My neighbour is plant-sitting and wants to start with whichever plant has been dry the longest. "
                f"The {p0} last got water {when(d0)}, {others}. Which one is it?")
    lines = "\n".join(f"- {p}: {when(d)}" for p, d in plants)
    return f"When did I last water each plant?\n{lines}\nWhich one has waited longest for a drink?"


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """``count`` distinct (prompt, answer) items, from the held-out lists or from the others."""
    rng = random.Random(f"water_first:{seed}")
    found: dict[str, str] = {}
    while len(found) < count:
        size = rng.randint(3, 5)
        plants = list(zip(rng.sample(PLANTS, size), rng.sample(range(1, 22), size)))
        if held_out(key(plants)) != evaluation:
            continue
        answer = max(plants, key=lambda pd: pd[1])[0]
        found.setdefault(make_prompt(rng, plants), answer)
    return list(found.items())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


def char_share(answer: str, target: str) -> float:
    """The share of positions where reply and answer agree, over the longer of the two."""
    reply = answer.strip()
    longest = max(len(reply), len(target))
    if longest == 0:
        return 1.0
    return sum(x == y for x, y in zip(reply, target)) / longest


class WaterFirstEnv(BaseEnv):
    """Name the plant watered longest ago (single turn, selection)."""

    name = "water_first"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(5000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [char_share(c.text, item[1]) for c in group.completions]
        self.correct.extend(exact(c.text, item[1]) for c in group.completions)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return exact(group.completions[0].text, item[1])

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
    WaterFirstEnv.cli()
