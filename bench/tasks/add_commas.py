"""Write a whole number with commas as thousands separators (string map): "Write 4821937 with
commas between the thousands." -> "4,821,937".

Items are whole numbers of four to eight digits (each length equally likely, no leading zero),
written without separators in the prompt. A tenth of the numbers, chosen by a SHA-256 hash, are
held out for evaluation. A completion scores 1.0 when, after .strip(), it is the number with a
comma before every group of three digits counted from the right, and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup


def held_out(item: int) -> bool:
    return hashlib.sha256(f"commas in {item}".encode()).digest()[0] % 10 == 0


def answer(item: int) -> str:
    return f"{item:,}"


def make_items(count: int, *, seed: int, evaluation: bool) -> list[int]:
    rng = random.Random(f"add_commas:{seed}")
    found: dict[int, None] = {}
    while len(found) < count:
        digits = rng.randint(4, 8)
        item = rng.randrange(10 ** (digits - 1), 10**digits)
        if held_out(item) == evaluation:
            found[item] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class AddCommasEnv(BaseEnv):
    """Rewrite a number with commas between the thousands (single turn)."""

    name = "add_commas"

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
    def prompt(item: int) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Write {item} with commas between the thousands."}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=14)
        scores = [exact(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: int) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=14, temperature=0.0)
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
    AddCommasEnv.cli()
