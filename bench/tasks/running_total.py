"""Keep a running total over a conversation (multi-turn arithmetic).

The user opens with "Start with 6. Reply OK.", then says "Add 3. What is the total?". The
episode returns 1.0 when the second reply is the total (9) and 0 otherwise. Both numbers are
from 0 to 9; a tenth of the pairs, chosen by a SHA-256 hash, are held out for evaluation. The
total needs a number from the first message and one from the last.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

Item = tuple[int, int]


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"{item[0]}+{item[1]}".encode()).digest()[0] % 10 == 0


def all_items(*, evaluation: bool) -> list[Item]:
    return [(a, b) for a in range(10) for b in range(10) if held_out((a, b)) == evaluation]


class Conversation:
    def __init__(self, item: Item) -> None:
        self.item = item
        self.asked = False
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        if not self.asked:
            self.asked = True
            return TurnOutcome(reward=0.0, next_message=f"Add {self.item[1]}. What is the total?")
        self.right = text.strip() == str(sum(self.item))
        return TurnOutcome(reward=1.0 if self.right else 0.0, next_message=None)


class RunningTotalEnv(BaseEnv):
    """Add the number of the second turn to the one of the first (multi-turn)."""

    name = "running_total"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.right: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=128, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = all_items(evaluation=False)
        self.eval_items = all_items(evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Item:
        return self.rng.choice(self.train_items)

    async def play(self, item: Item, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(item)
        episode = await run_episode(
            self.policy,
            f"Start with {item[0]}. Reply OK.",
            conversation.reply,
            max_turns=2,
            discount_factor=1.0,
            max_tokens=8,
            temperature=temperature,
        )
        return episode, conversation.right

    async def collect_trajectories(self, item: Item) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.right.extend(1.0 if right else 0.0 for _, right in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(item, 0.0) for item in self.eval_items))
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
    RunningTotalEnv.cli()
