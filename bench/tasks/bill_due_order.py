"""Put a few household bills in the order they fall due, soonest first (ordering).

"Which bills should I pay first? Put them in order of due date, soonest first: rent (due 3
May), phone (due 28 April), water (due 15 May)" -> "phone, rent, water". Three or four bills
get distinct due dates within a window of three consecutive months of one year (never across
New Year, so no date is ambiguous); the policy must compare month names before days. Items
are generated from a seed; a tenth of all possible items, chosen by a SHA-256 hash of the
item, are reserved for evaluation and never trained on. A completion scores 1.0 when it is
exactly the bills in order, comma-separated, and otherwise the share of positions that hold
the right bill, so a half-right order still teaches something.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

BILLS = (
    "rent", "electricity", "water", "gas", "phone", "internet", "council tax", "car insurance",
    "gym", "credit card", "TV licence", "home insurance", "streaming", "parking permit",
)
MONTHS = (
    ("January", 31), ("February", 28), ("March", 31), ("April", 30), ("May", 31), ("June", 30),
    ("July", 31), ("August", 31), ("September", 30), ("October", 31), ("November", 30), ("December", 31),
)
TEMPLATES = (
    "Which bills should I pay first? Put them in order of due date, soonest first: {bills}",
    "Sort my bills by due date, earliest first: {bills}",
    "Here's what's coming up: {bills}. List them from the one due first to the one due last.",
)


class BillDueOrderConfig(BaseEnvConfig):
    train_size: int = Field(5000, gt=0, le=1_000_000, description="Training items generated.")
    eval_size: int = Field(200, gt=0, le=100_000, description="Held-out items evaluated.")


def held_out(prompt: str) -> bool:
    return hashlib.sha256(prompt.encode()).digest()[0] % 10 == 0


def make_item(rng: random.Random) -> tuple[str, str]:
    """(prompt, bills in due order joined by ", ")."""
    count = rng.randint(3, 4)
    bills = rng.sample(BILLS, count)
    first_month = rng.randint(0, 9)
    dates: list[tuple[int, int]] = []
    while len(dates) < count:
        month = first_month + rng.randint(0, 2)
        date = (month, rng.randint(1, MONTHS[month][1]))
        if date not in dates:
            dates.append(date)
    listed = ", ".join(f"{bill} (due {day} {MONTHS[month][0]})" for bill, (month, day) in zip(bills, dates))
    ordered = [bill for _, bill in sorted(zip(dates, bills))]
    return rng.choice(TEMPLATES).format(bills=listed), ", ".join(ordered)


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    rng = random.Random(f"bill_due_order:{seed}:{'eval' if evaluation else 'train'}")
    found: dict[str, str] = {}
    while len(found) < count:
        prompt, answer = make_item(rng)
        if held_out(prompt) == evaluation:
            found[prompt] = answer
    return list(found.items())


def position_share(answer: str, target: str) -> float:
    if answer.strip() == target:
        return 1.0
    given = [part.strip() for part in answer.split(",")]
    wanted = target.split(", ")
    right = sum(g == w for g, w in zip(given, wanted))
    return right / max(len(given), len(wanted))


LONGEST_ANSWER = sum(sorted(map(len, BILLS))[-4:]) + 3 * len(", ")
MAX_TOKENS = LONGEST_ANSWER + 4


class BillDueOrderEnv(BaseEnv):
    """Order bills by due date, soonest first (single turn)."""

    name = "bill_due_order"
    env_config_cls = BillDueOrderConfig

    def __init__(self, config: BillDueOrderConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BillDueOrderConfig, list[APIServerConfig]]:
        config = BillDueOrderConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_size, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_size, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [position_share(c.text, item[1]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return position_share(group.completions[0].text, item[1])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores),
            "eval/position_share": sum(scores) / len(scores),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    BillDueOrderEnv.cli()
