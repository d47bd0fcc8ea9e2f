"""Name the currency of a price on a statement, answering through guided_choice (classification).

"My bank statement shows 45.00 EUR for the hotel. Which currency is that?" -> "euro". Prices are
an amount from 1.00 to 250.00 followed by a currency code: USD dollar, EUR euro, GBP pound,
JPY yen. Every price is asked under three phrasings; a tenth of the prices, chosen by a SHA-256
hash, are held out (under all phrasings) for evaluation, so the policy must go by the code, not
memorise amounts. Answers are constrained to the four labels; a completion scores 1.0 for the
right currency and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["dollar", "euro", "pound", "yen"]
CODES = (("USD", "dollar"), ("EUR", "euro"), ("GBP", "pound"), ("JPY", "yen"))
TEMPLATES = (
    "My bank statement shows {price} for the hotel. Which currency is that?",
    "The receipt says {price}. What currency did I pay in?",
    "A friend sent me {price} for the concert ticket. Which currency was it?",
)


def held_out(price: str) -> bool:
    return hashlib.sha256(price.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(price, prompt, currency) for every price and phrasing."""
    items = []
    for code, currency in CODES:
        for amount in range(1, 251):
            price = f"{amount}.00 {code}"
            for template in TEMPLATES:
                items.append((price, template.format(price=price), currency))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class CurrencyNameEnv(BaseEnv):
    """Say which currency a price is in (single turn, guided_choice)."""

    name = "currency_name"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        self.eval_items = [i for i in items if held_out(i[0])]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=8, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=8, guided_choice=LABELS, temperature=0.0)
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
    CurrencyNameEnv.cli()
