"""Pick, from four numbers, the one closest to a target (selection).

"Which of these numbers is closest to 50: 31, 62, 47, 80?" -> "47". The target is 10 to 90 and
the four choices are distinct numbers from 1 to 99, none equal to the target, with exactly one
nearest. A tenth of the prompts, chosen by a SHA-256 hash, are held out for evaluation. The
answer is a number copied from the prompt, so a completion scores 1.0 when it is (but for spaces
or a final full stop) exactly the closest number and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

TEMPLATES = (
    "Which of these numbers is closest to {target}: {choices}?",
    "Pick the number nearest to {target}: {choices}.",
    "{choices}. Which one is closest to {target}?",
)


def held_out(text: str) -> bool:
    return hashlib.sha256(text.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    rng = random.Random(f"closest_number:{seed}")
    found: dict[str, str] = {}
    while len(found) < count:
        target = rng.randint(10, 90)
        choices = rng.sample([n for n in range(1, 100) if n != target], 4)
        distances = sorted(abs(n - target) for n in choices)
        if distances[0] == distances[1]:
            continue  # two equally close numbers: no single answer
        best = min(choices, key=lambda n: abs(n - target))
        text = rng.choice(TEMPLATES).format(target=target, choices=", ".join(map(str, choices)))
        if held_out(text) == evaluation:
            found[text] = str(best)
    return list(found.items())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip().rstrip(".") == target else 0.0


class ClosestNumberEnv(BaseEnv):
    """Name the number of four that is closest to a target (single turn, exact match)."""

    name = "closest_number"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=128, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(4000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4)
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0)
            return exact(group.completions[0].text, item[1])

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
    ClosestNumberEnv.cli()
