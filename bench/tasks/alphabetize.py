"""Put three words in alphabetical order: "Put these words in alphabetical order: pear, lamp,
tree" -> "lamp, pear, tree" (ordering).

Items are three different common English words from a list of seventy, in random order; words
may share a first letter ("bird, boat, bread"), so sometimes a later letter decides. A tenth of
the word triples, chosen by a SHA-256 hash, are held out for evaluation (every word also appears
in training items). A completion scores 1.0 when, split at commas and with each part stripped,
it is the three words in alphabetical order, and 0 otherwise (so only the spacing around the
commas is free).
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

WORDS = """
apple arrow baby bird boat bread bell cake camp coat cup chair desk dog door duck egg engine
fish farm flag frog gate goat glass hat hill horse house ink island jam jar kite king
lamp leaf lion lake milk moon map nest nose net oak owl pen pear pig rain ring road rose salt
ship sun sock table tree town toy umbrella vase van wall wind window yard zoo
""".split()

Item = tuple[str, str, str]


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"alphabetical order of {', '.join(item)}".encode()).digest()[0] % 10 == 0


def answer(item: Item) -> str:
    return ", ".join(sorted(item))


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"alphabetize:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        item = tuple(rng.sample(WORDS, 3))
        if held_out(item) == evaluation:  # type: ignore[arg-type]
            found[item] = None  # type: ignore[index]
    return list(found)


def score(answer: str, target: str) -> float:
    return 1.0 if [part.strip() for part in answer.strip().split(",")] == target.split(", ") else 0.0


class AlphabetizeEnv(BaseEnv):
    """Put three words in alphabetical order (single turn)."""

    name = "alphabetize"

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
        return [{"role": "user", "content": f"Put these words in alphabetical order: {', '.join(item)}"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=26)
        scores = [score(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=26, temperature=0.0)
            return score(group.completions[0].text, answer(item))

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
    AlphabetizeEnv.cli()
