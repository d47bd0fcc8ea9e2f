"""Recall which day a plan with someone is on, told two turns earlier (multi-turn memory).

The user says "I'm seeing Ana on Tuesday. Reply OK.", then "I'm also seeing Ben on Friday. Reply
OK.", then asks "Which day am I seeing Ana?" (or Ben). The episode returns 1.0 when the third
reply is that person's day and 0 otherwise; the first two replies are not scored. Two different
people and two different weekdays are drawn per episode; a tenth of the episodes, chosen by a
SHA-256 hash, are held out for evaluation, so the policy must carry the plans over from the
earlier turns, not learn an answer per name.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

NAMES = (
    "Ana", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gina", "Hugo", "Ivy", "Jack", "Kim", "Leo",
    "Lena", "Max", "Nora", "Omar", "Priya", "Raj", "Sara", "Tom", "Uma", "Vic", "Will", "Zoe",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# (first plan, second plan, question), all about the same kind of plan
PHRASINGS = (
    ("I'm seeing {name} on {day}. Reply OK.", "I'm also seeing {name} on {day}. Reply OK.", "Which day am I seeing {name}?"),
    ("Lunch with {name} is on {day}. Reply OK.", "And lunch with {name} is on {day}. Reply OK.", "What day is my lunch with {name}?"),
    ("{name}'s party is on {day}. Reply OK.", "{name}'s party is on {day}. Reply OK.", "On which day is {name}'s party?"),
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_episodes(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str, str, int, int]]:
    """(first name, first day, second name, second day, which one is asked (0/1), phrasing)."""
    rng = random.Random(f"visit_days:{seed}")
    found: dict[str, tuple[str, str, str, str, int, int]] = {}
    while len(found) < count:
        first, second = rng.sample(NAMES, 2)
        day1, day2 = rng.sample(DAYS, 2)
        asked = rng.randrange(2)
        key = f"{first}|{day1}|{second}|{day2}|{asked}"
        if key not in found and held_out(key) == evaluation:
            found[key] = (first, day1, second, day2, asked, rng.randrange(len(PHRASINGS)))
    return list(found.values())


class Conversation:
    def __init__(self, episode: tuple[str, str, str, str, int, int]) -> None:
        first, day1, second, day2, asked, phrasing = episode
        self.messages = [
            PHRASINGS[phrasing][1].format(name=second, day=day2),
            PHRASINGS[phrasing][2].format(name=(first, second)[asked]),
        ]
        self.day = (day1, day2)[asked]
        self.turn = 0
        self.recalled = False

    def reply(self, text: str) -> TurnOutcome:
        if self.turn < len(self.messages):
            self.turn += 1
            return TurnOutcome(reward=0.0, next_message=self.messages[self.turn - 1])
        self.recalled = text.strip() == self.day
        return TurnOutcome(reward=1.0 if self.recalled else 0.0, next_message=None)


def opening(episode: tuple[str, str, str, str, int, int]) -> str:
    return PHRASINGS[episode[5]][0].format(name=episode[0], day=episode[1])


class VisitDaysEnv(BaseEnv):
    """Answer, in the third turn, the day of a plan told in the first or second (multi-turn)."""

    name = "visit_days"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.recalled: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_episodes = make_episodes(2000, seed=self.config.seed, evaluation=False)
        self.eval_episodes = make_episodes(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_episodes)

    async def play(self, item: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(item)
        episode = await run_episode(
            self.policy,
            opening(item),
            conversation.reply,
            max_turns=3,
            discount_factor=1.0,
            max_tokens=10,
            temperature=temperature,
        )
        return episode, conversation.recalled

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.recalled.extend(1.0 if recalled else 0.0 for _, recalled in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(item, 0.0) for item in self.eval_episodes))
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
    VisitDaysEnv.cli()
