"""Write a formatted phone number as digits only (string map).

"Can you write the phone number (415) 555-0132 as digits only?" -> "4155550132".
Numbers are ten random digits (area code and exchange not starting with 0 or 1), written in one
of four everyday formats and asked under three phrasings. A tenth of the numbers, chosen by a
SHA-256 hash of their digits, are held out (under every format and phrasing) for evaluation, so
the policy must learn to drop the punctuation, not memorise numbers. A completion scores 1.0
when it is exactly the ten digits and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FORMATS = (
    "({a}) {b}-{c}",
    "{a}-{b}-{c}",
    "{a}.{b}.{c}",
    "{a} {b} {c}",
)
TEMPLATES = (
    "Can you write the phone number {number} as digits only?",
    "This form only takes digits. How do I enter the number {number}?",
    "Strip the spaces and punctuation from {number}, please.",
)
MAX_TOKENS = 12


def held_out(digits: str) -> bool:
    return hashlib.sha256(digits.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """``count`` distinct (digits, prompt, answer) items on the chosen side of the split."""
    rng = random.Random(f"phone_digits:{seed}")
    found: dict[tuple[str, str, str], None] = {}
    while len(found) < count:
        a = str(rng.randint(2, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(2))
        b = str(rng.randint(2, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(2))
        c = "".join(str(rng.randint(0, 9)) for _ in range(4))
        digits = a + b + c
        if held_out(digits) != evaluation:
            continue
        number = rng.choice(FORMATS).format(a=a, b=b, c=c)
        found[(digits, rng.choice(TEMPLATES).format(number=number), digits)] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class PhoneDigitsEnv(BaseEnv):
    """Rewrite a formatted phone number as its bare digits (single turn)."""

    name = "phone_digits"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
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
    PhoneDigitsEnv.cli()
