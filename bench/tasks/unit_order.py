"""Put units of length in order from smallest to largest (ordering).

"Put these units in order from smallest to largest: mile, inch, metre, foot." -> "inch, foot,
metre, mile". Three or four of millimetre, centimetre, inch, foot, yard, metre, kilometre and
mile are offered in every order, under three phrasings. A tenth of the sets of units, chosen by a
SHA-256 hash, are held out (in every order and phrasing) for evaluation, so the policy must know
how the units compare, not memorise answers. A completion scores 1.0 when it lists the units in
the right order and 0 otherwise; capitals, spacing, "and" before the last unit, a final full stop
and the spelling "meter" are forgiven.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

UNITS = ("millimetre", "centimetre", "inch", "foot", "yard", "metre", "kilometre", "mile")  # smallest first
TEMPLATES = (
    "Put these units in order from smallest to largest: {units}.",
    "Can you sort these lengths from shortest to longest? {units}",
    "Which order do these go in, smallest first: {units}?",
)


def held_out(unit_set: str) -> bool:
    return hashlib.sha256(unit_set.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(set of units, prompt, ordered answer) for every set, order and phrasing."""
    items = []
    for size in (3, 4):
        for chosen in itertools.combinations(UNITS, size):  # combinations keep UNITS' order
            key = "|".join(sorted(chosen))
            answer = ", ".join(chosen)
            for shown in itertools.permutations(chosen):
                for template in TEMPLATES:
                    items.append((key, template.format(units=", ".join(shown)), answer))
    return items


def normalise(text: str) -> str:
    text = " ".join(text.lower().split()).rstrip(".").strip()
    text = text.replace(" and ", ", ").replace(",,", ",").replace("meter", "metre")
    return ", ".join(part.strip() for part in text.split(","))


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == target else 0.0


MAX_TOKENS = len(", ".join(sorted(UNITS, key=len)[-4:])) + 4


class UnitOrderEnv(BaseEnv):
    """Order units of length from smallest to largest (single turn, ordering)."""

    name = "unit_order"

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
        held = [i for i in items if held_out(i[0])]
        # a fixed sample keeps evaluation short; every item in it is held out
        self.eval_items = random.Random("unit_order:eval").sample(held, min(200, len(held)))
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
    UnitOrderEnv.cli()
