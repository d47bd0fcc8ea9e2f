"""Guess a hidden number from 1 to 8, told "Higher." or "Lower." after each guess (multi-turn).

The first user message is "I am thinking of a number from 1 to 8. Guess it."; each reply that is
not the number gets "Higher." or "Lower." ("Please answer with a number from 1 to 8." for
anything else, which wastes the turn). An episode ends on the right guess or after
``max_turns`` turns and returns ``discount_factor ** (turns - 1)`` on success, 0 otherwise. The
hidden number is the only item, so evaluation plays every number once with greedy decoding;
a policy that always guesses the same way finds at most one of them on its first turn, and
must read the feedback to find all eight within four guesses.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

LOWEST, HIGHEST = 1, 8
OPENING = f"I am thinking of a number from {LOWEST} to {HIGHEST}. Guess it."


class GuessNumberConfig(BaseEnvConfig):
    max_turns: int = Field(4, ge=1, le=16, description="Guesses before an episode ends unsuccessfully.")
    discount_factor: float = Field(0.9, gt=0, le=1, description="Per-turn discount of a success.")


class HiddenNumber:
    def __init__(self, number: int) -> None:
        self.number = number
        self.found = False

    def reply(self, guess_text: str) -> TurnOutcome:
        guess = guess_text.strip()
        if not guess.isdigit() or not LOWEST <= int(guess) <= HIGHEST:
            return TurnOutcome(reward=0.0, next_message=f"Please answer with a number from {LOWEST} to {HIGHEST}.")
        if int(guess) == self.number:
            self.found = True
            return TurnOutcome(reward=1.0, next_message=None)
        return TurnOutcome(reward=0.0, next_message="Higher." if self.number > int(guess) else "Lower.")


class GuessNumberEnv(BaseEnv):
    """Find a hidden number by its higher/lower feedback (multi-turn)."""

    name = "guess_number"
    env_config_cls = GuessNumberConfig

    def __init__(self, config: GuessNumberConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.config: GuessNumberConfig = config
        self.successes: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[GuessNumberConfig, list[APIServerConfig]]:
        config = GuessNumberConfig(group_size=8, batch_size=64, total_steps=100, steps_per_eval=10, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> int:
        return self.rng.randint(LOWEST, HIGHEST)

    async def play(self, number: int, temperature: float | None = None) -> tuple[Episode, bool]:
        hidden = HiddenNumber(number)
        episode = await run_episode(
            self.policy,
            OPENING,
            hidden.reply,
            max_turns=self.config.max_turns,
            discount_factor=self.config.discount_factor,
            max_tokens=3,
            temperature=temperature,
        )
        return episode, hidden.found

    async def collect_trajectories(self, item: int) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.successes.extend(1.0 if found else 0.0 for _, found in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(n, 0.0) for n in range(LOWEST, HIGHEST + 1)))
        metrics = {
            "eval/percent_correct": sum(found for _, found in played) / len(played),
            "eval/mean_return": sum(e.discounted_return for e, _ in played) / len(played),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.successes:
            metrics["train/percent_correct"] = sum(self.successes) / len(self.successes)
            self.successes = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    GuessNumberEnv.cli()
