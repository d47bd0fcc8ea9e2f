"""Pick the one word in a list that has the same letter twice in a row (selection).

"Which of these words has the same letter twice in a row: lamp, jelly, rust, fork?" -> "jelly".
Each item lists three to five common words in random order: exactly one has a doubled letter
(two equal letters side by side), the others have none. The answer word is drawn from about a
hundred doubled-letter words; a tenth of those words, chosen by a SHA-256 hash, are held out
and only ever answer evaluation items, so the policy must spot the double letter, not learn
which words are answers. Distractors come from one shared pool. A completion scores 1.0 when it
is the doubled-letter word and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

DOUBLED = (
    "apple", "balloon", "coffee", "dinner", "egg", "butter", "kitten", "letter", "mirror", "pepper",
    "rabbit", "summer", "tennis", "yellow", "puppy", "carrot", "cherry", "hammer", "ladder", "pillow",
    "bottle", "cookie", "door", "floor", "moon", "spoon", "sheep", "tree", "green", "book",
    "food", "wood", "pool", "school", "street", "sleep", "three", "bubble", "puzzle", "little",
    "middle", "happy", "funny", "sunny", "dollar", "button", "cotton", "muffin", "pizza", "jelly",
    "bell", "ball", "wall", "hill", "doll", "shell", "grass", "glass", "dress", "chess",
    "kiss", "cross", "sudden", "hidden", "common", "berry", "sorry", "hurry", "arrow", "narrow",
    "follow", "village", "college", "waffle", "giraffe", "cliff", "stuff", "teeth", "feet", "week",
    "deep", "keep", "seed", "broom", "room", "zoo", "boot", "goose", "kettle", "rubber",
    "supper", "slipper", "pebble", "saddle", "paddle", "cabbage", "carriage", "coffin", "gallon", "fiddle",
)
SINGLE = (
    "lamp", "rust", "fork", "table", "chair", "window", "garden", "river", "pencil", "paper",
    "orange", "banana", "tiger", "horse", "cloud", "stone", "bread", "candle", "basket", "forest",
    "island", "jacket", "lemon", "mango", "nose", "piano", "rocket", "salad", "tomato", "violin",
    "wagon", "zebra", "ocean", "planet", "desert", "camera", "engine", "family", "guitar", "hotel",
    "kitchen", "market", "number", "onion", "parcel", "picnic", "radio", "sugar", "ticket", "uncle",
    "winter", "anchor", "bridge", "castle", "dragon", "feather", "finger", "flower", "gold", "honey",
    "insect", "jungle", "kite", "lion", "magnet", "nest", "owl", "pirate", "pocket", "rain",
    "shadow", "silver", "spider", "storm", "sword", "thunder", "train", "candy", "desk", "dust",
    "farm", "glove", "heart", "lake", "map", "north", "path", "ring", "road", "sand",
    "ship", "sock", "song", "star", "tent", "wind", "wolf", "yard", "bird", "cake",
    "fish", "frog", "goat", "hat", "jam", "king", "leaf", "milk", "plate", "cup",
)
TEMPLATES = (
    "Which of these words has the same letter twice in a row: {words}?",
    "One of these words has a double letter. Which one? {words}",
    "Spot the word with a doubled letter: {words}.",
)
TRAIN_ITEMS = 4000
EVAL_ITEMS_PER_WORD = 15
MAX_ANSWER_CHARS = max(len(w) for w in DOUBLED)


def has_double(word: str) -> bool:
    return any(a == b for a, b in zip(word, word[1:]))


def held_out(word: str) -> bool:
    return hashlib.sha256(word.encode()).digest()[0] % 10 == 0


def make_item(answer: str, rng: random.Random) -> tuple[str, str]:
    """(prompt, answer): the answer among two to four distractors, in random order."""
    words = [answer, *rng.sample(SINGLE, rng.randint(2, 4))]
    rng.shuffle(words)
    return rng.choice(TEMPLATES).format(words=", ".join(words)), answer


def all_items(seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    rng = random.Random(f"twin_letters:{seed}")
    train_words = [w for w in DOUBLED if not held_out(w)]
    eval_words = [w for w in DOUBLED if held_out(w)]
    train = [make_item(rng.choice(train_words), rng) for _ in range(TRAIN_ITEMS)]
    evaluation = [make_item(w, rng) for w in eval_words for _ in range(EVAL_ITEMS_PER_WORD)]
    return train, evaluation


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class TwinLettersEnv(BaseEnv):
    """Pick the listed word with a doubled letter (single turn)."""

    name = "twin_letters"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items, self.eval_items = all_items(self.config.seed)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_ANSWER_CHARS + 4)
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_ANSWER_CHARS + 4, temperature=0.0)
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
    TwinLettersEnv.cli()
