"""Pick the one recipe that can be made from what is in the kitchen (selection).

"I've got eggs, milk, cheese, flour and rice at home. Which of these can I make without going
shopping: fried rice (rice, eggs, peas), pancakes (flour, eggs, milk) or tomato soup (tomatoes,
onion, stock)?" -> "pancakes". Each item offers three or four recipes from a catalogue of
everyday dishes, each listed with its ingredients; the kitchen holds every ingredient of exactly
one of them, plus some of the others' ingredients, so the policy must check each recipe against
the whole list rather than look for a single shared ingredient. Items are drawn from a seeded
generator under three phrasings; those whose kitchen and recipes hash (SHA-256) into one tenth
are held out for evaluation and never trained on. Evaluation is exact (greedy; case and a final
full stop aside). Training gives 0.9 times the share of characters right in place unless the
reply is exact, so a reply that starts the name right beats one that names nothing offered.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

RECIPES: dict[str, tuple[str, ...]] = {
    "pancakes": ("flour", "eggs", "milk"),
    "omelette": ("eggs", "cheese", "butter"),
    "tomato soup": ("tomatoes", "onion", "stock"),
    "fried rice": ("rice", "eggs", "peas"),
    "cheese toastie": ("bread", "cheese", "butter"),
    "porridge": ("oats", "milk", "honey"),
    "guacamole": ("avocados", "lime", "onion"),
    "fruit salad": ("apples", "bananas", "grapes"),
    "pesto pasta": ("pasta", "pesto", "parmesan"),
    "scrambled eggs": ("eggs", "butter", "milk"),
    "beans on toast": ("beans", "bread", "butter"),
    "smoothie": ("bananas", "yoghurt", "milk"),
    "garlic bread": ("bread", "garlic", "butter"),
    "potato salad": ("potatoes", "mayonnaise", "chives"),
    "stir fry": ("noodles", "peppers", "soy sauce"),
    "hummus": ("chickpeas", "tahini", "lemon"),
    "rice pudding": ("rice", "milk", "sugar"),
    "greek salad": ("tomatoes", "cucumber", "feta"),
    "jacket potato": ("potatoes", "beans", "cheese"),
    "chicken wraps": ("chicken", "tortillas", "lettuce"),
    "lentil soup": ("lentils", "carrots", "onion"),
    "french toast": ("bread", "eggs", "milk"),
    "coleslaw": ("cabbage", "carrots", "mayonnaise"),
    "banana bread": ("bananas", "flour", "eggs", "sugar"),
    "pasta bake": ("pasta", "tomatoes", "cheese"),
    "egg fried noodles": ("noodles", "eggs", "soy sauce"),
}
INGREDIENTS = sorted({i for ings in RECIPES.values() for i in ings})

PHRASINGS = (
    "I've got {pantry} at home. Which of these can I make without going shopping: {options}?",
    "My kitchen has {pantry}. Which one of these could I cook tonight without buying anything? {options}",
    "Ingredients I have: {pantry}.\nRecipes: {options}.\nWhich recipe can I make with only what I have?",
)


def join(words: list[str], last: str) -> str:
    return ", ".join(words[:-1]) + f" {last} " + words[-1]


def makeable(recipe: str, pantry: set[str]) -> bool:
    return set(RECIPES[recipe]) <= pantry


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_item(rng: random.Random) -> tuple[str, str, str] | None:
    """(key, prompt, answer), or None when the draw does not give exactly one makeable recipe."""
    options = rng.sample(sorted(RECIPES), rng.choice((3, 3, 4)))
    answer = options[0]
    pantry = set(RECIPES[answer])
    # some, never all, of each other recipe's ingredients
    for other in options[1:]:
        missing = [i for i in RECIPES[other] if i not in pantry]
        if not missing:
            return None
        if len(missing) > 1 and rng.random() < 0.8:
            pantry.add(rng.choice(missing))
    for _ in range(rng.randint(0, 2)):
        pantry.add(rng.choice(INGREDIENTS))
    if [o for o in options if makeable(o, pantry)] != [answer]:
        return None
    rng.shuffle(options)
    stock = sorted(pantry)
    rng.shuffle(stock)
    key = "|".join(sorted(pantry)) + "#" + "|".join(sorted(options))
    listed = [f"{o} ({', '.join(RECIPES[o])})" for o in options]
    prompt = rng.choice(PHRASINGS).format(pantry=join(stock, "and"), options=join(listed, "or"))
    return key, prompt, answer


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    rng = random.Random(f"what_to_cook:{seed}:{'eval' if evaluation else 'train'}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        item = make_item(rng)
        if item is not None and held_out(item[0]) == evaluation:
            found.setdefault(item[0], item)
    return list(found.values())


def normalise(answer: str) -> str:
    return answer.strip().rstrip(".").strip().lower()


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == target else 0.0


def partial(answer: str, target: str) -> float:
    """1.0 when exact, else 0.9 times the share of characters right in place."""
    answer = normalise(answer)
    if answer == target:
        return 1.0
    right = sum(a == b for a, b in zip(answer, target))
    return 0.9 * right / max(len(answer), len(target))


MAX_TOKENS = max(len(r) for r in RECIPES) + 6


class WhatToCookConfig(BaseEnvConfig):
    train_size: int = Field(4000, gt=0, description="Distinct training items generated.")
    eval_size: int = Field(200, gt=0, description="Distinct held-out items evaluated.")


class WhatToCookEnv(BaseEnv):
    """Name the one recipe the kitchen has every ingredient for (single turn, selection)."""

    name = "what_to_cook"
    env_config_cls = WhatToCookConfig

    def __init__(self, config: WhatToCookConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[WhatToCookConfig, list[APIServerConfig]]:
        config = WhatToCookConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=448, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_size, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_size, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [partial(c.text, item[2]) for c in group.completions]
        self.correct.extend(exact(c.text, item[2]) for c in group.completions)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
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
    WhatToCookEnv.cli()
