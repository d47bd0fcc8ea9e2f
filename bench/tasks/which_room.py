"""Say which room a thing is in after a move mentioned in a later turn (multi-turn state tracking).

The user opens with "I left my {thing} in the {room}. Reply OK.", then, whatever the reply,
says "Later I moved my {thing or another thing} to the {other room}. Reply OK." and finally
asks "Which room is my {thing} in now?". Example: "I left my phone in the kitchen. Reply OK." /
"Later I moved my phone to the garage. Reply OK." / "Which room is my phone in now?" ->
"garage"; had the second turn moved the wallet instead, the answer would be "kitchen". Half
the items move the asked-about thing and half move another. The episode returns 1.0 when the
third reply, after .strip(), is the right room and 0 otherwise (the first two replies earn
nothing). Items are (thing, room, moved thing, new room) from twelve things and twelve one-word
rooms: 1,584 items move the asked-about thing and 17,424 move another, 19,008 in all; a tenth,
chosen by a SHA-256 hash, are held out for evaluation (every thing and room also appears in
training items).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

THINGS = "phone wallet watch umbrella book hat ring scarf passport laptop camera guitar".split()
ROOMS = "kitchen bedroom bathroom garage hallway office attic basement study library pantry lounge".split()

Item = tuple[str, str, str, str]  # (thing, room, moved thing, new room)


def held_out(item: Item) -> bool:
    thing, room, moved, new_room = item
    return hashlib.sha256(f"{thing} in {room}, then {moved} to {new_room}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"which_room:{seed}")
    found: dict[Item, None] = {}
    for moves_it, wanted in ((True, count // 2), (False, count - count // 2)):
        kind: dict[Item, None] = {}
        while len(kind) < wanted:
            thing, other = rng.sample(THINGS, 2)
            room, new_room = rng.sample(ROOMS, 2)
            item = (thing, room, thing if moves_it else other, new_room)
            if held_out(item) == evaluation:
                kind[item] = None
        found.update(kind)
    return list(found)


def answer(item: Item) -> str:
    thing, room, moved, new_room = item
    return new_room if moved == thing else room


def first_message(item: Item) -> str:
    return f"I left my {item[0]} in the {item[1]}. Reply OK."


class Conversation:
    def __init__(self, item: Item) -> None:
        self.item = item
        self.turn = 0
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        self.turn += 1
        if self.turn == 1:
            return TurnOutcome(reward=0.0, next_message=f"Later I moved my {self.item[2]} to the {self.item[3]}. Reply OK.")
        if self.turn == 2:
            return TurnOutcome(reward=0.0, next_message=f"Which room is my {self.item[0]} in now?")
        self.right = text.strip() == answer(self.item)
        return TurnOutcome(reward=1.0 if self.right else 0.0, next_message=None)


class WhichRoomEnv(BaseEnv):
    """Answer, in the third turn, which room a thing is in after the moves told in the first two (multi-turn)."""

    name = "which_room"

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
            first_message(item),
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
    WhichRoomEnv.cli()
