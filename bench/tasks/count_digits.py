"""Count the digits in a short code of letters and digits (counting).

'How many digits are in the code "k4p9z2"?' -> "3". Codes are 5 to 8 characters of lowercase
letters and digits with at least one of each, so the count is 1 to 7; a tenth of the codes,
chosen by a SHA-256 hash, are held out for evaluation. The answer is a number, so a completion
scores 1.0 when it is (but for spaces or a final full stop) exactly the count and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LETTERS = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
TEMPLATES = (
    'How many digits are in the code "{code}"?',
    'My locker code is {code}. How many digits does it have?',
    'Count the digits in "{code}".',
)


def held_out(code: str) -> bool:
    return hashlib.sha256(code.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    rng = random.Random(f"count_digits:{seed}")
    found: dict[str, tuple[str, str]] = {}
    while len(found) < count:
        length = rng.randint(5, 8)
        digits = rng.randint(1, length - 1)
        chars = [rng.choice(DIGITS) for _ in range(digits)] + [rng.choice(LETTERS) for _ in range(length - digits)]
        rng.shuffle(chars)
        code = "".join(chars)
        if code in found or held_out(code) != evaluation:
            continue
        found[code] = (rng.choice(TEMPLATES).format(code=code), str(digits))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip().rstrip(".") == target else 0.0


class CountDigitsEnv(BaseEnv):
    """Say how many digits a short code contains (single turn, exact match)."""

    name = "count_digits"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=128, use_wandb=False)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=3)
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=3, temperature=0.0)
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
    CountDigitsEnv.cli()
