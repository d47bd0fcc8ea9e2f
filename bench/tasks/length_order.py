"""Put three words in order from shortest to longest (ordering).

"Put these words in order from shortest to longest: banana, fig, apple." -> "fig, apple, banana".
The three words have different lengths (3 to 8 letters) and come from a fixed list of everyday
nouns; a tenth of the prompts (word triples in their given order), chosen by a SHA-256 hash, are
held out for evaluation, and every word also appears in training prompts. The answer is split on
commas and spaces; a completion scores the share of the three positions holding the right word,
divided by the number of words written when that is more than three (1.0 only for the exact
order).
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

WORDS = {
    3: ("cat", "dog", "sun", "cup", "hat", "pen", "box", "bus", "egg", "fig", "map", "owl"),
    4: ("lamp", "tree", "fish", "door", "milk", "ship", "kite", "bell", "rose", "frog", "coat", "bear"),
    5: ("apple", "chair", "bread", "river", "horse", "cloud", "table", "lemon", "spoon", "train", "house", "tiger"),
    6: ("banana", "garden", "pencil", "bottle", "window", "rabbit", "basket", "candle", "carrot", "jacket", "bridge", "forest"),
    7: ("blanket", "chicken", "kitchen", "teacher", "pumpkin", "dolphin", "rainbow", "balloon", "library", "sweater", "lantern", "cabbage"),
    8: ("elephant", "mountain", "sandwich", "umbrella", "computer", "airplane", "dinosaur", "necklace", "notebook", "squirrel", "hospital", "treasure"),
}
TEMPLATES = (
    "Put these words in order from shortest to longest: {words}.",
    "Sort by length, shortest first: {words}.",
    "Can you order these from the shortest word to the longest? {words}",
)
MAX_ANSWER = 6 + 7 + 8 + 4  # the three longest lengths and two ", " separators


def held_out(words: tuple[str, ...]) -> bool:
    return hashlib.sha256(",".join(words).encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, list[str]]]:
    rng = random.Random(f"length_order:{seed}")
    found: dict[tuple[str, ...], str] = {}
    while len(found) < count:
        lengths = rng.sample(sorted(WORDS), 3)
        words = tuple(rng.choice(WORDS[n]) for n in lengths)
        if words in found or held_out(words) != evaluation:
            continue
        found[words] = rng.choice(TEMPLATES).format(words=", ".join(words))
    return [(text, sorted(words, key=len)) for words, text in found.items()]


def order_score(answer: str, target: list[str]) -> float:
    written = [w for w in re.split(r"[,\s]+", answer.strip().rstrip(".")) if w]
    if not written:
        return 0.0
    right = sum(a == t for a, t in zip(written, target))
    return right / max(len(written), len(target))


class LengthOrderEnv(BaseEnv):
    """Order three words by length, shortest first (single turn, partial credit per position)."""

    name = "length_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(4000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_ANSWER + 3)
        scores = [order_score(c.text, item[1]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_ANSWER + 3, temperature=0.0)
            return order_score(group.completions[0].text, item[1])

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
    LengthOrderEnv.cli()
