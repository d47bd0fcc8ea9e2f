"""Give the letter grade of a test score by the scale stated in the prompt (classification).

Example: "Maya scored 83 in math. A is 90 or more, B is 80 to 89, C is 70 to 79 and F is below
70. What grade did Maya get?" -> "B". The reply is constrained to one of the labels A, B, C, F
(guided_choice). Items are (name, subject, score) from twenty-four names and six subjects; the
grade is drawn evenly from the four, then a score in its range (F scores are 45 to 69). A tenth
of the items, chosen by a SHA-256 hash, are held out for evaluation (every name, subject and
grade also appears in training items). A completion scores 1.0 when, after .strip(), it is the
right letter and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["A", "B", "C", "F"]
RANGES = {"A": (90, 100), "B": (80, 89), "C": (70, 79), "F": (45, 69)}
NAMES = (
    "Maya Liam Noah Emma Ava Lucas Zara Omar Ines Theo Ruby Jonas Lena Ravi Sofia Hana Milo Nora "
    "Eli Ada Felix Iris Owen Lucy"
).split()
SUBJECTS = "math history science music art French".split()

Item = tuple[str, str, int]  # (name, subject, score)


def held_out(item: Item) -> bool:
    name, subject, points = item
    return hashlib.sha256(f"letter_grade {name} {subject} {points}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"letter_grade:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        low, high = RANGES[rng.choice(LABELS)]
        item = (rng.choice(NAMES), rng.choice(SUBJECTS), rng.randint(low, high))
        if held_out(item) == evaluation:
            found[item] = None
    return list(found)


def answer(item: Item) -> str:
    points = item[2]
    if points >= 90:
        return "A"
    if points >= 80:
        return "B"
    if points >= 70:
        return "C"
    return "F"


def score(text: str, item: Item) -> float:
    return 1.0 if text.strip() == answer(item) else 0.0


class LetterGradeEnv(BaseEnv):
    """Answer A, B, C or F for a test score, by the stated grading scale (single turn, guided choice)."""

    name = "letter_grade"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Item:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        name, subject, points = item
        scale = "A is 90 or more, B is 80 to 89, C is 70 to 79 and F is below 70."
        return [{"role": "user", "content": f"{name} scored {points} in {subject}. {scale} What grade did {name} get?"}]

    async def collect_trajectories(self, item: Item) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4, guided_choice=LABELS)
        scores = [score(c.text, item) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0, guided_choice=LABELS)
            return score(group.completions[0].text, item)

        scores = await gather_bounded((one(item) for item in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    LetterGradeEnv.cli()
