"""Put a person's age in its age group, answered in free text (classification).

"Priya is 15 years old. Is she a child, a teenager, an adult or a senior?" -> "teenager".
Groups: child up to 12, teenager 13 to 19, adult 20 to 64, senior 65 and over. Every age from
2 to 99 is asked for eight people under three phrasings; a tenth of the ages, chosen by a
SHA-256 hash, are held out (for every person and phrasing) for evaluation, so the policy must
go by the number, not memorise ages. The answer is written freely (no constrained choice); a
completion scores 1.0 when it is exactly the group's word and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

PEOPLE = (
    ("Priya", "she"), ("Tom", "he"), ("Maria", "she"), ("Kenji", "he"),
    ("Fatima", "she"), ("Leo", "he"), ("Grace", "she"), ("Omar", "he"),
)
TEMPLATES = (
    "{name} is {age} years old. Is {pronoun} a child, a teenager, an adult or a senior?",
    "The cinema has child, teenager, adult and senior tickets (seniors are 65 and up). Which one does {name} need? {Pronoun}'s {age}.",
    "On the sign-up form I have to tick child, teenager, adult or senior for {name}, who is {age}. Which should I tick?",
)


def age_group(age: int) -> str:
    if age <= 12:
        return "child"
    if age <= 19:
        return "teenager"
    if age <= 64:
        return "adult"
    return "senior"


def held_out(age: int) -> bool:
    return hashlib.sha256(f"age_group:{age}".encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[int, str, str]]:
    """(age, prompt, group) for every age, person and phrasing."""
    items = []
    for age in range(2, 100):
        for name, pronoun in PEOPLE:
            for template in TEMPLATES:
                prompt = template.format(name=name, age=age, pronoun=pronoun, Pronoun=pronoun.capitalize())
                items.append((age, prompt, age_group(age)))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class AgeGroupEnv(BaseEnv):
    """Name the age group of a person of a given age (single turn, free text)."""

    name = "age_group"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=10)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=10, temperature=0.0)
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
    AgeGroupEnv.cli()
