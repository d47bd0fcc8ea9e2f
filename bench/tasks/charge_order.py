"""Put gadgets in order of how much battery they have left (ordering).

"Battery check: phone 45%, laptop 12%, tablet 80%, earbuds 30%. What order should I charge them
in, emptiest first?" -> "laptop, earbuds, phone, tablet".
Most phrasings ask for the emptiest first (what to plug in first); some ask for the fullest
first (what to grab for a trip); the wording always says which. The reply lists the gadgets'
names as the prompt writes them, separated by ", ". Items come from a seeded generator: three
to five different gadgets with different charge levels from 1% to 99%, written in one of three
styles ("phone 45%", "phone at 45%", "phone: 45%"), under eight phrasings. A tenth of the
contents (the gadgets with their levels and the direction asked), chosen by a SHA-256 hash, are
held out for evaluation, so none is trained on under any listing order or phrasing. Evaluation
is greedy and exact. Training gives partial credit: the share of characters right position by
position against the answer, over the longer of reply and answer, so a list whose first names
are right scores more than one that is wrong from the start.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, NamedTuple

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

GADGETS = (
    "phone", "laptop", "tablet", "watch", "headphones", "e-reader", "speaker", "camera", "earbuds",
    "power bank", "toothbrush", "drone", "torch", "controller", "shaver", "radio",
)
LOW_FIRST = (
    "Battery check: {listing}. What order should I charge them in, emptiest first?",
    "Only one charger in the hotel room. {listing}. List them from lowest battery to highest so I know what to plug in first.",
    "Which order do I charge these, lowest first? {listing}",
    "Can you sort these by battery, the flattest one first? {listing}",
    "Before bed: {listing}. Put them in order from least charge to most.",
)
HIGH_FIRST = (
    "Heading out and I'll grab whatever has the most charge. {listing}. Put them in order from fullest to emptiest.",
    "Sort these by battery, highest first: {listing}",
    "Which has the most battery left? Order them from most charged to least: {listing}",
)
STYLES = ("{name} {level}%", "{name} at {level}%", "{name}: {level}%")
MAX_ITEMS = 5
MAX_ANSWER = sum(sorted((len(g) for g in GADGETS), reverse=True)[:MAX_ITEMS]) + 2 * (MAX_ITEMS - 1)
MAX_TOKENS = MAX_ANSWER + 4


class Example(NamedTuple):
    key: str  # what the held-out split hashes: the gadgets with their levels, and the direction
    prompt: str
    answer: str


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_example(rng: random.Random) -> Example:
    count = rng.randint(3, MAX_ITEMS)
    names = rng.sample(GADGETS, count)
    levels = rng.sample(range(1, 100), count)
    pairs = list(zip(names, levels))
    low_first = rng.random() < 0.6
    ordered = sorted(pairs, key=lambda p: p[1], reverse=not low_first)
    style = rng.choice(STYLES)
    listing = ", ".join(style.format(name=n, level=v) for n, v in pairs)
    template = rng.choice(LOW_FIRST if low_first else HIGH_FIRST)
    key = ("low|" if low_first else "high|") + ";".join(f"{n}={v}" for n, v in sorted(pairs))
    return Example(key, template.format(listing=listing), ", ".join(n for n, _ in ordered))


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Example]:
    """``count`` items with distinct contents, all held out (evaluation) or none."""
    rng = random.Random(f"charge_order:{seed}")
    found: dict[str, Example] = {}
    for _ in range(200 * count):
        if len(found) == count:
            break
        example = make_example(rng)
        if held_out(example.key) == evaluation and example.key not in found:
            found[example.key] = example
    else:
        raise RuntimeError(f"could not draw {count} distinct items")
    return list(found.values())


def exact(reply: str, answer: str) -> float:
    return 1.0 if reply.strip() == answer else 0.0


def char_share(reply: str, answer: str) -> float:
    """Characters right position by position, over the longer of reply and answer."""
    reply = reply.strip()
    longest = max(len(reply), len(answer))
    if longest == 0:
        return 1.0
    return sum(a == b for a, b in zip(reply, answer)) / longest


class ChargeOrderConfig(BaseEnvConfig):
    train_items: int = Field(6000, gt=0, le=100_000, description="Distinct training items generated at setup.")
    eval_items: int = Field(200, gt=0, le=10_000, description="Distinct held-out items evaluated.")


class ChargeOrderEnv(BaseEnv):
    """Order gadgets by battery level, in the direction asked (single turn, ordering)."""

    name = "charge_order"
    env_config_cls = ChargeOrderConfig

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []
        self.scores: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = ChargeOrderConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=352, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_items, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_items, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Example:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Example) -> list[dict[str, str]]:
        return [{"role": "user", "content": item.prompt}]

    async def collect_trajectories(self, item: Example) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [char_share(c.text, item.answer) for c in group.completions]
        self.correct.extend(exact(c.text, item.answer) for c in group.completions)
        self.scores.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Example) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return exact(group.completions[0].text, item.answer)

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            metrics["train/mean_score"] = sum(self.scores) / len(self.scores)
            self.correct, self.scores = [], []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    ChargeOrderEnv.cli()
