"""Make a work username from a person's name: first initial plus surname, lowercase (string map).

"Our email usernames are the first initial followed by the surname, all in lowercase. What's
the username for Mary Jones?" -> "mjones". Names pair 36 first names with 36 surnames, each
asked under three phrasings; a tenth of the names, chosen by a SHA-256 hash, are held out for
evaluation (each under one phrasing), so the policy must apply the rule, not memorise names.
The answer writes lowercase letters the prompt holds only in capitals, so a training
completion scores the share of positions that match the username, divided by the longer of
the two lengths (1.0 only for the exact username); evaluation counts exact matches.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FIRST_NAMES = (
    "Mary", "James", "Linda", "Robert", "Susan", "David", "Karen", "Thomas", "Nancy", "Daniel",
    "Laura", "Peter", "Helen", "Mark", "Sarah", "Paul", "Emma", "Kevin", "Julia", "Brian",
    "Grace", "Simon", "Alice", "Oliver", "Chloe", "Henry", "Ruth", "Victor", "Irene", "Frank",
    "Wendy", "George", "Olivia", "Adam", "Zoe", "Nathan",
)
SURNAMES = (
    "Jones", "Smith", "Brown", "Taylor", "Wilson", "Davies", "Evans", "Walker", "Wright", "Green",
    "Hall", "Wood", "Harris", "Clarke", "Turner", "Hill", "Cooper", "Ward", "Morris", "Baker",
    "King", "Parker", "Bennett", "Hughes", "Foster", "Carter", "Mitchell", "Fisher", "Palmer", "Webb",
    "Gray", "Lloyd", "Quinn", "Young", "Porter", "Dixon",
)
TEMPLATES = (
    "Our email usernames are the first initial followed by the surname, all in lowercase. What's the username for {name}?",
    "At work, usernames are your first initial plus your last name, in lowercase. What would {name}'s username be?",
    "{name} starts on Monday. Logins here are first initial + surname, lowercase. Which login should I create?",
)
MAX_ANSWER_CHARS = 1 + max(len(s) for s in SURNAMES)


def held_out(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] % 10 == 0


def username(first: str, last: str) -> str:
    return (first[0] + last).lower()


def all_items() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(name, prompt, username) items: train under every phrasing, eval under one each."""
    train, evaluation = [], []
    for first in FIRST_NAMES:
        for last in SURNAMES:
            name = f"{first} {last}"
            target = username(first, last)
            if held_out(name):
                template = TEMPLATES[len(evaluation) % len(TEMPLATES)]
                evaluation.append((name, template.format(name=name), target))
            else:
                train.extend((name, t.format(name=name), target) for t in TEMPLATES)
    return train, evaluation


def positional(answer: str, target: str) -> float:
    """Share of positions that match, over the longer length; 1.0 only for an exact match."""
    answer = answer.strip()
    if answer == target:
        return 1.0
    longer = max(len(answer), len(target))
    return sum(a == b for a, b in zip(answer, target)) / longer if longer else 0.0


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class WorkUsernameEnv(BaseEnv):
    """Turn a full name into a lowercase first-initial-plus-surname username (single turn)."""

    name = "work_username"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items, self.eval_items = all_items()
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_ANSWER_CHARS + 4)
        scores = [positional(c.text, item[2]) for c in group.completions]
        self.correct.extend(exact(c.text, item[2]) for c in group.completions)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_ANSWER_CHARS + 4, temperature=0.0)
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
    WorkUsernameEnv.cli()
