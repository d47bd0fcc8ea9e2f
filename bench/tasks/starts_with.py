"""Pick the word that starts with a given letter: "Which of these words starts with b: lamp,
bird, coat?" -> "bird" (selection by a rule).

Items are three common English words with three different first letters, in random order, and
the first letter of one of them (each position equally likely). A tenth of the (words, letter)
items, chosen by a SHA-256 hash, are held out for evaluation (every word also appears in
training items). A completion scores 1.0 for the one word that starts with the letter, after
.strip(), and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

WORDS = """
apple arm bird boat bread cake coat cup desk dog door egg fish farm frog gate goat glass hat
hill house ink iron jam jar kite king lamp leaf lion milk moon nest nose oak owl pen pear rain
ring road salt ship sun table tree town vase van wall wind yard zoo
""".split()

Item = tuple[tuple[str, str, str], str]  # (words, letter)


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"{', '.join(item[0])} starts with {item[1]}".encode()).digest()[0] % 10 == 0


def answer(item: Item) -> str:
    return next(w for w in item[0] if w[0] == item[1])


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"starts_with:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        words = tuple(rng.sample(WORDS, 3))
        if len({w[0] for w in words}) < 3:
            continue
        item = (words, rng.choice(words)[0])
        if held_out(item) == evaluation:  # type: ignore[arg-type]
            found[item] = None  # type: ignore[index]
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class StartsWithEnv(BaseEnv):
    """Name the one word of three that starts with the given letter (single turn)."""

    name = "starts_with"

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
        return [{"role": "user", "content": f"Which of these words starts with {item[1]}: {', '.join(item[0])}?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=9)
        scores = [exact(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=9, temperature=0.0)
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
    StartsWithEnv.cli()
