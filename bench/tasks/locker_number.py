"""Keep track of the user's locker number over a short conversation (multi-turn memory).

The user opens with "My locker number is 41. Reply OK.", then sends one or two more messages,
each either a change of their own locker ("They moved me: my locker is now 17. Reply OK.") or a
friend's locker number ("My friend Sam has locker 23. Reply OK."), and finally asks "What is my
locker number now?" -> "17". Whatever the replies to the earlier messages, the episode returns
1.0 when the last reply is exactly the user's latest locker number and 0 otherwise. Locker
numbers are distinct within a conversation, from 1 to 999; each message has two or three
phrasings. A tenth of the conversations, chosen by a SHA-256 hash of their messages, are held
out for evaluation, so the policy must carry the right number over from the earlier turns, not
learn an answer per conversation.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

FRIENDS = ("Sam", "Ana", "Tom", "Priya", "Leo", "Mei", "Omar", "Kate", "Ben", "Zoe", "Raj", "Lily")
OPENINGS = (
    "My locker number is {n}. Reply OK.",
    "I've been given locker {n} at the gym. Reply OK.",
    "Note this: my locker is number {n}. Reply OK.",
)
CHANGES = (
    "They moved me: my locker is now {n}. Reply OK.",
    "Update: I switched to locker {n}. Reply OK.",
    "My locker changed, it's {n} now. Reply OK.",
)
FRIEND_LOCKERS = (
    "My friend {name} has locker {n}. Reply OK.",
    "{name}'s locker is number {n}. Reply OK.",
)
QUESTIONS = (
    "What is my locker number now?",
    "Which locker is mine?",
    "Remind me, what's my locker number?",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_conversations(count: int, *, seed: int, evaluation: bool) -> list[tuple[list[str], str]]:
    """(user messages, answer) for ``count`` distinct conversations on one side of the split."""
    rng = random.Random(f"locker_number:{seed}")
    found: dict[str, tuple[list[str], str]] = {}
    while len(found) < count:
        numbers = rng.sample(range(1, 1000), 3)
        mine = numbers[0]
        messages = [rng.choice(OPENINGS).format(n=mine)]
        for n in numbers[1 : 1 + rng.choice((1, 2))]:
            if rng.random() < 0.5:
                mine = n
                messages.append(rng.choice(CHANGES).format(n=n))
            else:
                messages.append(rng.choice(FRIEND_LOCKERS).format(name=rng.choice(FRIENDS), n=n))
        messages.append(rng.choice(QUESTIONS))
        key = "\n".join(messages)
        if key in found or held_out(key) != evaluation:
            continue
        found[key] = (messages, str(mine))
    return list(found.values())


class Conversation:
    def __init__(self, messages: list[str], answer: str) -> None:
        self.pending = list(messages[1:])
        self.answer = answer
        self.correct = False

    def reply(self, text: str) -> TurnOutcome:
        if self.pending:
            return TurnOutcome(reward=0.0, next_message=self.pending.pop(0))
        self.correct = text.strip() == self.answer
        return TurnOutcome(reward=1.0 if self.correct else 0.0, next_message=None)


class LockerNumberEnv(BaseEnv):
    """Give the user's latest locker number after updates and distractions (multi-turn)."""

    name = "locker_number"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_conversations(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_conversations(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> tuple[list[str], str]:
        return self.rng.choice(self.train_items)

    async def play(self, item: tuple[list[str], str], temperature: float | None = None) -> tuple[Episode, bool]:
        messages, answer = item
        conversation = Conversation(messages, answer)
        episode = await run_episode(
            self.policy,
            messages[0],
            conversation.reply,
            max_turns=len(messages),
            discount_factor=1.0,
            max_tokens=8,
            temperature=temperature,
        )
        return episode, conversation.correct

    async def collect_trajectories(self, item: tuple[list[str], str]) -> tuple[ScoredDataGroup | None, list[Any]]:
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
    LockerNumberEnv.cli()
