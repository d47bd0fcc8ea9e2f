"""Sort distinct letters alphabetically: "Sort these letters alphabetically: dbca" -> "abcd" (ordering).

Items are 3 to 5 distinct letters a-z in random order; a tenth, chosen by CRC-32, are held out
for evaluation. A completion scores 1.0 for the sorted string, otherwise 0.5 times the share of
positions it gets right (over the longer of answer and target).
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def held_out(letters: str) -> bool:
    return zlib.crc32(letters.encode()) % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"sort_letters:{seed}:{evaluation}")
    found: dict[str, None] = {}
    while len(found) < count:
        letters = "".join(rng.sample(ALPHABET, rng.randint(3, 5)))
        if held_out(letters) == evaluation:
            found[letters] = None
    return list(found)


def positional(answer: str, target: str) -> float:
    answer = answer.strip()
    if answer == target:
        return 1.0
    if not answer:
        return 0.0
    return 0.5 * sum(a == b for a, b in zip(answer, target)) / max(len(answer), len(target))


class SortLettersEnv(BaseEnv):
    """Sort a few distinct letters alphabetically (single turn)."""

    name = "sort_letters"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=64, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Sort these letters alphabetically: {item}"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        messages = self.prompt(item)
        group = await self.policy.chat(messages, n=self.config.group_size, max_tokens=len(item) + 2)
        scores = [positional(c.text, "".join(sorted(item))) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=len(item) + 2, temperature=0.0)
            return positional(group.completions[0].text, "".join(sorted(item)))

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
    SortLettersEnv.cli()
