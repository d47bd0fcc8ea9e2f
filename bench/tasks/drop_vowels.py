"""Take the vowels out of a word: "Remove the vowels from: garden" -> "grdn" (string map).

Items are words of four to seven random lowercase letters (y left out, since it can be either),
each letter a vowel (a, e, i, o, u) two times in five so most words have a couple to remove;
every word has at least one vowel and at least one consonant, so the answer is never the word
itself nor empty. A tenth, chosen by a SHA-256 hash, are held out for evaluation. A completion
scores 1.0 for the word's consonants in their order, after .strip(), and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

VOWELS = "aeiou"
CONSONANTS = "bcdfghjklmnpqrstvwxz"  # no y


def held_out(word: str) -> bool:
    return hashlib.sha256(f"drop vowels {word}".encode()).digest()[0] % 10 == 0


def answer(word: str) -> str:
    return "".join(c for c in word if c not in VOWELS)


def make_items(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"drop_vowels:{seed}")
    found: dict[str, None] = {}
    while len(found) < count:
        word = "".join(rng.choice(VOWELS if rng.random() < 0.4 else CONSONANTS) for _ in range(rng.randint(4, 7)))
        if not any(c in VOWELS for c in word) or not answer(word):
            continue
        if held_out(word) == evaluation:
            found[word] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class DropVowelsEnv(BaseEnv):
    """Answer with a word's letters minus its vowels (single turn)."""

    name = "drop_vowels"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Remove the vowels from: {item}"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=10)
        scores = [exact(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(word: str) -> float:
            group = await self.policy.chat(self.prompt(word), n=1, max_tokens=10, temperature=0.0)
            return exact(group.completions[0].text, answer(word))

        scores = await gather_bounded((one(w) for w in self.eval_items), self.config.max_eval_workers)
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
    DropVowelsEnv.cli()
