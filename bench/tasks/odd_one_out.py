"""Pick the word that does not belong with the others (selection).

"Find the odd one out: pear, mango, hammer, grape." -> "hammer".
Each list holds three or four words of one everyday category (fruit, vegetables, animals,
colours, vehicles, instruments, furniture, clothes, sports, tools) and one word of another, in
random order, asked under three phrasings. A tenth of the word sets, chosen by a SHA-256 hash of
the sorted words, are held out (in every order and phrasing) for evaluation, so the policy must
learn the categories, not memorise lists. A completion scores 1.0 when it is exactly the odd
word and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CATEGORIES = {
    "fruit": ("apple", "banana", "pear", "mango", "grape", "kiwi", "pineapple", "strawberry", "melon", "raspberry"),
    "vegetables": ("carrot", "potato", "onion", "cabbage", "spinach", "celery", "lettuce", "broccoli", "leek", "radish"),
    "animals": ("dog", "cat", "horse", "cow", "sheep", "rabbit", "goat", "pig", "lion", "tiger", "bear", "zebra"),
    "colours": ("red", "blue", "green", "yellow", "purple", "pink", "brown", "grey", "white", "black"),
    "vehicles": ("car", "bus", "bicycle", "train", "truck", "tram", "scooter", "van", "taxi", "ferry"),
    "instruments": ("piano", "guitar", "violin", "drum", "flute", "trumpet", "cello", "harp", "banjo", "ukulele"),
    "furniture": ("chair", "table", "sofa", "bed", "desk", "shelf", "stool", "wardrobe", "dresser", "bench"),
    "clothes": ("shirt", "jacket", "sock", "scarf", "hat", "coat", "dress", "sweater", "glove", "skirt"),
    "sports": ("tennis", "football", "golf", "hockey", "rugby", "cricket", "baseball", "volleyball", "swimming", "boxing"),
    "tools": ("hammer", "saw", "drill", "wrench", "screwdriver", "pliers", "chisel", "spanner", "mallet", "trowel"),
}
TEMPLATES = (
    "Which one doesn't belong: {words}?",
    "Find the odd one out: {words}.",
    "My son's homework asks for the odd one out in this list: {words}. Which word is it?",
)
MAX_TOKENS = 14


def held_out(words: list[str]) -> bool:
    return hashlib.sha256(",".join(sorted(words)).encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """``count`` distinct (word set, prompt, odd word) items on the chosen side of the split."""
    rng = random.Random(f"odd_one_out:{seed}")
    names = sorted(CATEGORIES)
    found: dict[tuple[str, str, str], None] = {}
    while len(found) < count:
        common, other = rng.sample(names, 2)
        odd = rng.choice(CATEGORIES[other])
        words = rng.sample(CATEGORIES[common], rng.randint(3, 4)) + [odd]
        if held_out(words) != evaluation:
            continue
        rng.shuffle(words)
        prompt = rng.choice(TEMPLATES).format(words=", ".join(words))
        found[(",".join(sorted(words)), prompt, odd)] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class OddOneOutEnv(BaseEnv):
    """Name the one word in a list that is not of the others' kind (single turn)."""

    name = "odd_one_out"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
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
    OddOneOutEnv.cli()
