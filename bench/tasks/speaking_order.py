"""Put a meeting's speakers in speaking order (ordering).

"At tomorrow's meeting Omar speaks third, Lena first and Priya second. List the speakers in
order." -> "Lena, Priya, Omar". Three or four speakers from a pool of first names are given
their places (first to fourth) in a shuffled order. The held-out split is a tenth of the
speaking orders, chosen by a SHA-256 hash of the answer, so no evaluation answer is ever seen in
training. A completion scores 1.0 when its comma-separated names are the speakers in order, and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Ana", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gina", "Hugo", "Ivy", "Jack", "Kim", "Leo",
    "Lena", "Max", "Nora", "Omar", "Priya", "Raj", "Sara", "Tom", "Uma", "Vic", "Will", "Zoe",
)
PLACES = ("first", "second", "third", "fourth")
TEMPLATES = (
    "At tomorrow's meeting {clauses}. List the speakers in order.",
    "Speaking order for the wedding toasts: {clauses}. Who speaks when? Give the names in order, separated by commas.",
    "In class presentations {clauses}. Write the presenters from first to last.",
)
EVAL_SIZE = 200


def held_out(answer: str) -> bool:
    return hashlib.sha256(answer.encode()).digest()[0] % 10 == 0


def clauses(order: list[str], rng: random.Random) -> str:
    """'Omar speaks third, Lena first and Priya second' for order [Lena, Priya, Omar]."""
    told = list(enumerate(order))
    rng.shuffle(told)
    parts = [f"{name} speaks {PLACES[place]}" if k == 0 else f"{name} {PLACES[place]}" for k, (place, name) in enumerate(told)]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def make_item(order: list[str], rng: random.Random) -> tuple[str, str, str]:
    answer = ", ".join(order)
    return (answer, rng.choice(TEMPLATES).format(clauses=clauses(order, rng)), answer)


def make_orders(count: int, *, seed: int, evaluation: bool) -> list[list[str]]:
    rng = random.Random(f"speaking_order:{seed}:{evaluation}")
    found: dict[str, list[str]] = {}
    while len(found) < count:
        order = rng.sample(NAMES, rng.choice((3, 4)))
        answer = ", ".join(order)
        if held_out(answer) == evaluation:
            found[answer] = order
    return list(found.values())


def in_order(answer: str, target: str) -> float:
    given = [name.strip() for name in answer.strip().rstrip(".").split(",")]
    return 1.0 if given == target.split(", ") else 0.0


class SpeakingOrderEnv(BaseEnv):
    """List speakers in the order they speak (single turn, ordering)."""

    name = "speaking_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.rng = random.Random(self.config.seed)
        self.train_orders = make_orders(5000, seed=self.config.seed, evaluation=False)
        eval_rng = random.Random(f"speaking_order:eval:{self.config.seed}")
        self.eval_items = [make_item(order, eval_rng) for order in make_orders(EVAL_SIZE, seed=self.config.seed, evaluation=True)]

    async def get_next_item(self) -> Any:
        return make_item(self.rng.choice(self.train_orders), self.rng)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=32)
        scores = [in_order(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=32, temperature=0.0)
            return in_order(group.completions[0].text, item[2])

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
    SpeakingOrderEnv.cli()
