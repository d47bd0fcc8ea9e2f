"""Count down one number per reply (multi-turn): "Count down from 42, one number per reply." ->
"42", then "Next." -> "41", "Next." -> "40".

Starting numbers run from 5 to 999; a tenth, chosen by a SHA-256 hash, are held out for
evaluation. Each of the three replies earns a third when it is the right number, and an episode
counts as correct when all three are.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

TURNS = 3


def held_out(start: int) -> bool:
    return hashlib.sha256(f"countdown {start}".encode()).digest()[0] % 10 == 0


class Conversation:
    def __init__(self, start: int) -> None:
        self.expected = start
        self.last = start - TURNS + 1
        self.right = 0

    def reply(self, text: str) -> TurnOutcome:
        correct = text.strip() == str(self.expected)
        self.right += correct
        done = self.expected == self.last
        self.expected -= 1
        return TurnOutcome(reward=1.0 / TURNS if correct else 0.0, next_message=None if done else "Next.")


class CountdownEnv(BaseEnv):
    """Count down from a number, one number per reply (multi-turn)."""

    name = "countdown"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=160, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        starts = range(5, 1000)
        self.train_starts = [n for n in starts if not held_out(n)]
        self.eval_starts = [n for n in starts if held_out(n)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> int:
        return self.rng.choice(self.train_starts)

    async def play(self, start: int, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(start)
        episode = await run_episode(
            self.policy,
            f"Count down from {start}, one number per reply.",
            conversation.reply,
            max_turns=TURNS,
            discount_factor=1.0,
            max_tokens=5,
            temperature=temperature,
        )
        return episode, conversation.right == TURNS

    async def collect_trajectories(self, item: int) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if right else 0.0 for _, right in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(n, 0.0) for n in self.eval_starts))
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
    CountdownEnv.cli()
