"""Say whether a pH reading is acidic, neutral or alkaline, through guided_choice (classification).

"My pool water tested at pH 7.8. Is that acidic, neutral or alkaline?" -> "alkaline". Below 7 is
acidic, exactly 7 neutral, above 7 alkaline. Every reading from 0 to 14 in steps of 0.1 is asked
under three phrasings; a tenth of the readings, chosen by a SHA-256 hash, are held out (under
every phrasing) for evaluation, so the policy must compare with 7, not memorise readings.
Answers are constrained to the three labels; a completion scores 1.0 for the right label and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["acidic", "neutral", "alkaline"]
TEMPLATES = (
    "Is a pH of {ph} acidic, neutral or alkaline?",
    "My pool water tested at pH {ph}. Is that acidic, neutral or alkaline?",
    "The soil test kit says pH {ph}. Acidic, neutral or alkaline?",
)


def held_out(reading: str) -> bool:
    return hashlib.sha256(reading.encode()).digest()[0] % 10 == 0


def label(tenths: int) -> str:
    return "acidic" if tenths < 70 else "neutral" if tenths == 70 else "alkaline"


def all_items() -> list[tuple[str, str, str]]:
    """(reading, prompt, label) for every reading and phrasing; whole readings are written "7"."""
    items = []
    for tenths in range(0, 141):
        reading = str(tenths // 10) if tenths % 10 == 0 else f"{tenths // 10}.{tenths % 10}"
        for template in TEMPLATES:
            items.append((reading, template.format(ph=reading), label(tenths)))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


MAX_TOKENS = max(len(x) for x in LABELS) + 2


class PhReadingEnv(BaseEnv):
    """Classify a pH reading as acidic, neutral or alkaline (single turn, guided_choice)."""

    name = "ph_reading"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
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
    PhReadingEnv.cli()
