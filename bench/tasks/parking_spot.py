"""Recall where the car was parked, two turns after being told (multi-turn memory).

The user opens with "I've parked on level 3, in spot C14. Just remember that for me and reply
OK.", then says something unrelated ("Thanks. I'm heading into the shops now. Reply OK."), and
finally asks either "Which spot did I park in?" (-> "C14") or "Which level is the car on?"
(-> "3"). The episode returns 1.0 when the last reply is the asked fact and 0 otherwise
(capitals, a leading "spot" or "level" and a final full stop are forgiven); the earlier replies
earn nothing. Parking places are a level from 1 to 6 and a spot of a letter A to H and a number
1 to 40; a tenth of the places, chosen by a SHA-256 hash, are held out for evaluation, so the
policy must carry the place over from the first message, not learn an answer per place.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

LEVELS = range(1, 7)
ROWS = "ABCDEFGH"
NUMBERS = range(1, 41)
OPENINGS = (
    "I've parked on level {level}, in spot {spot}. Just remember that for me and reply OK.",
    "Note for later: the car is on level {level}, spot {spot}. Reply OK.",
    "Parking reminder: level {level}, spot {spot}. Please keep that in mind and say OK.",
)
FILLERS = (
    "Thanks. I'm heading into the shops now. Reply OK.",
    "Great. Going to grab a coffee first. Say OK.",
    "Cheers. I'll be a couple of hours. Reply OK.",
)
QUESTIONS = {
    "spot": ("Which spot did I park in?", "I'm back. What was my parking spot?"),
    "level": ("Which level is the car on?", "I'm back. What level did I park on?"),
}


def held_out(place: str) -> bool:
    return hashlib.sha256(place.encode()).digest()[0] % 10 == 0


def all_items(evaluation: bool) -> list[tuple[str, str, str, str]]:
    """(opening, filler, question, answer) for every place on the chosen side of the split."""
    items = []
    for level in LEVELS:
        for row in ROWS:
            for number in NUMBERS:
                spot = f"{row}{number}"
                if held_out(f"{level}|{spot}") != evaluation:
                    continue
                pick = int(hashlib.sha256(f"{level}|{spot}".encode()).hexdigest(), 16)
                opening = OPENINGS[pick % 3].format(level=level, spot=spot)
                filler = FILLERS[(pick // 3) % 3]
                for kind, answer in (("spot", spot), ("level", str(level))):
                    items.append((opening, filler, QUESTIONS[kind][(pick // 9) % 2], answer))
    return items


def normalise(text: str) -> str:
    text = " ".join(text.lower().split()).rstrip(".").strip()
    for word in ("spot ", "level "):
        if text.startswith(word):
            text = text[len(word):]
    return text


def right(answer: str, target: str) -> bool:
    return normalise(answer) == target.lower()


MAX_TOKENS = 8  # "OK" and the longest answer, "H40", with room to spare


class Conversation:
    def __init__(self, item: tuple[str, str, str, str]) -> None:
        self.item = item
        self.turn = 0
        self.recalled = False

    def reply(self, text: str) -> TurnOutcome:
        self.turn += 1
        if self.turn == 1:
            return TurnOutcome(reward=0.0, next_message=self.item[1])
        if self.turn == 2:
            return TurnOutcome(reward=0.0, next_message=self.item[2])
        self.recalled = right(text, self.item[3])
        return TurnOutcome(reward=1.0 if self.recalled else 0.0, next_message=None)


class ParkingSpotEnv(BaseEnv):
    """Say, two turns later, the parking level or spot given in the first message (multi-turn)."""

    name = "parking_spot"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.recalled: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = all_items(evaluation=False)
        held = all_items(evaluation=True)
        # a fixed sample keeps evaluation short; every item in it is held out
        self.eval_items = random.Random("parking_spot:eval").sample(held, min(100, len(held)))
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    async def play(self, item: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(item)
        episode = await run_episode(
            self.policy,
            item[0],
            conversation.reply,
            max_turns=3,
            discount_factor=1.0,
            max_tokens=MAX_TOKENS,
            temperature=temperature,
        )
        return episode, conversation.recalled

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.recalled.extend(1.0 if recalled else 0.0 for _, recalled in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item, 0.0) for item in self.eval_items), self.config.max_eval_workers)
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
    ParkingSpotEnv.cli()
