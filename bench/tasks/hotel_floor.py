"""Say which floor a hotel room from an earlier turn is on (multi-turn).

The guest opens with "I just checked in to room 714. Reply OK." and, whatever the reply, asks
"Which floor is my room on? Answer with the number." The floor is the room number without its
last two digits (room 714 is on floor 7, room 1203 on floor 12). Rooms run 01 to 30 on floors 1
to 12; a tenth of them, chosen by a SHA-256 hash, are held out for evaluation, so the policy
must carry the room over from the first message and read the floor off it. The episode returns
1.0 when the second reply is the floor and 0 otherwise.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

OPENINGS = (
    "I just checked in to room {room}. Reply OK.",
    "My hotel room number is {room}. Reply OK.",
    "The receptionist gave me the key to room {room}. Reply OK.",
)
QUESTION = "Which floor is my room on? Answer with the number."


def held_out(room: str) -> bool:
    return hashlib.sha256(room.encode()).digest()[0] % 10 == 0


def all_rooms() -> list[tuple[str, str]]:
    """(room, floor) for every room."""
    return [(f"{floor}{number:02d}", str(floor)) for floor in range(1, 13) for number in range(1, 31)]


class Conversation:
    def __init__(self, floor: str) -> None:
        self.floor = floor
        self.asked = False
        self.correct = False

    def reply(self, text: str) -> TurnOutcome:
        if not self.asked:
            self.asked = True
            return TurnOutcome(reward=0.0, next_message=QUESTION)
        self.correct = text.strip() == self.floor
        return TurnOutcome(reward=1.0 if self.correct else 0.0, next_message=None)


class HotelFloorEnv(BaseEnv):
    """Give, in the second turn, the floor of the room named in the first (multi-turn)."""

    name = "hotel_floor"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.answered: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        rooms = all_rooms()
        self.train_items = [(r, f, t) for r, f in rooms if not held_out(r) for t in OPENINGS]
        self.eval_items = [(r, f, t) for r, f in rooms if held_out(r) for t in OPENINGS]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> tuple[str, str, str]:
        return self.rng.choice(self.train_items)

    async def play(self, item: tuple[str, str, str], temperature: float | None = None) -> tuple[Episode, bool]:
        room, floor, opening = item
        conversation = Conversation(floor)
        episode = await run_episode(
            self.policy,
            opening.format(room=room),
            conversation.reply,
            max_turns=2,
            discount_factor=1.0,
            max_tokens=6,
            temperature=temperature,
        )
        return episode, conversation.correct

    async def collect_trajectories(self, item: tuple[str, str, str]) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.answered.extend(1.0 if correct else 0.0 for _, correct in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(item, 0.0) for item in self.eval_items))
        metrics = {"eval/percent_correct": sum(correct for _, correct in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.answered:
            metrics["train/percent_correct"] = sum(self.answered) / len(self.answered)
            self.answered = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    HotelFloorEnv.cli()
