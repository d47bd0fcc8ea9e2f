"""Write two letters given in separate turns (multi-turn memory and composition).

The user says "First letter: {a}. Reply OK.", then, whatever the reply, "Second letter: {b}.
Reply OK.", then "Now write both letters together.". The episode returns 1.0 when the third
reply is the two letters in order ("ab") and 0 otherwise. Letters are two different lowercase
letters; a tenth of the pairs, chosen by a SHA-256 hash, are held out for evaluation.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def held_out(pair: str) -> bool:
    return hashlib.sha256(pair.encode()).digest()[0] % 10 == 0


def all_pairs(*, evaluation: bool) -> list[str]:
    return [a + b for a in ALPHABET for b in ALPHABET if a != b and held_out(a + b) == evaluation]


class Conversation:
    def __init__(self, pair: str) -> None:
        self.pair = pair
        self.turn = 0
        self.written = False

    def reply(self, text: str) -> TurnOutcome:
        self.turn += 1
        if self.turn == 1:
            return TurnOutcome(reward=0.0, next_message=f"Second letter: {self.pair[1]}. Reply OK.")
        if self.turn == 2:
            return TurnOutcome(reward=0.0, next_message="Now write both letters together.")
        self.written = text.strip() == self.pair
        return TurnOutcome(reward=1.0 if self.written else 0.0, next_message=None)


class TwoLettersEnv(BaseEnv):
    """Write, in the third turn, the letters given in the first two (multi-turn)."""

    name = "two_letters"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.written: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=160, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_pairs = all_pairs(evaluation=False)
        self.eval_pairs = all_pairs(evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> str:
        return self.rng.choice(self.train_pairs)

    async def play(self, pair: str, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(pair)
        episode = await run_episode(
            self.policy,
            f"First letter: {pair[0]}. Reply OK.",
            conversation.reply,
            max_turns=3,
            discount_factor=1.0,
            max_tokens=6,
            temperature=temperature,
        )
        return episode, conversation.written

    async def collect_trajectories(self, item: str) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.written.extend(1.0 if written else 0.0 for _, written in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(pair, 0.0) for pair in self.eval_pairs))
        metrics = {"eval/percent_correct": sum(written for _, written in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.written:
            metrics["train/percent_correct"] = sum(self.written) / len(self.written)
            self.written = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    TwoLettersEnv.cli()
