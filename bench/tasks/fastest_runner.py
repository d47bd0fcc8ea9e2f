"""Pick the fastest runner from a list of race times (selection).

"Race results: Mia 12.4 s, Leo 11.9 s and Zoe 12.1 s. Who was fastest?" -> "Leo".
Each race has three or four runners, with distinct names from a list in this file and distinct
times between 10.0 and 15.9 seconds (one decimal place), in a random order; the answer is the
name with the smallest time. Each race is asked under one of three phrasings. A tenth of the
races, chosen by a SHA-256 hash of the runners and times, are held out for evaluation, so the
policy must compare the times, not memorise answers. A completion scores 1.0 when it is exactly
the fastest runner's name and 0 otherwise; evaluation is greedy and exact.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Mia", "Leo", "Zoe", "Sam", "Ava", "Max", "Ivy", "Ben", "Eva", "Tom",
    "Amy", "Dan", "Lily", "Jack", "Ruby", "Finn", "Nina", "Omar", "Tess", "Hugo",
    "Jade", "Kai", "Lena", "Raj", "Sara", "Theo", "Maya", "Eli", "Rosa", "Alex",
    "Gina", "Paul", "Iris", "Noah", "Cleo", "Luca", "Anya", "Ravi", "Lola", "Jon",
)
TEMPLATES = (
    "Race results: {runners}. Who was fastest?",
    "Times in the 100 m sprint: {runners}. Which runner won?",
    "At sports day, {runners}. Who had the best time?",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def listing(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(race key, prompt, winner) for ``count`` distinct races on one side of the split."""
    rng = random.Random(f"fastest_runner:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        size = rng.choice((3, 4))
        names = rng.sample(NAMES, size)
        tenths = rng.sample(range(100, 160), size)
        key = ", ".join(f"{n} {t / 10:.1f}" for n, t in zip(names, tenths))
        if key in found or held_out(key) != evaluation:
            continue
        template = rng.choice(TEMPLATES)
        if template.startswith("At sports day"):
            runners = listing([f"{n} ran {t / 10:.1f} s" for n, t in zip(names, tenths)])
        else:
            runners = listing([f"{n} {t / 10:.1f} s" for n, t in zip(names, tenths)])
        winner = names[tenths.index(min(tenths))]
        found[key] = (key, template.format(runners=runners), winner)
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class FastestRunnerEnv(BaseEnv):
    """Name the runner with the best time (single turn, selection)."""

    name = "fastest_runner"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=8)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=8, temperature=0.0)
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
    FastestRunnerEnv.cli()
