"""Update a restaurant booking's party size told in an earlier turn (multi-turn).

The user opens with "Please book a table for 6 at 7:30 under the name Rossi. Just reply OK." and,
whatever the reply, says how the party changed ("Two more friends are joining us." or "One
person can't make it anymore.") and asks how many people the booking should be for now. The
episode returns 1.0 when the second reply is the new number in digits and 0 otherwise. Party
sizes run from 2 to 20 and change by one to four people (never below 2). A tenth of the
(size, change) pairs, chosen by a SHA-256 hash, are held out for evaluation under every name,
time and phrasing, so the policy must carry the size over from the first message and apply
the change, not learn an answer per pair.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

NAMES = ("Rossi", "Patel", "Nguyen", "Smith", "Okafor", "Garcia", "Kowalski", "Berg", "Tanaka", "Murphy")
TIMES = ("6:00", "6:30", "7:00", "7:30", "8:00", "8:30", "12:30", "1:00")
WORDS = {1: "One", 2: "Two", 3: "Three", 4: "Four"}
OPENINGS = (
    "Please book a table for {size} at {time} under the name {name}. Just reply OK.",
    "Can you reserve a table for {size} people at {time}, name {name}? Reply OK.",
    "I'd like a table for {size} tonight at {time}, booked as {name}. Say OK.",
)
QUESTIONS = (
    "How many people should the booking be for now?",
    "So how many is the table for now?",
)


def joined(count: int) -> str:
    return f"{WORDS[count]} more {'friend is' if count == 1 else 'friends are'} joining us."


def dropped(count: int) -> str:
    return f"{WORDS[count]} {'person' if count == 1 else 'people'} can't make it anymore."


def held_out(size: int, change: int) -> bool:
    return hashlib.sha256(f"{size}{change:+d}".encode()).digest()[0] % 10 == 0


def pairs(*, evaluation: bool) -> list[tuple[int, int]]:
    return [
        (size, change)
        for size in range(2, 21)
        for change in (-4, -3, -2, -1, 1, 2, 3, 4)
        if size + change >= 2 and held_out(size, change) == evaluation
    ]


def make_items(per_pair: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, int]]:
    """(opening message, change message, new size): ``per_pair`` variants of every pair on one
    side of the split."""
    rng = random.Random(f"party_size:{seed}:{evaluation}")
    items = []
    for size, change in pairs(evaluation=evaluation):
        for _ in range(per_pair):
            opening = rng.choice(OPENINGS).format(size=size, time=rng.choice(TIMES), name=rng.choice(NAMES))
            told = joined(change) if change > 0 else dropped(-change)
            items.append((opening, f"{told} {rng.choice(QUESTIONS)}", size + change))
    return items


class Conversation:
    def __init__(self, change_message: str, target: int) -> None:
        self.change_message = change_message
        self.target = target
        self.asked = False
        self.correct = False

    def reply(self, text: str) -> TurnOutcome:
        if not self.asked:
            self.asked = True
            return TurnOutcome(reward=0.0, next_message=self.change_message)
        self.correct = text.strip().rstrip(".") == str(self.target)
        return TurnOutcome(reward=1.0 if self.correct else 0.0, next_message=None)


class PartySizeEnv(BaseEnv):
    """Give the updated party size of a booking made in the first turn (multi-turn)."""

    name = "party_size"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(20, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(3, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    async def play(self, item: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        opening, change_message, target = item
        conversation = Conversation(change_message, target)
        episode = await run_episode(
            self.policy,
            opening,
            conversation.reply,
            max_turns=2,
            discount_factor=1.0,
            max_tokens=6,
            temperature=temperature,
        )
        return episode, conversation.correct

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if correct else 0.0 for _, correct in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(item, 0.0) for item in self.eval_items))
        metrics = {"eval/percent_correct": sum(correct for _, correct in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    PartySizeEnv.cli()
