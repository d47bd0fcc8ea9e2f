"""Count the days of a week's exercise log on which the person actually worked out (counting).

"Here's my exercise log for last week: Mon: 5 km run, Tue: rest, Wed: yoga, Thu: day off, Fri:
swim, Sat: rest, Sun: cycling. How many days did I work out?" -> "4". Each log covers Monday to
Sunday; every day is either an activity (a run, a swim, yoga, a gym session...) or a day
without one, written as "rest", "rest day", "day off", "skipped" or "nothing". The answer is a
number from 0 to 7. Logs are generated from a seed; a tenth of all possible items, chosen by a
SHA-256 hash of the item, are reserved for evaluation and never trained on. A completion
scores 1.0 for the exact number; a bare number that is off scores 0.5 * (1 - |error| / 4)
(nothing from an error of 4 on), since the local policy rarely writes the right digit at
first and a near count is nearer the goal than a far one.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
ACTIVITIES = (
    "5 km run", "10 km run", "30 min run", "yoga", "swim", "gym", "cycling", "tennis", "football",
    "pilates", "climbing", "rowing", "spin class", "weights", "boxing", "hike", "HIIT", "badminton",
)
NOTHING = ("rest", "rest day", "day off", "skipped", "nothing")
TEMPLATES = (
    "Here's my exercise log for last week:\n{lines}\nHow many days did I work out?",
    "{lines}\nThat was my week. On how many days did I actually exercise?",
    "My fitness tracker shows this for the week: {inline}. How many workout days is that?",
)
MAX_TOKENS = 3  # the answer is one digit


class WorkoutDaysConfig(BaseEnvConfig):
    train_size: int = Field(5000, gt=0, le=1_000_000, description="Training items generated.")
    eval_size: int = Field(200, gt=0, le=100_000, description="Held-out items evaluated.")


def held_out(prompt: str) -> bool:
    return hashlib.sha256(prompt.encode()).digest()[0] % 10 == 0


def make_item(rng: random.Random) -> tuple[str, int]:
    """(prompt, number of workout days)."""
    count = rng.randint(0, 7)
    active = set(rng.sample(range(7), count))
    entries = [f"{day}: {rng.choice(ACTIVITIES) if i in active else rng.choice(NOTHING)}" for i, day in enumerate(DAYS)]
    prompt = rng.choice(TEMPLATES).format(lines="\n".join(entries), inline=", ".join(entries))
    return prompt, count


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, int]]:
    rng = random.Random(f"workout_days:{seed}:{'eval' if evaluation else 'train'}")
    found: dict[str, int] = {}
    while len(found) < count:
        prompt, answer = make_item(rng)
        if held_out(prompt) == evaluation:
            found[prompt] = answer
    return list(found.items())


def closeness(answer: str, target: int) -> float:
    text = answer.strip()
    if not re.fullmatch(r"\d+", text):
        return 0.0
    error = abs(int(text) - target)
    return 1.0 if error == 0 else 0.5 * max(0.0, 1.0 - error / 4)


class WorkoutDaysEnv(BaseEnv):
    """Count the workout days in a week's exercise log (single turn)."""

    name = "workout_days"
    env_config_cls = WorkoutDaysConfig

    def __init__(self, config: WorkoutDaysConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[WorkoutDaysConfig, list[APIServerConfig]]:
        config = WorkoutDaysConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_size, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_size, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [closeness(c.text, item[1]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return closeness(group.completions[0].text, item[1])

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
    WorkoutDaysEnv.cli()
