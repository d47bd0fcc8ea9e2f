"""Name the UK size of an egg from its weight, answering through guided_choice (classification).

"My hens laid a nice one this morning: 61.4 g. What size would that be sold as in the UK?" ->
"medium". Sizes are the UK ones: under 53 g small, 53 g to under 63 g medium, 63 g to under
73 g large, 73 g and over very large. Every weight from 40 g to 84.9 g in steps of 0.1 g
(whole grams written without ".0") is asked under four phrasings; a tenth of the weights,
chosen by a SHA-256 hash, are held out (under all phrasings) for evaluation, so the policy must
go by the weight, not memorise it. Answers are constrained to the four labels; a completion
scores 1.0 for the right size and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["small", "medium", "large", "very large"]
BOUNDS = ((530, "small"), (630, "medium"), (730, "large"))  # tenths of a gram: below the bound
MAX_TOKENS = max(len(label) for label in LABELS) + 2
TEMPLATES = (
    "My hens laid a nice one this morning: {weight} g. What size would that be sold as in the UK?",
    "I weighed an egg on the kitchen scales and got {weight} g. Which UK egg size is that?",
    "The recipe wants large eggs. Mine weighs {weight} g - what size is it by UK standards?",
    "What size is a {weight} g egg in the UK?",
)


def size_of(tenths: int) -> str:
    for bound, label in BOUNDS:
        if tenths < bound:
            return label
    return "very large"


def written(tenths: int) -> str:
    return str(tenths // 10) if tenths % 10 == 0 else f"{tenths // 10}.{tenths % 10}"


def held_out(weight: str) -> bool:
    return hashlib.sha256(weight.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(weight, prompt, size) for every weight and phrasing."""
    items = []
    for tenths in range(400, 850):
        weight = written(tenths)
        for template in TEMPLATES:
            items.append((weight, template.format(weight=weight), size_of(tenths)))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class EggSizeEnv(BaseEnv):
    """Say which UK size an egg of a given weight is (single turn, guided_choice)."""

    name = "egg_size"

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
    EggSizeEnv.cli()
