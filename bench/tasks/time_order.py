"""Put three or four clock times (12-hour, am/pm) in order from earliest to latest (ordering).

The prompt is e.g. "Put these times in order from earliest to latest: 3:45 pm, 9:10 am,
12:30 pm. Answer as a comma-separated list." and the answer is "9:10 am, 12:30 pm, 3:45 pm".
Times are on the same day, with minutes in steps of five; 12:xx am is just after midnight and
12:xx pm just after noon. The times of an item are distinct and never given already in order.
A tenth of the sets of times, chosen by a SHA-256 hash of the sorted set, are held out for
evaluation, so no evaluation set is seen in training in any order. A reply scores 1.0 when its
comma-separated entries (stripped, lowercased) are exactly the times in order, and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

Item = tuple[tuple[str, ...], tuple[str, ...]]  # (times as shown, times in order)


def clock(minutes: int) -> str:
    """Minutes since midnight as "h:mm am" / "h:mm pm"."""
    hour, minute = divmod(minutes, 60)
    suffix = "am" if hour < 12 else "pm"
    return f"{hour % 12 or 12}:{minute:02d} {suffix}"


def held_out(ordered: tuple[str, ...]) -> bool:
    return hashlib.sha256("|".join(ordered).encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"time_order:{seed}")
    found: dict[tuple[str, ...], tuple[str, ...]] = {}
    while len(found) < count:
        minutes = sorted(rng.sample(range(0, 24 * 60, 5), rng.choice((3, 4))))
        ordered = tuple(clock(m) for m in minutes)
        if held_out(ordered) != evaluation or ordered in found:
            continue
        shown = list(ordered)
        while tuple(shown) == ordered:
            rng.shuffle(shown)
        found[ordered] = tuple(shown)
    return [(shown, ordered) for ordered, shown in found.items()]


def score(reply: str, ordered: tuple[str, ...]) -> float:
    entries = [e.strip().lower() for e in reply.strip().rstrip(".").split(",")]
    return 1.0 if entries == list(ordered) else 0.0


class TimeOrderEnv(BaseEnv):
    """Order clock times from earliest to latest (single turn, ordering)."""

    name = "time_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)
        # four times of at most 8 characters and three ", " separators: 38 characters
        self.max_tokens = 48

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        shown, _ = item
        return [
            {
                "role": "user",
                "content": f"Put these times in order from earliest to latest: {', '.join(shown)}. Answer as a comma-separated list.",
            }
        ]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=self.max_tokens)
        scores = [score(c.text, item[1]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=self.max_tokens, temperature=0.0)
            return score(group.completions[0].text, item[1])

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
    TimeOrderEnv.cli()
