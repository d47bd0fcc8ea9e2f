"""Put together a door code given in parts over several turns (multi-turn memory).

The user opens with "I'll give you the door code in 2 parts. The first part is 47. Reply OK.",
then, whatever the reply, "The second part is 19. Reply OK." (and for a three-part code, "The
third part is 305. Reply OK."), and finally asks "What is the full door code?". The episode
returns 1.0 when the last reply is the parts joined in order ("4719"; spaces and dashes in the
reply are ignored) and 0 otherwise; the earlier replies earn nothing. Codes have two or three
parts of two or three digits each (leading zeros allowed); a tenth of the split codes, chosen by
a SHA-256 hash, are held out for evaluation, so the policy must carry the parts over from the
earlier messages, not learn an answer per code.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

ORDINALS = ("first", "second", "third")
QUESTION = "What is the full door code?"


def held_out(parts: tuple[str, ...]) -> bool:
    return hashlib.sha256("-".join(parts).encode()).digest()[0] % 10 == 0


def make_codes(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, ...]]:
    rng = random.Random(f"door_code:{seed}")
    found: dict[tuple[str, ...], None] = {}
    while len(found) < count:
        parts = tuple("".join(rng.choice("0123456789") for _ in range(rng.randint(2, 3))) for _ in range(rng.randint(2, 3)))
        if held_out(parts) == evaluation:
            found[parts] = None
    return list(found)


def normalise(text: str) -> str:
    return text.strip().rstrip(".").replace(" ", "").replace("-", "")


class Conversation:
    def __init__(self, parts: tuple[str, ...]) -> None:
        self.parts = parts
        self.told = 1  # the first part is in the opening message
        self.correct = False

    @staticmethod
    def opening(parts: tuple[str, ...]) -> str:
        return f"I'll give you the door code in {len(parts)} parts. The first part is {parts[0]}. Reply OK."

    def reply(self, text: str) -> TurnOutcome:
        if self.told < len(self.parts):
            message = f"The {ORDINALS[self.told]} part is {self.parts[self.told]}. Reply OK."
            self.told += 1
            return TurnOutcome(reward=0.0, next_message=message)
        if self.told == len(self.parts):
            self.told += 1
            return TurnOutcome(reward=0.0, next_message=QUESTION)
        self.correct = normalise(text) == "".join(self.parts)
        return TurnOutcome(reward=1.0 if self.correct else 0.0, next_message=None)


class DoorCodeEnv(BaseEnv):
    """Join the parts of a door code given over several turns (multi-turn)."""

    name = "door_code"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_codes = make_codes(3000, seed=self.config.seed, evaluation=False)
        self.eval_codes = make_codes(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> tuple[str, ...]:
        return self.rng.choice(self.train_codes)

    async def play(self, parts: tuple[str, ...], temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(parts)
        episode = await run_episode(
            self.policy,
            Conversation.opening(parts),
            conversation.reply,
            max_turns=len(parts) + 1,
            discount_factor=1.0,
            max_tokens=12,  # the longest code is 9 digits
            temperature=temperature,
        )
        return episode, conversation.correct

    async def collect_trajectories(self, item: tuple[str, ...]) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if correct else 0.0 for _, correct in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(code, 0.0) for code in self.eval_codes))
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
    DoorCodeEnv.cli()
