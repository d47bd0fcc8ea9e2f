"""Pick the one dish on a short menu that leaves out an ingredient someone can't eat (selection).

"My friend can't eat mushrooms. The menu: Mushroom risotto (rice, mushrooms, onion, cheese),
Beef stew (...), ... Which dish can she have?" -> the name of the only dish without mushrooms.
A menu lists three to five dishes, with their ingredients, from a pool of forty; all of them but
one contain the ingredient. Menus are drawn at random; a tenth of the possible menus (the
ingredient and the set of dishes, whatever their order), chosen by a SHA-256 hash, are held out
for evaluation, so the policy must read the ingredient lists, not memorise menus. A completion
scores 1.0 when it names the right dish (case and a final full stop aside) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

DISHES = {
    "Mushroom risotto": ("rice", "mushrooms", "onion", "garlic", "cheese"),
    "Beef stew": ("beef", "carrots", "onion", "potatoes", "celery"),
    "Margherita pizza": ("flour", "tomato", "cheese", "basil"),
    "Pad thai": ("rice noodles", "eggs", "peanuts", "prawns", "chilli"),
    "Greek salad": ("tomato", "cucumber", "olives", "onion", "cheese"),
    "Chicken curry": ("chicken", "onion", "garlic", "coconut", "chilli"),
    "Spanish omelette": ("eggs", "potatoes", "onion"),
    "Vegetable stir fry": ("rice noodles", "bell peppers", "mushrooms", "garlic", "sesame"),
    "Tomato soup": ("tomato", "onion", "garlic", "cream"),
    "Fish and chips": ("fish", "flour", "potatoes"),
    "Chilli con carne": ("beef", "beans", "tomato", "onion", "chilli"),
    "Caesar salad": ("lettuce", "chicken", "cheese", "eggs", "bread"),
    "Spinach lasagne": ("pasta", "spinach", "cheese", "tomato", "garlic"),
    "Prawn cocktail": ("prawns", "lettuce", "lemon", "tomato"),
    "Satay chicken": ("chicken", "peanuts", "coconut", "garlic"),
    "Stuffed peppers": ("bell peppers", "rice", "onion", "cheese", "tomato"),
    "Mushroom soup": ("mushrooms", "onion", "cream", "celery"),
    "Egg fried rice": ("rice", "eggs", "peas", "onion", "sesame"),
    "Thai green curry": ("chicken", "coconut", "chilli", "bell peppers", "basil"),
    "Shepherd's pie": ("lamb", "potatoes", "carrots", "onion", "peas"),
    "Falafel wrap": ("chickpeas", "bread", "lettuce", "tomato", "sesame"),
    "Pesto pasta": ("pasta", "basil", "garlic", "cheese"),
    "Baked potato with beans": ("potatoes", "beans", "cheese"),
    "Salmon teriyaki": ("fish", "rice", "sesame", "garlic"),
    "Quiche": ("eggs", "cream", "flour", "spinach", "cheese"),
    "Minestrone": ("beans", "pasta", "tomato", "carrots", "celery"),
    "Hummus plate": ("chickpeas", "sesame", "lemon", "garlic", "bread"),
    "Paella": ("rice", "prawns", "chicken", "bell peppers", "peas"),
    "Coconut dal": ("lentils", "coconut", "onion", "spinach", "chilli"),
    "Fajitas": ("chicken", "bell peppers", "onion", "chilli", "bread"),
    "Tuna nicoise": ("fish", "eggs", "olives", "potatoes", "beans"),
    "Spaghetti bolognese": ("pasta", "beef", "tomato", "onion", "carrots"),
    "Mushroom stroganoff": ("mushrooms", "cream", "onion", "rice"),
    "Garlic prawns": ("prawns", "garlic", "chilli", "lemon", "bread"),
    "Ratatouille": ("aubergine", "bell peppers", "tomato", "onion", "olives"),
    "Peanut noodle salad": ("rice noodles", "peanuts", "carrots", "cucumber", "sesame"),
    "Lemon chicken": ("chicken", "lemon", "garlic", "potatoes"),
    "Cheese omelette": ("eggs", "cheese", "butter"),
    "Lentil soup": ("lentils", "carrots", "onion", "celery", "lemon"),
    "Tofu curry": ("tofu", "coconut", "spinach", "chilli", "rice"),
}
# ingredients a person may avoid; none of them hides inside another listed ingredient
AVOIDED = (
    "mushrooms", "onion", "garlic", "tomato", "cheese", "peanuts", "chilli", "coconut", "bell peppers",
    "prawns", "sesame", "olives", "celery", "spinach", "lemon", "potatoes", "carrots",
)
PEOPLE = (
    ("My friend", "she"), ("My dad", "he"), ("My little brother", "he"), ("My flatmate", "she"),
    ("My grandmother", "she"), ("One of our guests", "they"), ("My boss", "he"), ("My daughter", "she"),
)
REASONS = ("can't eat", "is allergic to", "really doesn't like", "won't touch")
TEMPLATES = (
    "{person} {reason} {ingredient}. Here's the menu:\n{menu}\nWhich dish can {pronoun} have? Just tell me the name.",
    "We're ordering lunch and {person_lower} {reason} {ingredient}. The options are:\n{menu}\nWhich one should I get for {object}?",
    "Looking at this menu:\n{menu}\n{person} {reason} {ingredient}. Which dish is safe to order?",
)
OBJECTS = {"she": "her", "he": "him", "they": "them"}
MAX_TOKENS = 32


def key_of(ingredient: str, dishes: list[str]) -> str:
    return ingredient + "|" + "|".join(sorted(dishes))


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(key, prompt, answer) for ``count`` distinct menus of one split."""
    rng = random.Random(f"safe_dish:{seed}:{evaluation}")
    found: dict[str, tuple[str, str, str]] = {}
    attempts = 0
    while len(found) < count and attempts < 200 * count:
        attempts += 1
        ingredient = rng.choice(AVOIDED)
        with_it = [d for d, parts in DISHES.items() if ingredient in parts]
        without = [d for d, parts in DISHES.items() if ingredient not in parts]
        size = rng.randint(3, 5)
        if len(with_it) < size - 1:
            continue
        safe = rng.choice(without)
        dishes = rng.sample(with_it, size - 1) + [safe]
        key = key_of(ingredient, dishes)
        if held_out(key) != evaluation or key in found:
            continue
        rng.shuffle(dishes)
        menu = "\n".join(f"- {d}: {', '.join(DISHES[d])}" for d in dishes)
        person, pronoun = rng.choice(PEOPLE)
        prompt = rng.choice(TEMPLATES).format(
            person=person, person_lower=person[0].lower() + person[1:], pronoun=pronoun, object=OBJECTS[pronoun],
            reason=rng.choice(REASONS), ingredient=ingredient, menu=menu,
        )
        found[key] = (key, prompt, safe)
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip().rstrip(".").lower() == target.lower() else 0.0


class SafeDishEnv(BaseEnv):
    """Name the only dish on a menu without a given ingredient (single turn, selection)."""

    name = "safe_dish"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=512, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(4000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
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
    SafeDishEnv.cli()
