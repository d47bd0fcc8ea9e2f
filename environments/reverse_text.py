"""Reverse a short lowercase string: "plane" -> "enalp".

Items are strings of 3 to 6 letters a-z. The user message is the string itself; the answer is
the string reversed. Strings whose CRC-32 falls in one bucket of ten are held out for evaluation
and never trained on. A completion scores 1.0 for the exact reversal, otherwise 0.5 times the
share of positions it gets right (over the longer of answer and target), so garbage scores 0.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

MIN_LENGTH = 3
MAX_LENGTH = 6
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
EVAL_BUCKETS = 10  # one bucket in ten is the held-out split
EVAL_TEMPERATURE = 0.0  # evaluation measures the greedy policy


class ReverseTextConfig(BaseEnvConfig):
    exploration_rate: float = Field(
        0.1, ge=0, le=1, description="Share of uniformly sampled items; 1 = plain uniform sampling."
    )
    train_pool_size: int = Field(2000, ge=10, le=100_000, description="Distinct training strings.")
    eval_size: int = Field(200, ge=1, le=10_000, description="Held-out strings evaluated.")


def is_held_out(text: str) -> bool:
    """Stable split: the same string is held out on every machine and in every run."""
    return zlib.crc32(text.encode()) % EVAL_BUCKETS == 0


def score_reversal(answer: str, target: str) -> float:
    """1.0 exact; else 0.5 x matched positions / the longer length; empty or garbage 0."""
    answer = answer.strip()
    if answer == target:
        return 1.0
    if not answer or not target:
        return 0.0
    matched = sum(1 for got, want in zip(answer, target) if got == want)
    return 0.5 * matched / max(len(answer), len(target))


def make_strings(count: int, *, seed: int, held_out: bool) -> list[str]:
    """``count`` distinct strings from one side of the split, deterministic in ``seed``."""
    rng = random.Random(f"reverse_text:{seed}:{held_out}")
    found: dict[str, None] = {}
    while len(found) < count:
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(MIN_LENGTH, MAX_LENGTH)))
        if is_held_out(text) == held_out:
            found[text] = None
    return list(found)


class ReverseTextEnv(BaseEnv):
    """Reverse a short lowercase string (single turn, partial credit per position)."""

    name = "reverse_text"
    env_config_cls = ReverseTextConfig

    def __init__(self, config: ReverseTextConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.config: ReverseTextConfig = config
        self.train_items: list[str] = []
        self.eval_items: list[str] = []
        self.correct_buffer: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[ReverseTextConfig, list[APIServerConfig]]:
        config = ReverseTextConfig(
            group_size=8,
            batch_size=64,
            total_steps=200,
            steps_per_eval=25,
            max_token_length=64,
            max_batches_offpolicy=2,
            use_wandb=True,
            wandb_name="reverse_text",
        )
        return config, [APIServerConfig(model_name="hermes-rl-local", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        from hermes_rl_mcp.sdk.sampler import ItemSampler

        self.train_items = make_strings(self.config.train_pool_size, seed=self.config.seed, held_out=False)
        self.eval_items = make_strings(self.config.eval_size, seed=self.config.seed, held_out=True)
        self.sampler = ItemSampler(
            len(self.train_items),
            group_size=self.config.group_size,
            exploration_rate=self.config.exploration_rate,
            seed=self.config.seed,
        )

    async def get_next_item(self) -> tuple[int, str]:
        index = self.sampler.next_index()
        return index, self.train_items[index]

    @staticmethod
    def prompt(text: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": text}]

    async def collect_trajectories(self, item: tuple[int, str]) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        index, text = item
        target = text[::-1]
        messages = self.prompt(text)
        group = await self.policy.chat(messages, n=self.config.group_size, max_tokens=len(text) + 2)
        scores = [score_reversal(c.text, target) for c in group.completions]
        self.sampler.observe(index, scores)
        self.correct_buffer.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores, messages if self.config.include_messages else None), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(text: str) -> float:
            group = await self.policy.chat(self.prompt(text), n=1, max_tokens=len(text) + 2, temperature=EVAL_TEMPERATURE)
            return score_reversal(group.completions[0].text, text[::-1])

        scores = await gather_bounded((one(t) for t in self.eval_items), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(1.0 for s in scores if s == 1.0) / len(scores),
            "eval/mean_score": sum(scores) / len(scores),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct_buffer:
            metrics["train/percent_correct"] = sum(self.correct_buffer) / len(self.correct_buffer)
            self.correct_buffer = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    ReverseTextEnv.cli()
