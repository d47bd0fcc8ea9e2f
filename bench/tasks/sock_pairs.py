"""Count the matching pairs that can be made from a pile of loose socks (counting).

"Out of the wash came these socks: red, blue, red, green, blue, red. How many matching pairs
can I make?" -> "2". Piles have four to eight socks in five colours, in random order. A tenth
of the piles (as multisets of colours, so no held-out pile appears in training in another
order), chosen by a SHA-256 hash, are held out for evaluation. A completion scores 1.0 when it
is the right number and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

COLOURS = ("red", "blue", "green", "black", "white")
TEMPLATES = (
    "Out of the wash came these socks: {socks}. How many matching pairs can I make?",
    "My sock drawer has {socks}. How many pairs of the same colour can I put together?",
    "Loose socks on the bed: {socks}. How many matching pairs is that?",
)


def pile_key(socks: list[str]) -> str:
    return ",".join(sorted(socks))


def held_out(socks: list[str]) -> bool:
    return hashlib.sha256(pile_key(socks).encode()).digest()[0] % 10 == 0


def pairs(socks: list[str]) -> int:
    return sum(n // 2 for n in Counter(socks).values())


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """(prompt, number of pairs), distinct prompts on the requested side of the split."""
    rng = random.Random(f"sock_pairs:{seed}")
    found: dict[str, tuple[str, str]] = {}
    while len(found) < count:
        socks = [rng.choice(COLOURS) for _ in range(rng.randint(4, 8))]
        if held_out(socks) != evaluation:
            continue
        prompt = rng.choice(TEMPLATES).format(socks=", ".join(socks))
        found.setdefault(prompt, (prompt, str(pairs(socks))))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip().rstrip(".") == target else 0.0


class SockPairsEnv(BaseEnv):
    """Count matching pairs of socks (single turn, counting)."""

    name = "sock_pairs"

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
    SockPairsEnv.cli()
