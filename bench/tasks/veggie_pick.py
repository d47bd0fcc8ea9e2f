"""Pick the one vegetarian dish out of a short menu (selection).

"My sister is vegetarian. Which of these can she eat: chicken curry, lentil soup or beef pie?"
-> "lentil soup". Dishes are an ingredient and a kind of dish; exactly one offered dish has no
meat or fish in it, and the others have meat or fish (chicken, salmon, chorizo ...). A tenth of
the vegetarian dishes, chosen by a SHA-256 hash, are held out for evaluation: an evaluation
menu's answer is never the answer to a training menu, so the policy must go by the ingredient,
not memorise dishes. A completion scores 1.0 when it names the vegetarian dish (capitals, extra
spaces, a leading "the" and a final full stop are forgiven) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

VEGETARIAN = ("mushroom", "spinach", "lentil", "tomato", "pumpkin", "chickpea", "halloumi", "bean",
              "aubergine", "sweet potato", "cauliflower", "pea")
MEAT_OR_FISH = ("chicken", "beef", "pork", "lamb", "bacon", "ham", "duck", "turkey", "sausage",
                "salmon", "prawn", "chorizo")
DISHES = ("soup", "pie", "curry", "wrap", "pasta", "burger", "stew", "salad")
TEMPLATES = (
    "My sister is vegetarian. Which of these can she eat: {menu}?",
    "Which dish on this menu is vegetarian? {menu}",
    "We're ordering for a vegetarian friend. Out of {menu}, which one should we get?",
)


def held_out(dish: str) -> bool:
    return hashlib.sha256(dish.encode()).digest()[0] % 10 == 0


def listed(options: list[str]) -> str:
    return ", ".join(options[:-1]) + " or " + options[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """(prompt, vegetarian dish) menus of three or four dishes, exactly one vegetarian."""
    rng = random.Random(f"veggie_pick:{seed}:{evaluation}")
    found: dict[tuple[str, str], None] = {}
    while len(found) < count:
        answer = f"{rng.choice(VEGETARIAN)} {rng.choice(DISHES)}"
        if held_out(answer) != evaluation:
            continue
        others: set[str] = set()
        size = rng.randint(3, 4)
        while len(others) < size - 1:
            others.add(f"{rng.choice(MEAT_OR_FISH)} {rng.choice(DISHES)}")
        menu = sorted(others) + [answer]
        rng.shuffle(menu)
        found[(rng.choice(TEMPLATES).format(menu=listed(menu)), answer)] = None
    return list(found)


def normalise(text: str) -> str:
    text = " ".join(text.lower().split()).rstrip(".").strip()
    return text[4:] if text.startswith("the ") else text


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == target else 0.0


MAX_TOKENS = max(len(v) for v in VEGETARIAN) + 1 + max(len(d) for d in DISHES) + 4


class VeggiePickEnv(BaseEnv):
    """Name the vegetarian dish on a menu (single turn, selection)."""

    name = "veggie_pick"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
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
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(scores)
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
    VeggiePickEnv.cli()
