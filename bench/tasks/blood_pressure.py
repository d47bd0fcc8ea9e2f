"""Put a blood pressure reading in its category, answering through guided_choice (classification).

"My blood pressure this morning was 134/82. Is that normal, elevated, stage 1 or stage 2
hypertension?" -> "stage 1". Categories are the 2017 ACC/AHA ones: normal below 120 and below
80; elevated 120-129 and below 80; stage 1 130-139 or 80-89; stage 2 140 or more or 90 or more
(the higher category of the two numbers wins). Readings run from 95 to 179 systolic and 55 to
109 diastolic, the systolic 25 to 80 above the diastolic, under several phrasings; a tenth of
the readings, chosen by a SHA-256 hash, are held out (under all phrasings) for evaluation.
Training picks a category first, then a reading in it, so the four are asked equally often;
the evaluation takes up to 50 held-out readings per category. Answers are constrained to the
four labels; a completion scores 1.0 for the right category and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["normal", "elevated", "stage 1", "stage 2"]
TEMPLATES = (
    "My blood pressure this morning was {s}/{d}. Is that normal, elevated, stage 1 or stage 2 hypertension?",
    "The machine at the pharmacy read {s} over {d}. By the AHA categories, is that normal, elevated, stage 1 or stage 2?",
    "Dad's reading at the clinic was {s}/{d} mmHg. Which category is that: normal, elevated, stage 1 or stage 2?",
    "My new cuff says {s}/{d}. Should I file that as normal, elevated, stage 1 or stage 2 in my log?",
)


def category(systolic: int, diastolic: int) -> str:
    if systolic >= 140 or diastolic >= 90:
        return "stage 2"
    if systolic >= 130 or diastolic >= 80:
        return "stage 1"
    if systolic >= 120:
        return "elevated"
    return "normal"


def held_out(reading: str) -> bool:
    return hashlib.sha256(f"blood_pressure:{reading}".encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(reading, prompt, category) for every reading and phrasing."""
    items = []
    for systolic in range(95, 180):
        for diastolic in range(55, 110):
            if not 25 <= systolic - diastolic <= 80:
                continue
            reading = f"{systolic}/{diastolic}"
            label = category(systolic, diastolic)
            for template in TEMPLATES:
                items.append((reading, template.format(s=systolic, d=diastolic), label))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class BloodPressureEnv(BaseEnv):
    """Say which category a blood pressure reading is in (single turn, guided_choice)."""

    name = "blood_pressure"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_by_label: dict[str, list[tuple[str, str, str]]] = {label: [] for label in LABELS}
        held: dict[str, dict[str, list[tuple[str, str, str]]]] = {label: {} for label in LABELS}
        for item in items:
            if held_out(item[0]):
                held[item[2]].setdefault(item[0], []).append(item)
            else:
                self.train_by_label[item[2]].append(item)
        picker = random.Random(f"blood_pressure:eval:{self.config.seed}")
        self.eval_items = []
        for label in LABELS:
            readings = sorted(held[label])
            for reading in picker.sample(readings, min(50, len(readings))):
                self.eval_items.append(picker.choice(held[label][reading]))
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_by_label[self.rng.choice(LABELS)])

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=10, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=10, guided_choice=LABELS, temperature=0.0)
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
    BloodPressureEnv.cli()
