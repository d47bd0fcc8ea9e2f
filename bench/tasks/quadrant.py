"""Say which quadrant of the plane a point lies in, through guided_choice (classification).

"Which quadrant is the point (3, -5) in: first, second, third or fourth?" -> "fourth". The
quadrants are the usual ones: first for x > 0 and y > 0, second for x < 0 and y > 0, third for
x < 0 and y < 0, fourth for x > 0 and y < 0. Items are the 10,000 points with whole-number
coordinates from -50 to 50, neither of them 0 (so no point lies on an axis, and each quadrant
holds a quarter of them); a tenth, chosen by a SHA-256 hash, are held out for evaluation.
Answers are constrained to the four labels; a completion scores 1.0 for the right one and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["first", "second", "third", "fourth"]
COORDINATES = [c for c in range(-50, 51) if c != 0]

Item = tuple[int, int]  # (x, y)


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"quadrant of ({item[0]}, {item[1]})".encode()).digest()[0] % 10 == 0


def answer(item: Item) -> str:
    x, y = item
    if y > 0:
        return "first" if x > 0 else "second"
    return "fourth" if x > 0 else "third"


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"quadrant:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        item = (rng.choice(COORDINATES), rng.choice(COORDINATES))
        if held_out(item) == evaluation:
            found[item] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class QuadrantEnv(BaseEnv):
    """Name the quadrant a point lies in: first, second, third or fourth (single turn, guided_choice)."""

    name = "quadrant"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Which quadrant is the point ({item[0]}, {item[1]}) in: first, second, third or fourth?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=6, guided_choice=LABELS)
        scores = [exact(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=6, temperature=0.0, guided_choice=LABELS)
            return exact(group.completions[0].text, answer(item))

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
    QuadrantEnv.cli()
