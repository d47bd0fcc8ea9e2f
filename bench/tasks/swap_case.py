"""Swap the case of every letter in a short mixed-case word (string map).

The prompt is 'Swap the case of each letter in "hELLo".' and the answer is "HellO". Words are
3 to 6 random letters, each upper or lower case at random (always some of each); a tenth of
them, chosen by a SHA-256 hash, are held out for evaluation. The answer writes letters the
prompt holds only in the other case, so a completion scores the share of positions whose
character is right, divided by the longer of the answer and the target (1.0 only for the
exact word); evaluation counts exact answers.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
MAX_LEN = 6


def held_out(word: str) -> bool:
    return hashlib.sha256(word.encode()).digest()[0] % 10 == 0


def make_words(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"swap_case:{seed}")
    found: dict[str, None] = {}
    while len(found) < count:
        letters = [rng.choice(ALPHABET) for _ in range(rng.randint(3, MAX_LEN))]
        word = "".join(c.upper() if rng.random() < 0.5 else c for c in letters)
        if word.islower() or word.isupper():
            continue
        if held_out(word) == evaluation:
            found[word] = None
    return list(found)


def char_score(answer: str, target: str) -> float:
    answer = answer.strip()
    if not answer:
        return 0.0
    right = sum(a == t for a, t in zip(answer, target))
    return right / max(len(answer), len(target))


class SwapCaseEnv(BaseEnv):
    """Swap upper and lower case in a short word (single turn, partial credit per character)."""

    name = "swap_case"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=128, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_words(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_words(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(word: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": f'Swap the case of each letter in "{word}".'}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        target = item.swapcase()
        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_LEN + 2)
        scores = [char_score(c.text, target) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(word: str) -> float:
            group = await self.policy.chat(self.prompt(word), n=1, max_tokens=MAX_LEN + 2, temperature=0.0)
            return char_score(group.completions[0].text, word.swapcase())

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
    SwapCaseEnv.cli()
