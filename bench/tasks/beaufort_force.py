"""Give the Beaufort force of a wind speed in km/h, answering through guided_choice (classification).

"The forecast says winds of 45 km/h tomorrow. What force is that on the Beaufort scale?" ->
"6". The labels are the forces "0" to "12", with the scale's usual km/h bands: under 1 is 0,
1-5 is 1, 6-11 is 2, 12-19 is 3, 20-28 is 4, 29-38 is 5, 39-49 is 6, 50-61 is 7, 62-74 is 8,
75-88 is 9, 89-102 is 10, 103-117 is 11, and 118 or more is 12. Every whole speed from 0 to 140
km/h is asked under four phrasings; a tenth of the speeds, chosen by a SHA-256 hash, are held
out (under all phrasings) for evaluation, so the policy must learn the bands, not the speeds.
Answers are constrained to the thirteen labels; a completion scores 1.0 for the right force
and 0 otherwise.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = [str(force) for force in range(13)]
LOWER_BOUNDS = (1, 6, 12, 20, 29, 39, 50, 62, 75, 89, 103, 118)  # lowest km/h of forces 1..12
TEMPLATES = (
    "Wind speed {speed} km/h: what Beaufort force is that?",
    "The forecast says winds of {speed} km/h tomorrow. What force is that on the Beaufort scale?",
    "The marine forecast for the coast gives winds of {speed} km/h. Which Beaufort number is that?",
    "My weather station shows a steady wind of {speed} km/h. What's that on the Beaufort scale?",
)


class BeaufortForceConfig(BaseEnvConfig):
    max_speed: int = Field(140, ge=120, le=400, description="Fastest wind speed asked about, in km/h.")


def force(speed: int) -> str:
    return str(bisect.bisect_right(LOWER_BOUNDS, speed))


def held_out(speed: int) -> bool:
    return hashlib.sha256(str(speed).encode()).digest()[0] % 10 == 0


def all_items(max_speed: int) -> list[tuple[int, str, str]]:
    """(speed, prompt, force) for every speed and phrasing."""
    return [(speed, template.format(speed=speed), force(speed)) for speed in range(max_speed + 1) for template in TEMPLATES]


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


MAX_TOKENS = 4  # "12" and a little more


class BeaufortForceEnv(BaseEnv):
    """Say which Beaufort force a wind speed is (single turn, guided_choice)."""

    name = "beaufort_force"
    env_config_cls = BeaufortForceConfig

    def __init__(self, config: BeaufortForceConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BeaufortForceConfig, list[APIServerConfig]]:
        config = BeaufortForceConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items(self.config.max_speed)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, guided_choice=LABELS, temperature=0.0)
            return exact(group.completions[0].text, item[2])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
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
    BeaufortForceEnv.cli()
