"""Rewrite a person's name surname first, as "Surname, First name" (string map).

"For the bibliography I need this author's name surname first: Nadia Brennan" -> "Brennan,
Nadia". Names are a first name and a surname from two lists of about seventy each (about five
thousand people), asked under four phrasings; a tenth of the names, chosen by a SHA-256 hash,
are held out (under all phrasings) for evaluation, so the policy must learn to move the surname,
not memorise people. A completion scores the share of its characters that match the answer
position by position (1.0 for the exact answer), so a nearly right answer earns partial credit.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FIRST_NAMES = (
    "Aaron", "Abigail", "Adam", "Aisha", "Alice", "Amir", "Anna", "Ben", "Bianca", "Caleb", "Carla", "Chloe",
    "Daniel", "Diego", "Dora", "Eli", "Elena", "Emma", "Ethan", "Fatima", "Felix", "Freya", "Gabriel", "Grace",
    "Hannah", "Harry", "Hugo", "Ines", "Isaac", "Ivy", "Jack", "Jade", "James", "Julia", "Kai", "Karen",
    "Leo", "Lily", "Lucas", "Maya", "Mohammed", "Nadia", "Nathan", "Nina", "Noah", "Olivia", "Omar", "Oscar",
    "Paula", "Peter", "Priya", "Quinn", "Rachel", "Ravi", "Rosa", "Ruth", "Sam", "Sara", "Sofia", "Tariq",
    "Theo", "Tom", "Uma", "Victor", "Wendy", "Will", "Yusuf", "Zara", "Zoe",
)
SURNAMES = (
    "Abbott", "Alvarez", "Baker", "Bennett", "Brennan", "Campbell", "Carter", "Chen", "Clarke", "Costa",
    "Dawson", "Delgado", "Dubois", "Ellis", "Evans", "Fischer", "Fleming", "Foster", "Garcia", "Gordon",
    "Grant", "Hall", "Hansen", "Harper", "Hughes", "Ibrahim", "Jensen", "Johnson", "Kaur", "Kelly",
    "Khan", "Kowalski", "Lambert", "Lopez", "Lynch", "Marshall", "Martin", "Meyer", "Morgan", "Murphy",
    "Nakamura", "Novak", "Okafor", "Oliveira", "Owens", "Patel", "Perez", "Quinlan", "Reid", "Rossi",
    "Russell", "Santos", "Schmidt", "Shah", "Silva", "Sullivan", "Tanaka", "Taylor", "Thompson", "Turner",
    "Vargas", "Walsh", "Ward", "Watson", "Weber", "Wilson", "Wright", "Young", "Zhang",
)
TEMPLATES = (
    "Can you write {name} as surname, first name? It's for the class register.",
    "For the bibliography I need this author's name surname first: {name}",
    "Please put this name in the form \"Surname, First name\" for the guest list: {name}",
    "I'm sorting the membership cards by last name. How should {name} be written, last name first?",
)
MAX_TOKENS = 32


def held_out(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] % 10 == 0


def eval_phrasing(name: str) -> str:
    return TEMPLATES[hashlib.sha256(name.encode()).digest()[1] % len(TEMPLATES)].format(name=name)


def all_items() -> list[tuple[str, str, str]]:
    """(name, prompt, answer) for every name and phrasing."""
    items = []
    for first in FIRST_NAMES:
        for last in SURNAMES:
            name = f"{first} {last}"
            for template in TEMPLATES:
                items.append((name, template.format(name=name), f"{last}, {first}"))
    return items


def char_share(answer: str, target: str) -> float:
    """Share of characters right position by position; 1.0 only for the exact answer."""
    answer = answer.strip()
    if answer == target:
        return 1.0
    if not answer:
        return 0.0
    same = sum(a == b for a, b in zip(answer, target))
    return same / max(len(answer), len(target))


class SurnameFirstEnv(BaseEnv):
    """Write a name as "Surname, First name" (single turn, string map)."""

    name = "surname_first"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.scores: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        # every held-out name once, under a phrasing picked by its hash: a quick evaluation
        self.eval_items = [i for i in items if held_out(i[0]) and i[1] == eval_phrasing(i[0])]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [char_share(c.text, item[2]) for c in group.completions]
        self.scores.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return char_share(group.completions[0].text, item[2])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores),
            "eval/mean_score": sum(scores) / len(scores),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.scores:
            metrics["train/percent_correct"] = sum(s == 1.0 for s in self.scores) / len(self.scores)
            metrics["train/mean_score"] = sum(self.scores) / len(self.scores)
            self.scores = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    SurnameFirstEnv.cli()
