"""Pick the colour of a garment that comes in the shopper's size (selection).

"I wear a medium. Here's the hoodie I like: the navy one comes in S and XL; the grey one in M and
L; and the olive one in XS and S. Which colour can I get in my size?" -> "grey". Three or four
colours are listed, each with its own sizes; exactly one has the size asked for, which the
prompt names either as a letter (M) or in words (medium). Items are drawn from a seeded random;
a tenth of all possible listings, chosen by a SHA-256 hash of the listing, are held out for
evaluation, so the policy must read the sizes, not remember listings. The answer scores 1.0
when it names the right colour (case, punctuation, a leading "the" and a trailing "one" or
garment name are ignored, "gray" counts as "grey") and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

SIZES = ("XS", "S", "M", "L", "XL")
SIZE_WORDS = {"XS": "extra small", "S": "small", "M": "medium", "L": "large", "XL": "extra large"}
GARMENTS = ("hoodie", "jacket", "T-shirt", "sweater", "dress", "raincoat", "polo shirt", "fleece", "cardigan")
COLOURS = (
    "navy", "grey", "olive", "red", "black", "white", "mustard", "teal", "beige", "maroon",
    "pink", "green", "blue", "brown", "purple", "orange", "cream", "yellow", "lilac", "khaki",
)
TEMPLATES = (
    "I wear {a_word}. Here's the {garment} I like: {options}. Which colour can I get in my size?",
    "I'm buying a {garment} for my brother, he's a size {size}. {Options}. Which colour should I pick?",
    "Which colour of this {garment} is available in {size}? {Options}.",
    "The shop's website says {options}. I need {a_word} {garment}. What colour is that going to be?",
    "My daughter needs a {garment} in {size}. {Options}. Which one can we get?",
)


def join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_item(rng: random.Random) -> tuple[str, str, str]:
    """(key, prompt, colour) for one random listing."""
    garment = rng.choice(GARMENTS)
    size = rng.choice(SIZES)
    colours = rng.sample(COLOURS, rng.randint(3, 4))
    answer = rng.randrange(len(colours))
    others = [s for s in SIZES if s != size]
    listing = []
    for index, colour in enumerate(colours):
        if index == answer:
            chosen = [size] + rng.sample(others, rng.randint(0, 2))
        else:
            chosen = rng.sample(others, rng.randint(1, 3))
        listing.append((colour, sorted(chosen, key=SIZES.index)))
    parts = []
    for index, (colour, sizes) in enumerate(listing):
        verb = "comes in " if index == 0 else "in "
        parts.append(f"the {colour} one {verb}{join(sizes)}")
    options = "; ".join(parts[:-1]) + "; and " + parts[-1]
    template = rng.choice(TEMPLATES)
    prompt = template.format(
        a_word=("an " if SIZE_WORDS[size].startswith("e") else "a ") + SIZE_WORDS[size], size=size, garment=garment, options=options, Options=options[0].upper() + options[1:]
    )
    key = f"{garment}|{size}|" + ";".join(f"{c}:{'/'.join(s)}" for c, s in listing)
    return key, prompt, colours[answer]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    rng = random.Random(f"size_in_stock:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        item = make_item(rng)
        if held_out(item[0]) == evaluation:
            found.setdefault(item[0], item)
    return list(found.values())


def normalise(text: str) -> str:
    words = re.sub(r"[^a-z\- ]", " ", text.lower()).split()
    if words and words[0] == "the":
        words = words[1:]
    while words and (words[-1] == "one" or words[-1] in {w for g in GARMENTS for w in g.lower().split()}):
        words = words[:-1]
    return " ".join("grey" if w == "gray" else w for w in words)


def score(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == target else 0.0


class SizeInStockEnv(BaseEnv):
    """Name the colour that comes in the asked-for size (single turn, selection)."""

    name = "size_in_stock"

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
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [score(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0)
            return score(group.completions[0].text, item[2])

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
    SizeInStockEnv.cli()
