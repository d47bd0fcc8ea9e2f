"""Write a lowercase word in capitals: "Write in capitals: plane" -> "PLANE" (string map).

Words are 3 to 7 letters a-z; a tenth of them, chosen by CRC-32, are held out for evaluation.
A completion scores 1.0 for the exact capitalised word, otherwise 0.5 times the share of
positions it gets right (over the longer of answer and target).
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def held_out(word: str) -> bool:
    return zlib.crc32(word.encode()) % 10 == 0


def make_words(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"uppercase:{seed}:{evaluation}")
    found: dict[str, None] = {}
    while len(found) < count:
        word = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(3, 7)))
        if held_out(word) == evaluation:
            found[word] = None
    return list(found)


def score(answer: str, target: str) -> float:
    answer = answer.strip()
    if answer == target:
        return 1.0
    if not answer:
        return 0.0
    return 0.5 * sum(a == b for a, b in zip(answer, target)) / max(len(answer), len(target))


class UppercaseEnv(BaseEnv):
    """Write a word in capital letters (single turn)."""

    name = "uppercase"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=64, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_words(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_words(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> str:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(word: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Write in capitals: {word}"}]

    async def collect_trajectories(self, item: str) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        messages = self.prompt(item)
        group = await self.policy.chat(messages, n=self.config.group_size, max_tokens=len(item) + 2)
        scores = [score(c.text, item.upper()) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(word: str) -> float:
            group = await self.policy.chat(self.prompt(word), n=1, max_tokens=len(word) + 2, temperature=0.0)
            return score(group.completions[0].text, word.upper())

        scores = await gather_bounded((one(w) for w in self.eval_items), self.config.max_eval_workers)
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
    UppercaseEnv.cli()
