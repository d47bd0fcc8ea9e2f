"""Say whether a word contains a letter, answering through guided_choice (classification).

"Does the word plome contain the letter m?" -> "yes". Words are 4 to 7 random lowercase
letters; half the items ask for a letter the word has. A tenth of the (word, letter) items,
chosen by a SHA-256 hash, are held out for evaluation. Answers are constrained to "yes" and
"no"; a completion scores 1.0 for the right one and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
ANSWERS = ["yes", "no"]

Item = tuple[str, str]


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"{item[0]}:{item[1]}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"has_letter:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        word = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(4, 7)))
        if rng.random() < 0.5:
            letter = rng.choice(word)
        else:
            letter = rng.choice([c for c in ALPHABET if c not in word])
        if held_out((word, letter)) == evaluation:
            found[(word, letter)] = None
    return list(found)


def answer(item: Item) -> str:
    return "yes" if item[1] in item[0] else "no"


class HasLetterEnv(BaseEnv):
    """Answer yes or no: does the word contain the letter? (single turn, guided_choice)"""

    name = "has_letter"

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
        return [{"role": "user", "content": f"Does the word {item[0]} contain the letter {item[1]}?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        messages = self.prompt(item)
        group = await self.policy.chat(messages, n=self.config.group_size, max_tokens=4, guided_choice=ANSWERS)
        scores = [1.0 if c.text == answer(item) else 0.0 for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0, guided_choice=ANSWERS)
            return 1.0 if group.completions[0].text == answer(item) else 0.0

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
    HasLetterEnv.cli()
