"""Count the people named in a short diary note (counting).

"How many people are mentioned in this message? "Had lunch with Priya, Tom and Sara on
Friday." Answer with a number." -> "3". A note names one to five different people in an
everyday activity, sometimes with a capitalised day of the week that is not a person, and is
asked under three phrasings. Notes are drawn at random; a tenth of them, chosen by a SHA-256
hash of the note (whatever the phrasing), are held out for evaluation, so the policy must count
names, not memorise notes. A completion scores 1.0 when it is the right number in digits
(spacing and a final full stop aside) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Priya", "Tom", "Sara", "Luis", "Anna", "Ben", "Kim", "Omar", "Jess", "Leo", "Maya", "Raj",
    "Zoe", "Sam", "Nina", "Hugo", "Ella", "Dan", "Ivy", "Marco", "Lena", "Jack", "Aisha", "Theo",
    "Rosa", "Felix", "Chloe", "Ravi", "Grace", "Owen",
)
ACTIVITIES = (
    "Had lunch with {names}",
    "Went to the cinema with {names}",
    "Played tennis with {names}",
    "Caught up with {names}",
    "Bumped into {names} at the market",
    "Shared a taxi with {names}",
    "Helped {names} move house",
    "Had a video call with {names}",
    "{names} came over for dinner",
    "Went hiking with {names}",
)
WHEN = ("", " on Monday", " on Friday", " on Saturday", " on Sunday", " yesterday", " this morning", " last night")
TEMPLATES = (
    'How many people are mentioned in this message? "{note}" Answer with a number.',
    "Quick one: how many people do I name here? {note} Just give the number.",
    "Count the people in this diary note (a number, please): {note}",
)
MAX_TOKENS = 4


def held_out(note: str) -> bool:
    return hashlib.sha256(note.encode()).digest()[0] % 10 == 0


def joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(note, prompt, count as digits) for ``count`` distinct notes on the chosen side of the split."""
    rng = random.Random(f"people_mentioned:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        names = rng.sample(NAMES, rng.randint(1, 5))
        note = rng.choice(ACTIVITIES).format(names=joined(names)) + rng.choice(WHEN) + "."
        if note in found or held_out(note) != evaluation:
            continue
        found[note] = (note, rng.choice(TEMPLATES).format(note=note), str(len(names)))
    return list(found.values())


def normalise(text: str) -> str:
    return " ".join(text.split()).removesuffix(".")


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == normalise(target) else 0.0


class PeopleMentionedEnv(BaseEnv):
    """Count the people named in a note (single turn, counting)."""

    name = "people_mentioned"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(5000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
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
    PeopleMentionedEnv.cli()
