"""Say whether a bill is overdue, due today or not due yet, through guided_choice (classification).

"My phone bill is due on 12 March. Today is 15 March. Is it overdue, due today, or not due
yet?" -> "overdue". The due date and today's date fall in the same month, on days 1 to 28.
Every (due day, today) pair is asked under three phrasings, with a month and a bill picked by
the pair; a tenth of the pairs, chosen by a SHA-256 hash, are held out (under all phrasings)
for evaluation, so the policy must compare the two days rather than memorise pairs. Training
draws a label uniformly and then an item of that label, since "due today" pairs are rare.
Answers are constrained to the three labels; a completion scores 1.0 for the right label and
0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["overdue", "due today", "not due yet"]
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
BILLS = ("phone", "electricity", "water", "internet", "gas", "credit card", "rent", "insurance")
TEMPLATES = (
    "My {bill} bill is due on {due} {month}. Today is {today} {month}. Is it overdue, due today, or not due yet?",
    "The {bill} bill says pay by {due} {month}. It's {today} {month} today. What's its status?",
    "Today's date is {today} {month} and my {bill} payment is due {due} {month}. Overdue, due today, or not due yet?",
)


def key(due: int, today: int) -> str:
    return f"{due}/{today}"


def held_out(due: int, today: int) -> bool:
    return hashlib.sha256(key(due, today).encode()).digest()[0] % 10 == 0


def status(due: int, today: int) -> str:
    if today > due:
        return "overdue"
    if today == due:
        return "due today"
    return "not due yet"


def all_items() -> list[tuple[str, str, str]]:
    """(pair key, prompt, label) for every (due day, today) pair and phrasing."""
    items = []
    for due in range(1, 29):
        for today in range(1, 29):
            digest = hashlib.sha256(("bill_status:" + key(due, today)).encode()).digest()
            month, bill = MONTHS[digest[1] % len(MONTHS)], BILLS[digest[2] % len(BILLS)]
            for template in TEMPLATES:
                prompt = template.format(bill=bill, due=due, today=today, month=month)
                items.append((key(due, today), prompt, status(due, today)))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class BillStatusEnv(BaseEnv):
    """Say whether a bill is overdue, due today or not due yet (single turn, guided_choice)."""

    name = "bill_status"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        train = [i for i in items if not held_out(*map(int, i[0].split("/")))]
        self.train_by_label = {label: [i for i in train if i[2] == label] for label in LABELS}
        self.eval_items = [i for i in items if held_out(*map(int, i[0].split("/")))]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_by_label[self.rng.choice(LABELS)])

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, guided_choice=LABELS, temperature=0.0)
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
    BillStatusEnv.cli()
