"""Say whether a word reads the same backwards, through guided_choice (classification).

"Is kayak a palindrome?" -> "yes". Items are random lowercase strings of three to six letters,
half of them palindromes; a tenth, chosen by a SHA-256 hash, are held out for evaluation.
Answers are constrained to "yes" and "no"; a completion scores 1.0 for the right one and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
ANSWERS = ["yes", "no"]


def held_out(word: str) -> bool:
    return hashlib.sha256(word.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"is_palindrome:{seed}")
    found: dict[str, None] = {}
    while len(found) < count:
        length = rng.randint(3, 6)
        if rng.random() < 0.5:
            half = "".join(rng.choice(ALPHABET) for _ in range((length + 1) // 2))
            word = half + half[: length // 2][::-1]
        else:
            word = "".join(rng.choice(ALPHABET) for _ in range(length))
        if held_out(word) == evaluation:
            found[word] = None
    return list(found)


def answer(word: str) -> str:
    return "yes" if word == word[::-1] else "no"


class IsPalindromeEnv(BaseEnv):
    """Answer yes or no: is the word a palindrome? (single turn, guided_choice)"""

    name = "is_palindrome"

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
    def prompt(word: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Is {word} a palindrome?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4, guided_choice=ANSWERS)
        scores = [1.0 if c.text == answer(item) else 0.0 for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0, guided_choice=ANSWERS)
            return 1.0 if group.completions[0].text == answer(item) else 0.0

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
    IsPalindromeEnv.cli()
