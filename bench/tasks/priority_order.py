"""List three chores from highest to lowest priority (ordering).

"My to-do list: taxes (medium priority), dusting (low priority), laundry (high priority). List
the tasks from highest to lowest priority." -> "laundry, taxes, dusting". Each list has three
distinct chores, one each at high, medium and low priority, in a random order, under three
phrasings. A tenth of the lists (chores in their given order with their priorities), chosen by a
SHA-256 hash, are held out for evaluation. The reply is read as a comma-separated list; it
scores 1.0 when it names the three chores in the right order and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CHORES = (
    "laundry", "dishes", "taxes", "groceries", "dusting", "ironing", "vacuuming", "emails",
    "gardening", "cooking", "homework", "packing", "recycling", "mopping", "banking", "repairs",
)
PRIORITIES = ("high", "medium", "low")
TEMPLATES = (
    "My to-do list: {a} ({pa} priority), {b} ({pb} priority), {c} ({pc} priority). List the tasks from highest to lowest priority.",
    "Sort these chores by priority, most important first: {a} is {pa}, {b} is {pb}, {c} is {pc}.",
    "What order should I do these in, highest priority first? {a}: {pa}. {b}: {pb}. {c}: {pc}.",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, list[str]]]:
    """(key, prompt, chores in priority order) for ``count`` distinct lists."""
    rng = random.Random(f"priority_order:{seed}")
    found: dict[str, tuple[str, list[str]]] = {}
    while len(found) < count:
        chores = rng.sample(CHORES, 3)
        levels = rng.sample(PRIORITIES, 3)
        key = ",".join(f"{c}:{p}" for c, p in zip(chores, levels))
        if key in found or held_out(key) != evaluation:
            continue
        prompt = rng.choice(TEMPLATES).format(a=chores[0], b=chores[1], c=chores[2], pa=levels[0], pb=levels[1], pc=levels[2])
        ordered = [c for _, c in sorted(zip((PRIORITIES.index(p) for p in levels), chores))]
        found[key] = (prompt, ordered)
    return [(key, prompt, ordered) for key, (prompt, ordered) in found.items()]


def score(answer: str, target: list[str]) -> float:
    said = [part.strip() for part in answer.strip().rstrip(".").split(",")]
    return 1.0 if said == target else 0.0


MAX_REPLY = len(", ".join(sorted(CHORES, key=len)[-3:])) + 4


class PriorityOrderEnv(BaseEnv):
    """Put three chores in order of priority (single turn, ordering)."""

    name = "priority_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_REPLY)
        scores = [score(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_REPLY, temperature=0.0)
            return score(group.completions[0].text, item[2])

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
    PriorityOrderEnv.cli()
