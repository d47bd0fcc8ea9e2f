"""Recall a word from an earlier turn (multi-turn memory).

The user opens with "Remember this word: {word}. Reply OK." and, whatever the reply, asks "What
word did I ask you to remember?". The episode returns 1.0 when the second reply is the word
and 0 otherwise. Words are 3 to 6 random lowercase letters; a tenth, chosen by a SHA-256 hash,
are held out for evaluation, so the policy must carry the word over from the first message,
not learn an answer per word.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
QUESTION = "What word did I ask you to remember?"


def held_out(word: str) -> bool:
    return hashlib.sha256(word.encode()).digest()[0] % 10 == 0


def make_words(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"remember_word:{seed}")
    found: dict[str, None] = {}
    while len(found) < count:
        word = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(3, 6)))
        if held_out(word) == evaluation:
            found[word] = None
    return list(found)


class Conversation:
    def __init__(self, word: str) -> None:
        self.word = word
        self.asked = False
        self.recalled = False

    def reply(self, text: str) -> TurnOutcome:
        if not self.asked:
            self.asked = True
            return TurnOutcome(reward=0.0, next_message=QUESTION)
        self.recalled = text.strip() == self.word
        return TurnOutcome(reward=1.0 if self.recalled else 0.0, next_message=None)


class RememberWordEnv(BaseEnv):
    """Repeat, in the second turn, the word given in the first (multi-turn)."""

    name = "remember_word"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.recalled: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=128, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_words = make_words(2000, seed=self.config.seed, evaluation=False)
        self.eval_words = make_words(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> str:
        return self.rng.choice(self.train_words)

    async def play(self, word: str, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(word)
        episode = await run_episode(
            self.policy,
            f"Remember this word: {word}. Reply OK.",
            conversation.reply,
            max_turns=2,
            discount_factor=1.0,
            max_tokens=8,
            temperature=temperature,
        )
        return episode, conversation.recalled

    async def collect_trajectories(self, item: str) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.recalled.extend(1.0 if recalled else 0.0 for _, recalled in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(word, 0.0) for word in self.eval_words))
        metrics = {"eval/percent_correct": sum(recalled for _, recalled in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.recalled:
            metrics["train/percent_correct"] = sum(self.recalled) / len(self.recalled)
            self.recalled = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    RememberWordEnv.cli()
