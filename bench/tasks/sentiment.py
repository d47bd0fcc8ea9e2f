"""Classify a short review as positive or negative, answering through guided_choice (classification).

Reviews are built from templates, nouns and opinion words: "The soup was awful." -> "negative".
A tenth of the (template, noun, opinion) combinations, chosen by CRC-32, are held out for
evaluation; every word also appears in training reviews. Answers are constrained to the two
labels. A completion scores 1.0 for the right label and 0 otherwise.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["positive", "negative"]
TEMPLATES = ("The {noun} was {word}.", "I found the {noun} {word}.", "What a {word} {noun}!", "Honestly, the {noun} is {word}.")
NOUNS = ("soup", "service", "film", "hotel", "book", "concert", "coffee", "staff", "room", "game")
POSITIVE = ("great", "lovely", "superb", "excellent", "wonderful", "delightful", "fantastic", "pleasant")
NEGATIVE = ("awful", "dull", "terrible", "horrible", "boring", "dreadful", "poor", "nasty")


def held_out(review: str) -> bool:
    return zlib.crc32(review.encode()) % 10 == 0


def all_items() -> list[tuple[str, str]]:
    items = []
    for template in TEMPLATES:
        for noun in NOUNS:
            for label, words in (("positive", POSITIVE), ("negative", NEGATIVE)):
                for word in words:
                    items.append((template.format(noun=noun, word=word), label))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class SentimentEnv(BaseEnv):
    """Label a short review positive or negative (single turn, guided_choice)."""

    name = "sentiment"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=128, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        self.eval_items = [i for i in items if held_out(i[0])]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Is this review positive or negative? {item[0]}"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        messages = self.prompt(item)
        group = await self.policy.chat(messages, n=self.config.group_size, max_tokens=10, guided_choice=LABELS)
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=10, guided_choice=LABELS, temperature=0.0)
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
    SentimentEnv.cli()
