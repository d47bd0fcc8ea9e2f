"""Say whether water at a given temperature is a solid, a liquid or a gas, through guided_choice
(classification).

"At normal air pressure, is water at 37.5 degrees Celsius a solid, a liquid or a gas?" -> "liquid".
Pure water at standard pressure is solid below 0 degrees Celsius, liquid between 0 and 100 and
a gas above 100; the two boundary temperatures themselves are never asked. Temperatures run from
-60.0 to 160.0 in steps of 0.1 (written without the ".0" when whole), about 2,200 in all, each
asked under one of three phrasings chosen by a SHA-256 hash. A tenth of the temperatures, chosen
by a SHA-256 hash of the temperature, are held out for evaluation, so the policy must compare
against the thresholds, not memorise answers. Answers are constrained to the three labels; a
completion scores 1.0 for the right state and 0 otherwise; evaluation is greedy and exact.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["solid", "liquid", "gas"]
TEMPLATES = (
    "At normal air pressure, is water at {t} degrees Celsius a solid, a liquid or a gas?",
    "A pot of pure water at sea level is at {t} degrees Celsius. Is it solid, liquid or gas?",
    "What state is water in at {t} C and standard pressure: solid, liquid or gas?",
)


def digest(temperature: str) -> bytes:
    return hashlib.sha256(temperature.encode()).digest()


def held_out(temperature: str) -> bool:
    return digest(temperature)[0] % 10 == 0


def state(tenths: int) -> str:
    return "solid" if tenths < 0 else "liquid" if tenths < 1000 else "gas"


def all_items() -> list[tuple[str, str, str]]:
    """(temperature, prompt, state) for every temperature asked."""
    items = []
    for tenths in range(-600, 1601):
        if tenths in (0, 1000):
            continue
        temperature = str(tenths // 10) if tenths % 10 == 0 else f"{tenths / 10:.1f}"
        template = TEMPLATES[digest(temperature)[1] % len(TEMPLATES)]
        items.append((temperature, template.format(t=temperature), state(tenths)))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class WaterStateEnv(BaseEnv):
    """Say which state water is in at a temperature (single turn, guided_choice)."""

    name = "water_state"

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
    WaterStateEnv.cli()
