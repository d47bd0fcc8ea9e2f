"""Take the title off a person's name, leaving the name itself (a string map).

"Please drop the title from this name for the name badge: Dr. Anna Berg" -> "Anna Berg". Titles
are the everyday ones (Dr., Prof., Mr, Mrs., Ms, Miss, Rev. ...), with or without a full stop;
first names and surnames come from short lists. Every titled name is asked under three phrasings;
a tenth of the people (first name and surname), chosen by a SHA-256 hash, are held out under
every title and phrasing for evaluation, so the policy must learn to drop the first word, not
memorise names. A completion scores 1.0 when it is the name exactly (extra spaces and a final
full stop are forgiven, capitals are not) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ANY_TITLES = ("Dr.", "Dr", "Prof.", "Professor", "Rev.")
FEMALE_TITLES = ("Mrs.", "Mrs", "Ms.", "Ms", "Miss")
MALE_TITLES = ("Mr.", "Mr")
FEMALE_NAMES = ("Anna", "Maria", "Sophie", "Emma", "Laura", "Julia", "Grace", "Olivia", "Nina", "Clara",
                "Hannah", "Lucy", "Amira", "Ingrid", "Rosa", "Priya", "Chloe", "Ellen", "Fatima", "Ruth")
MALE_NAMES = ("Tom", "David", "Peter", "James", "Lukas", "Omar", "Daniel", "Felix", "Marco", "Samuel",
              "Ben", "Hugo", "Ravi", "Erik", "Paul", "Noah", "Carlos", "Simon", "Kenji", "Victor")
SURNAMES = ("Berg", "Smith", "Novak", "Okafor", "Garcia", "Jensen", "Rossi", "Kowalski", "Brown", "Tanaka",
            "Murphy", "Schmidt", "Patel", "Dubois", "Larsen", "Silva", "Walker", "Nguyen", "Fischer", "Moreau",
            "Hughes", "Costa", "Lindqvist", "Adler", "Baker", "Haddad", "Wright", "Keller", "Evans", "Quinn")
TEMPLATES = (
    "Please drop the title from this name for the name badge: {full}",
    "Can you write {full} without the title?",
    'What\'s left of "{full}" if you take off the title? Just the name, please.',
)


def held_out(person: str) -> bool:
    return hashlib.sha256(person.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(person, prompt, answer) for every titled name and phrasing."""
    items = []
    for names, own_titles in ((FEMALE_NAMES, FEMALE_TITLES), (MALE_NAMES, MALE_TITLES)):
        for first in names:
            for surname in SURNAMES:
                person = f"{first} {surname}"
                for title in ANY_TITLES + own_titles:
                    for template in TEMPLATES:
                        items.append((person, template.format(full=f"{title} {person}"), person))
    return items


def normalise(text: str) -> str:
    return " ".join(text.split()).rstrip(".").strip()


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == target else 0.0


MAX_TOKENS = max(len(first) for first in FEMALE_NAMES + MALE_NAMES) + max(len(s) for s in SURNAMES) + 1 + 4


class DropTitleEnv(BaseEnv):
    """Write a name without its title (single turn, string map)."""

    name = "drop_title"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        held = [i for i in items if held_out(i[0])]
        # a fixed sample keeps evaluation short; every item in it is held out
        self.eval_items = random.Random("drop_title:eval").sample(held, min(200, len(held)))
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
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
    DropTitleEnv.cli()
