"""Say whether a word starts with a vowel or a consonant: "Does the word okrast start with a
vowel or a consonant?" -> "vowel" (classification, free text).

Items are words of four to seven random lowercase letters whose first letter is a vowel (a, e,
i, o, u) half the time and a consonant other than y the other half, so neither label is a safe
guess; a tenth, chosen by a SHA-256 hash, are held out for evaluation. The answer is free text
(no guided_choice): a completion scores 1.0 for "vowel" or "consonant", whichever is right,
after .strip(), and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
VOWELS = "aeiou"
CONSONANTS = "bcdfghjklmnpqrstvwxz"  # no y: it can be either


def held_out(word: str) -> bool:
    return hashlib.sha256(f"vowel start {word}".encode()).digest()[0] % 10 == 0


def label(word: str) -> str:
    return "vowel" if word[0] in VOWELS else "consonant"


def make_items(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"vowel_start:{seed}")
    found: dict[str, None] = {}
    while len(found) < count:
        first = rng.choice(VOWELS if rng.random() < 0.5 else CONSONANTS)
        word = first + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(3, 6)))
        if held_out(word) == evaluation:
            found[word] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class VowelStartEnv(BaseEnv):
    """Say whether a word's first letter is a vowel or a consonant (single turn, free text)."""

    name = "vowel_start"

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
        return [{"role": "user", "content": f"Does the word {item} start with a vowel or a consonant?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [exact(c.text, label(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: str) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0)
            return exact(group.completions[0].text, label(item))

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
    VowelStartEnv.cli()
