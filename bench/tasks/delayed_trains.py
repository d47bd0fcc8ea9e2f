"""Count the trains on a departures board that are delayed, cancelled or on time (counting).

"The departures board says: 08:15 Leeds - on time, 08:32 York - delayed, ... How many trains are
delayed?" -> "2". A board lists four to eight departures, each to a different town from a pool of
thirty, at increasing times, each on time, delayed or cancelled; the question asks about one of
the three. Boards are drawn at random; a tenth of them (the board and the question), chosen by a
SHA-256 hash, are held out for evaluation. A completion scores 1.0 when it is the right number
(a final full stop aside) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

TOWNS = (
    "Leeds", "York", "Bristol", "Cardiff", "Oxford", "Cambridge", "Brighton", "Glasgow", "Edinburgh",
    "Manchester", "Liverpool", "Sheffield", "Norwich", "Exeter", "Bath", "Reading", "Derby", "Durham",
    "Newcastle", "Preston", "Carlisle", "Swansea", "Chester", "Lincoln", "Ipswich", "Plymouth",
    "Nottingham", "Leicester", "Coventry", "Hull",
)
STATUSES = ("on time", "delayed", "cancelled")
INTROS = (
    "I'm at the station and the departures board says:",
    "Here's what the departure board shows right now:",
    "Just looked at the board:",
)
QUESTIONS = {
    "on time": ("How many of these trains are running on time?", "How many trains are on time?"),
    "delayed": ("How many of these trains are delayed?", "How many trains are running late?"),
    "cancelled": ("How many of these trains have been cancelled?", "How many trains are cancelled?"),
}
MAX_TOKENS = 4


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(key, prompt, count as text) for ``count`` distinct boards and questions of one split."""
    rng = random.Random(f"delayed_trains:{seed}:{evaluation}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        size = rng.randint(4, 8)
        towns = rng.sample(TOWNS, size)
        start = rng.randint(6 * 60, 20 * 60)
        times = sorted(start + m for m in rng.sample(range(0, 120), size))
        weights = rng.choice(((6, 3, 1), (4, 4, 2), (3, 5, 2), (5, 2, 3)))
        statuses = rng.choices(STATUSES, weights=weights, k=size)
        asked = rng.choice(STATUSES)
        board = "\n".join(f"{t // 60:02d}:{t % 60:02d} {town} - {s}" for t, town, s in zip(times, towns, statuses))
        key = board + "|" + asked
        if held_out(key) != evaluation or key in found:
            continue
        prompt = f"{rng.choice(INTROS)}\n{board}\n{rng.choice(QUESTIONS[asked])} Just give me the number."
        found[key] = (key, prompt, str(statuses.count(asked)))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip().rstrip(".") == target else 0.0


class DelayedTrainsEnv(BaseEnv):
    """Count the departures with a given status on a board (single turn, counting)."""

    name = "delayed_trains"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(5000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return exact(group.completions[0].text, item[2])

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
    DelayedTrainsEnv.cli()
