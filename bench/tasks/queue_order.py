"""Work out three people's places in a queue from who stands right behind whom (ordering).

"Three of us are queuing for coffee. Cal is right behind Ben, and Ben is right behind Ann. What's
the order from front to back?" -> "Ann, Ben, Cal". Every ordered triple of 30 short first names
is an item. Its two clues link the front and middle person and the middle and back person,
each said either as "X is right behind Y" or as "Y is right in front of X", in random order,
under one of three phrasings. A tenth of the triples, chosen by a SHA-256 hash of the ordered
names, are held out for evaluation (a fixed sample of 150 of them, with fixed wording), so the
policy must follow the clues, not memorise groups. The answer is the three names, front to
back, separated by commas. A training completion scores the share of the three places it names
correctly (split on commas), over the number of names it gives if that is more than three, so
1.0 only for the right order; evaluation counts exact orders.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Ann", "Ben", "Cal", "Dan", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jo",
    "Kim", "Lee", "Max", "Ned", "Pam", "Ray", "Sam", "Tom", "Val", "Zoe",
    "Amy", "Bob", "Liz", "Meg", "Rob", "Sue", "Ted", "Una", "Vic", "Wes",
)
TEMPLATES = (
    "Three of us are queuing for coffee. {first}, and {second}. What's the order from front to back?",
    "There are three people at the bus stop. {first}, and {second}. Who's where, front to back?",
    "In the line for tickets, {first}, and {second}. Nobody else is there. List us from the front.",
)
EVAL_ITEMS = 150
MAX_ANSWER_CHARS = 3 * max(len(n) for n in NAMES) + 4


def held_out(order: tuple[str, ...]) -> bool:
    return hashlib.sha256(",".join(order).encode()).digest()[0] % 10 == 0


def clue(front: str, back: str, rng: random.Random) -> str:
    return f"{back} is right behind {front}" if rng.random() < 0.5 else f"{front} is right in front of {back}"


def render(order: tuple[str, ...], rng: random.Random) -> str:
    clues = [clue(order[0], order[1], rng), clue(order[1], order[2], rng)]
    rng.shuffle(clues)
    return rng.choice(TEMPLATES).format(first=clues[0], second=clues[1])


def split_orders() -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    orders = list(itertools.permutations(NAMES, 3))
    return [o for o in orders if not held_out(o)], [o for o in orders if held_out(o)]


def eval_items(seed: int) -> list[tuple[tuple[str, ...], str]]:
    rng = random.Random(f"queue_order:{seed}")
    _, held = split_orders()
    return [(order, render(order, rng)) for order in rng.sample(held, EVAL_ITEMS)]


def names_in(answer: str) -> list[str]:
    return [part.strip() for part in answer.strip().split(",")]


def places_right(answer: str, order: tuple[str, ...]) -> float:
    given = names_in(answer)
    return sum(a == b for a, b in zip(given, order)) / max(len(given), len(order))


def exact(answer: str, order: tuple[str, ...]) -> float:
    return 1.0 if names_in(answer) == list(order) else 0.0


class QueueOrderEnv(BaseEnv):
    """List three people front to back from clues about who stands behind whom (single turn)."""

    name = "queue_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_orders, _ = split_orders()
        self.eval_items = eval_items(self.config.seed)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        order = self.rng.choice(self.train_orders)
        return order, render(order, self.rng)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_ANSWER_CHARS + 4)
        scores = [places_right(c.text, item[0]) for c in group.completions]
        self.correct.extend(exact(c.text, item[0]) for c in group.completions)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_ANSWER_CHARS + 4, temperature=0.0)
            return exact(group.completions[0].text, item[0])

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
    QueueOrderEnv.cli()
