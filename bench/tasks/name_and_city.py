"""Recall one of two facts given in earlier turns (three-turn memory with a distractor).

The user opens with "My name is {name}. Reply OK.", then, whatever the reply, says "I live in
{city}. Reply OK.", then asks either "What is my name?" -> "{name}" or "Which city do I live
in?" -> "{city}". Example: "My name is Anna." / "I live in Rome." / "What is my name?" ->
"Anna". The episode returns 1.0 when the third reply, after .strip(), is the asked-for word and
0 otherwise (the first two replies earn nothing). Items are (name, city, question) from twenty
names and twenty cities; a tenth, chosen by a SHA-256 hash, are held out for evaluation (every
name and city also appears in training items), so the policy must read the answer from the
conversation and pick the right one of the two facts.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

NAMES = "Anna Tom Maria James Sofia Ben Laura Omar Nina Paul Emma Hugo Clara Leo Rosa Ivan Sara Noah Lucy Adam".split()
CITIES = (
    "Rome Paris Berlin Madrid Lisbon Vienna Oslo Dublin Prague Athens "
    "Cairo Tokyo Lima Sydney Toronto Moscow Warsaw Seoul Nairobi Chicago"
).split()
QUESTIONS = {"name": "What is my name?", "city": "Which city do I live in?"}

Item = tuple[str, str, str]  # (name, city, "name" or "city")


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"{item[0]} lives in {item[1]}, asked {item[2]}".encode()).digest()[0] % 10 == 0


def all_items(*, evaluation: bool) -> list[Item]:
    return [(n, c, q) for n in NAMES for c in CITIES for q in QUESTIONS if held_out((n, c, q)) == evaluation]


def answer(item: Item) -> str:
    return item[0] if item[2] == "name" else item[1]


class Conversation:
    def __init__(self, item: Item) -> None:
        self.item = item
        self.turn = 0
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        self.turn += 1
        if self.turn == 1:
            return TurnOutcome(reward=0.0, next_message=f"I live in {self.item[1]}. Reply OK.")
        if self.turn == 2:
            return TurnOutcome(reward=0.0, next_message=QUESTIONS[self.item[2]])
        self.right = text.strip() == answer(self.item)
        return TurnOutcome(reward=1.0 if self.right else 0.0, next_message=None)


class NameAndCityEnv(BaseEnv):
    """Answer, in the third turn, a question about the name or the city given earlier (multi-turn)."""

    name = "name_and_city"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=160, use_wandb=False)
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
            f"My name is {item[0]}. Reply OK.",
            conversation.reply,
            max_turns=3,
            discount_factor=1.0,
            max_tokens=10,
            temperature=temperature,
        )
        return episode, conversation.right

    async def collect_trajectories(self, item: Item) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if right else 0.0 for _, right in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(item, 0.0) for item in self.eval_items))
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
    NameAndCityEnv.cli()
