"""Name the compass point nearest a bearing, answering through guided_choice (classification).

"The ship is sailing on a bearing of 263 degrees. Roughly which way is it heading?" -> "west".
Bearings are whole degrees clockwise from north; the answer is the nearest of the four cardinal
points: north below 45 or above 315, east between 45 and 135, south between 135 and 225, west
between 225 and 315 (the four ties, 45, 135, 225 and 315, are left out). Every other bearing is
asked under three phrasings; a tenth of the bearings, chosen by a SHA-256 hash, are held out
(under all phrasings) for evaluation, so the policy must go by the angle, not memorise bearings.
Answers are constrained to the four labels; a completion scores 1.0 for the nearest point and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["north", "east", "south", "west"]
TEMPLATES = (
    "The ship is sailing on a bearing of {bearing} degrees. Roughly which way is it heading?",
    "My compass says I'm heading {bearing} degrees. Is that north, east, south or west, more or less?",
    "The trail sign says the hut is at {bearing} degrees from here. Which direction is that, roughly?",
)


def nearest_point(bearing: int) -> str:
    return LABELS[((bearing + 45) % 360) // 90]


def held_out(bearing: int) -> bool:
    return hashlib.sha256(str(bearing).encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[int, str, str]]:
    """(bearing, prompt, compass point) for every bearing that is not a tie, and every phrasing."""
    items = []
    for bearing in range(360):
        if bearing % 90 == 45:
            continue
        for template in TEMPLATES:
            items.append((bearing, template.format(bearing=bearing), nearest_point(bearing)))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class CompassHeadingEnv(BaseEnv):
    """Say which cardinal point a bearing is closest to (single turn, guided_choice)."""

    name = "compass_heading"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=176, use_wandb=False)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=8, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=8, guided_choice=LABELS, temperature=0.0)
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
    CompassHeadingEnv.cli()
