"""Recall the name of one of two pets told in earlier turns (multi-turn memory).

The user says "My {pet} is called {name}. Reply OK.", then, whatever the reply, "My {other pet}
is called {other name}. Reply OK.", and finally asks "What is my {pet or other pet} called?".
Example: "My dog is called Biscuit. Reply OK." / "My cat is called Pepper. Reply OK." / "What is
my dog called?" -> "Biscuit"; asked about the cat, the answer would be "Pepper". Half the items
ask about the first pet and half about the second. The episode returns 1.0 when the third reply,
after .strip(), is exactly the right name and 0 otherwise (the first two replies earn nothing).
Items are (pet, name, other pet, other name, asked pet) from six pets and sixteen names, two
different pets and two different names each; a tenth, chosen by a SHA-256 hash, are held out
for evaluation (every pet and name also appears in training items).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

PETS = "dog cat rabbit parrot hamster turtle".split()
NAMES = "Biscuit Pepper Luna Max Coco Bella Rocky Daisy Oscar Milo Rosie Charlie Ziggy Pip Toby Nala".split()

Item = tuple[str, str, str, str, str]  # (pet, name, other pet, other name, asked pet)


def held_out(item: Item) -> bool:
    pet, name, other, other_name, asked = item
    return hashlib.sha256(f"{pet} {name}, {other} {other_name}, asked {asked}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"pet_names:{seed}")
    found: dict[Item, None] = {}
    for asks_first, wanted in ((True, count // 2), (False, count - count // 2)):
        kind: dict[Item, None] = {}
        while len(kind) < wanted:
            pet, other = rng.sample(PETS, 2)
            name, other_name = rng.sample(NAMES, 2)
            item = (pet, name, other, other_name, pet if asks_first else other)
            if held_out(item) == evaluation:
                kind[item] = None
        found.update(kind)
    return list(found)


def answer(item: Item) -> str:
    pet, name, other, other_name, asked = item
    return name if asked == pet else other_name


class Conversation:
    def __init__(self, item: Item) -> None:
        self.item = item
        self.turn = 0
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        self.turn += 1
        if self.turn == 1:
            return TurnOutcome(reward=0.0, next_message=f"My {self.item[2]} is called {self.item[3]}. Reply OK.")
        if self.turn == 2:
            return TurnOutcome(reward=0.0, next_message=f"What is my {self.item[4]} called?")
        self.right = text.strip() == answer(self.item)
        return TurnOutcome(reward=1.0 if self.right else 0.0, next_message=None)


class PetNamesEnv(BaseEnv):
    """Answer, in the third turn, the name of the pet asked about, told in one of the first two turns (multi-turn)."""

    name = "pet_names"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Item:
        return self.rng.choice(self.train_items)

    async def play(self, item: Item, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(item)
        episode = await run_episode(
            self.policy,
            f"My {item[0]} is called {item[1]}. Reply OK.",
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
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item, 0.0) for item in self.eval_items), self.config.max_eval_workers)
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
    PetNamesEnv.cli()
