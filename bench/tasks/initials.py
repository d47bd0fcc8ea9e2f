"""Write the initials of a person's name (string map).

"What are the initials of Laura Jean Patel? Write them without dots." -> "LJP".
Names are a first name, an optional middle name (another first name from the same half of the
list, so usually of the same gender) and a surname, drawn from small lists in this file (over a
hundred thousand names in all); each item is asked under one of three phrasings. The answer is the capital first letter of every part of the name, in
order, with no dots or spaces. A tenth of the names, chosen by a SHA-256 hash of the name, are
held out (under every phrasing) for evaluation, so the policy must apply the rule, not
memorise answers. A completion scores 1.0 when it is exactly the initials and 0 otherwise;
evaluation is greedy and exact.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FIRST = (
    "Laura", "Jean", "Mary", "Anna", "Grace", "Emma", "Olivia", "Sophie", "Chloe", "Hannah",
    "Rose", "Ella", "Nora", "Ruth", "Helen", "Kate", "Lucy", "Irene", "Fiona", "Diane",
    "Wendy", "Yvonne", "Zara", "Vera", "Tessa", "Paula", "Queenie", "Ursula", "Bella", "Xenia",
    "James", "John", "Peter", "Mark", "David", "Thomas", "Henry", "Oscar", "Samuel", "Daniel",
    "Edward", "Frank", "George", "Isaac", "Kevin", "Liam", "Noah", "Victor", "Walter", "Adam",
    "Brian", "Carl", "Ian", "Owen", "Ryan", "Simon", "Tony", "Umar", "Yusuf", "Zack",
)
SURNAMES = (
    "Patel", "Smith", "Jones", "Brown", "Taylor", "Wilson", "Evans", "Thomas", "Roberts", "Walker",
    "Wright", "Green", "Hall", "Wood", "Clarke", "Hughes", "Lewis", "Baker", "Harris", "Morgan",
    "Cooper", "King", "Lopez", "Garcia", "Nguyen", "Kim", "Singh", "Khan", "Ali", "Murphy",
    "Kelly", "Ryan", "Owens", "Ortiz", "Young", "Adams", "Foster", "Grant", "Irwin", "Jensen",
    "Quinn", "Reyes", "Stone", "Turner", "Upton", "Vance", "Ward", "Xu", "Yates", "Zhang",
    "Dixon", "Ellis", "Fisher", "Nash", "Price", "Mills", "Bell", "Chen", "Dunn", "Ford",
)
TEMPLATES = (
    "What are the initials of {name}? Write them without dots.",
    "Give me the initials for {name}, capital letters only.",
    "My new colleague is called {name}. What are their initials (no dots or spaces)?",
)


def held_out(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] % 10 == 0


def initials_of(name: str) -> str:
    return "".join(part[0] for part in name.split())


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(name, prompt, initials) for ``count`` distinct names on one side of the split."""
    rng = random.Random(f"initials:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        first = rng.choice(FIRST)
        parts = [first]
        if rng.random() < 0.6:
            half = FIRST[:30] if FIRST.index(first) < 30 else FIRST[30:]
            parts.append(rng.choice([n for n in half if n != first]))
        parts.append(rng.choice(SURNAMES))
        name = " ".join(parts)
        if name in found or held_out(name) != evaluation:
            continue
        found[name] = (name, rng.choice(TEMPLATES).format(name=name), initials_of(name))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class InitialsEnv(BaseEnv):
    """Write the initials of a name (single turn, string map)."""

    name = "initials"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=8)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=8, temperature=0.0)
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
    InitialsEnv.cli()
