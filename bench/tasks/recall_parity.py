"""Say whether a number from an earlier turn was even or odd (multi-turn classification).

The user opens with "Remember the number {n}. Reply OK." and, whatever the reply, asks "Was
that number even or odd?". The episode returns 1.0 when the second reply is the right word
and 0 otherwise. Numbers run from 1 to 999; a tenth, chosen by a SHA-256 hash, are held out
for evaluation.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

QUESTION = "Was that number even or odd?"


def held_out(n: int) -> bool:
    return hashlib.sha256(f"recall parity {n}".encode()).digest()[0] % 10 == 0


class Conversation:
    def __init__(self, number: int) -> None:
        self.label = "even" if number % 2 == 0 else "odd"
        self.asked = False
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        if not self.asked:
            self.asked = True
            return TurnOutcome(reward=0.0, next_message=QUESTION)
        self.right = text.strip() == self.label
        return TurnOutcome(reward=1.0 if self.right else 0.0, next_message=None)


class RecallParityEnv(BaseEnv):
    """Tell, in the second turn, whether the first turn's number was even or odd (multi-turn)."""

    name = "recall_parity"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=128, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        numbers = range(1, 1000)
        self.train_numbers = [n for n in numbers if not held_out(n)]
        self.eval_numbers = [n for n in numbers if held_out(n)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> int:
        return self.rng.choice(self.train_numbers)

    async def play(self, number: int, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(number)
        episode = await run_episode(
            self.policy,
            f"Remember the number {number}. Reply OK.",
            conversation.reply,
            max_turns=2,
            discount_factor=1.0,
            max_tokens=6,
            temperature=temperature,
        )
        return episode, conversation.right

    async def collect_trajectories(self, item: int) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if right else 0.0 for _, right in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(n, 0.0) for n in self.eval_numbers))
        metrics = {"eval/percent_correct": sum(right for _, right in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    RecallParityEnv.cli()
