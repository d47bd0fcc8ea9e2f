"""Edit a short note by swapping one word for another (string map).

"My note says 'buy apples on Monday'. Change 'Monday' to 'Friday' and write the note again."
-> "buy apples on Friday". Notes are "{verb} {food} on {day}"; the word to change is either the
food (replaced by another food) or the day (replaced by another day), so every word of the
answer is in the prompt. Each edit (note, old word, new word) is asked under three phrasings; a
tenth of the edits, chosen by a SHA-256 hash, are held out (under all phrasings) for evaluation.
A completion scores 1.0 when it is exactly the edited note and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

VERBS = ("buy", "bake", "cook", "bring", "order")
FOODS = (
    "apples", "bread", "cake", "rice", "soup", "pasta", "pizza", "eggs",
    "cheese", "salad", "pie", "fish", "beans", "tacos", "muffins",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
TEMPLATES = (
    "My note says '{note}'. Change '{old}' to '{new}' and write the note again.",
    "Replace '{old}' with '{new}' in this note: {note}",
    "Fix my reminder '{note}': it should say '{new}' instead of '{old}'. Write the fixed reminder.",
)
EVAL_SIZE = 300


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def all_edits() -> list[tuple[str, str, str, str]]:
    """(note, old word, new word, edited note) for every possible edit."""
    edits = []
    for verb in VERBS:
        for food in FOODS:
            for day in DAYS:
                note = f"{verb} {food} on {day}"
                for other in FOODS:
                    if other != food:
                        edits.append((note, food, other, f"{verb} {other} on {day}"))
                for other in DAYS:
                    if other != day:
                        edits.append((note, day, other, f"{verb} {food} on {other}"))
    return edits


def all_items() -> list[tuple[str, str, str]]:
    """(key, prompt, answer) for every edit and phrasing."""
    items = []
    for note, old, new, answer in all_edits():
        key = f"{note}|{old}|{new}"
        for template in TEMPLATES:
            items.append((key, template.format(note=note, old=old, new=new), answer))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class ReplaceWordEnv(BaseEnv):
    """Rewrite a short note with one word replaced by another (single turn, string map)."""

    name = "replace_word"

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
        eval_items = [i for i in items if held_out(i[0])]
        self.eval_items = random.Random(f"replace_word:{self.config.seed}").sample(eval_items, min(EVAL_SIZE, len(eval_items)))
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=32)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=32, temperature=0.0)
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
    ReplaceWordEnv.cli()
