"""Recall which of two words, given in separate turns, came first or second (multi-turn memory).

The user says "I'll give you two words, one at a time. The first one is mango. Reply OK.", then
"The second one is plum. Reply OK.", then asks either "Which word did I give you first?" or
"Which word did I give you second?". The episode returns 1.0 when the last reply is the asked-for
word (ignoring case and a trailing full stop) and 0 otherwise: the word is copied from the
conversation, so exact match. Words come from a fixed list of everyday nouns; a tenth of the
ordered pairs, chosen by a SHA-256 hash, are held out for evaluation, so the policy must carry
the words over from the earlier turns and read the question, not learn an answer per pair.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

WORDS = (
    "mango", "plum", "pear", "lemon", "grape", "cherry", "peach", "melon", "kiwi", "apple",
    "tiger", "horse", "rabbit", "otter", "eagle", "zebra", "panda", "mouse", "goat", "whale",
    "chair", "table", "lamp", "spoon", "clock", "bucket", "pillow", "ladder", "kettle", "mirror",
    "river", "cloud", "forest", "island", "desert", "valley", "meadow", "canyon", "beach", "storm",
    "violin", "drum", "guitar", "flute", "piano", "trumpet", "harp", "banjo", "cello", "bell",
)
LONGEST = max(len(w) for w in WORDS)


def held_out(first: str, second: str) -> bool:
    return hashlib.sha256(f"{first}|{second}".encode()).digest()[0] % 10 == 0


def all_items(*, evaluation: bool) -> list[tuple[str, str, str]]:
    """(first, second, asked) with asked "first" or "second"."""
    return [
        (a, b, asked)
        for a in WORDS
        for b in WORDS
        if a != b and held_out(a, b) == evaluation
        for asked in ("first", "second")
    ]


class Conversation:
    def __init__(self, first: str, second: str, asked: str) -> None:
        self.second = second
        self.asked = asked
        self.target = first if asked == "first" else second
        self.turn = 0
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        self.turn += 1
        if self.turn == 1:
            return TurnOutcome(reward=0.0, next_message=f"The second one is {self.second}. Reply OK.")
        if self.turn == 2:
            return TurnOutcome(reward=0.0, next_message=f"Which word did I give you {self.asked}?")
        self.right = text.strip().rstrip(".").lower() == self.target
        return TurnOutcome(reward=1.0 if self.right else 0.0, next_message=None)


class FirstOrSecondEnv(BaseEnv):
    """Say which of two words, told one per turn, came first or second (multi-turn)."""

    name = "first_or_second"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.right: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = all_items(evaluation=False)
        held = all_items(evaluation=True)
        self.eval_items = random.Random(f"first_or_second:{self.config.seed}").sample(held, min(200, len(held)))
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    async def play(self, item: tuple[str, str, str], temperature: float | None = None) -> tuple[Episode, bool]:
        first, second, asked = item
        conversation = Conversation(first, second, asked)
        episode = await run_episode(
            self.policy,
            f"I'll give you two words, one at a time. The first one is {first}. Reply OK.",
            conversation.reply,
            max_turns=3,
            discount_factor=1.0,
            max_tokens=LONGEST + 2,
            temperature=temperature,
        )
        return episode, conversation.right

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.right.extend(1.0 if right else 0.0 for _, right in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item, 0.0) for item in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(right for _, right in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.right:
            metrics["train/percent_correct"] = sum(self.right) / len(self.right)
            self.right = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    FirstOrSecondEnv.cli()
