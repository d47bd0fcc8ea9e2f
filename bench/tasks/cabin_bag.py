"""Pick the one bag that is within the airline's cabin allowance (selection).

"Cabin bags on my flight can be at most 55 cm. Options: the red suitcase at 62 cm, the blue
backpack at 48 cm and the green holdall at 58 cm. Which one can I bring? Just the colour." ->
"blue". Each prompt lists three to five bags of different colours, measured by height (cm) or
weight (kg); exactly one is within the limit. Prompts come in several phrasings. A tenth of the
items, chosen by a SHA-256 hash of the limit and bags, are held out for evaluation. A reply
scores 1.0 when, of the colours in the prompt, it names only the right one, and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

COLOURS = ("red", "blue", "green", "black", "grey", "yellow", "orange", "purple", "pink", "navy", "silver", "white", "brown", "teal")
KINDS = ("suitcase", "backpack", "holdall", "wheelie bag", "duffel bag", "tote")
TEMPLATES = {
    "cm": (
        "My airline lets me take one cabin bag up to {limit} cm tall. I've got {bags}. Which one can I take?",
        "Cabin bags on my flight can be at most {limit} cm. Options: {bags}. Which one can I bring? Just the colour.",
        "The hand luggage limit is {limit} cm and I own {bags}. Which of them fits?",
        "flying tomorrow, max cabin bag height is {limit}cm. measured mine: {bags}. which colour do i pack?",
    ),
    "kg": (
        "The carry-on allowance is {limit} kg. Packed, {bags}. Which one is within the limit?",
        "I can only bring {limit} kg into the cabin. Weighed them at home: {bags}. Which bag can I take on board?",
        "Hand luggage can't be over {limit} kg on this airline. I've got {bags}. Which one's OK? Colour only please.",
    ),
}
LIMITS = {"cm": (40, 45, 50, 55, 56), "kg": (7, 8, 10, 12)}


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def measure(rng: random.Random, unit: str, limit: int, fits: bool) -> str:
    if unit == "cm":
        return str(limit - rng.randint(2, 12) if fits else limit + rng.randint(2, 15))
    value = limit - rng.randint(3, 30) / 10 if fits else limit + rng.randint(2, 40) / 10
    return f"{value:.1f}"


def describe(bags: list[tuple[str, str, str]], unit: str, style: int) -> str:
    if style == 0:
        parts = [f"a {c} {k} ({v} {unit})" for c, k, v in bags]
    elif style == 1:
        parts = [f"the {c} {k} at {v} {unit}" for c, k, v in bags]
    else:
        parts = [f"{c} {k} {v}{unit}" for c, k, v in bags]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(key, prompt, right colour, colours in the prompt) items, held out or not."""
    rng = random.Random(f"cabin_bag:{seed}")
    found: dict[str, tuple[str, str, str, tuple[str, ...]]] = {}
    while len(found) < count:
        unit = rng.choice(("cm", "kg"))
        limit = rng.choice(LIMITS[unit])
        size = rng.randint(3, 5)
        colours = rng.sample(COLOURS, size)
        right = rng.randrange(size)
        bags = [(c, rng.choice(KINDS), measure(rng, unit, limit, i == right)) for i, c in enumerate(colours)]
        key = f"{unit}:{limit}:" + ";".join(f"{c},{k},{v}" for c, k, v in bags)
        if held_out(key) != evaluation:
            continue
        prompt = rng.choice(TEMPLATES[unit]).format(limit=limit, bags=describe(bags, unit, rng.randrange(3)))
        found.setdefault(key, (key, prompt, colours[right], tuple(colours)))
    return list(found.values())


def score(text: str, answer: str, colours: tuple[str, ...]) -> float:
    words = set(re.findall(r"[a-z]+", text.lower()))
    named = words & set(colours)
    return 1.0 if named == {answer} else 0.0


class CabinBagEnv(BaseEnv):
    """Choose the bag that fits the cabin allowance (selection)."""

    name = "cabin_bag"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [score(c.text, item[2], item[3]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0)
            return score(group.completions[0].text, item[2], item[3])

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
    CabinBagEnv.cli()
