"""Count the longest run of one outcome in a sequence of coin flips or match results (counting).

"I flipped a coin 8 times and got H T H H H T T H. What was my longest run of heads?" -> "3".
Sequences are every pattern of 6 to 10 outcomes with at least one of the outcome asked about,
told as coin flips (longest run of heads, or of tails) or as a team's wins and losses (longest
winning streak). A tenth of the patterns, chosen by a SHA-256 hash of the pattern with the
asked-about outcome marked, are held out from training under every story; a fixed sample of
200 of them, each told under one story, is evaluated, so the policy must count the run, not
memorise sequences. A completion scores 1.0 when it is the length of the longest run and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

# (template, symbol of the outcome asked about, symbol of the other outcome)
STORIES = (
    ("I flipped a coin {n} times and got {seq}. What was my longest run of heads?", "H", "T"),
    ("I tossed a coin {n} times: {seq}. How many tails did I get in a row at most?", "T", "H"),
    ("Our team's last {n} games went {seq} (W is a win, L a loss). What was our longest winning streak?", "W", "L"),
)
LENGTHS = range(6, 11)
EVAL_ITEMS = 200


def held_out(pattern: str) -> bool:
    return hashlib.sha256(pattern.encode()).digest()[0] % 10 == 0


def longest_run(pattern: str) -> int:
    return max((len(run) for run in pattern.split("o")), default=0)


def patterns() -> list[str]:
    """Every pattern of 'x' (the outcome asked about) and 'o' with at least one 'x'."""
    found = []
    for n in LENGTHS:
        for cells in itertools.product("xo", repeat=n):
            if "x" in cells:
                found.append("".join(cells))
    return found


def render(pattern: str, story: int) -> tuple[str, str]:
    template, hit, miss = STORIES[story]
    seq = " ".join(hit if c == "x" else miss for c in pattern)
    return template.format(n=len(pattern), seq=seq), str(longest_run(pattern))


def all_items(seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    everything = patterns()
    train = [render(p, s) for p in everything if not held_out(p) for s in range(len(STORIES))]
    rng = random.Random(f"longest_streak:{seed}")
    held = rng.sample([p for p in everything if held_out(p)], EVAL_ITEMS)
    evaluation = [render(p, i % len(STORIES)) for i, p in enumerate(held)]
    return train, evaluation


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class LongestStreakEnv(BaseEnv):
    """Say how long the longest run of an outcome is (single turn)."""

    name = "longest_streak"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items, self.eval_items = all_items(self.config.seed)
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
    LongestStreakEnv.cli()
