"""Count the missed calls from one caller in a phone's call log (counting).

"Missed calls today: Mom, Office, Mom, Sam, Mom. How many of them were from Mom?" -> "3". A log
lists four to eight missed calls; the caller asked about appears one to five times and the rest
come from other callers, under three phrasings. A tenth of the logs (the calls in order and the
caller asked about), chosen by a SHA-256 hash, are held out for evaluation. A completion scores
1.0 when it is the count, written in digits, and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CALLERS = ("Mom", "Dad", "Sam", "Office", "Grandma", "Lucy", "Omar", "School", "Dentist", "Jake", "Priya", "Bank")
TEMPLATES = (
    "Missed calls today: {calls}. How many of them were from {who}?",
    "My phone shows missed calls from {calls}. How many times did {who} call?",
    "Call log: {calls}. Count the missed calls from {who}.",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(key, prompt, count as a string) for ``count`` distinct logs."""
    rng = random.Random(f"missed_calls:{seed}")
    found: dict[str, tuple[str, str]] = {}
    while len(found) < count:
        who = rng.choice(CALLERS)
        length = rng.randint(4, 8)
        times = rng.randint(1, min(5, length))
        others = [c for c in CALLERS if c != who]
        calls = [who] * times + [rng.choice(others) for _ in range(length - times)]
        rng.shuffle(calls)
        key = f"{','.join(calls)}|{who}"
        if key in found or held_out(key) != evaluation:
            continue
        found[key] = (rng.choice(TEMPLATES).format(calls=", ".join(calls), who=who), str(times))
    return [(key, prompt, answer) for key, (prompt, answer) in found.items()]


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class MissedCallsEnv(BaseEnv):
    """Count one caller's missed calls in a log (single turn, counting)."""

    name = "missed_calls"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0)
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
    MissedCallsEnv.cli()
