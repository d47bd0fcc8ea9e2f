"""Say whether one day was warmer or colder than another, both told in earlier turns (multi-turn, free-text label).

The user says "{Day} was {t} degrees. Reply OK.", then, whatever the reply, "{Next day} was {u}
degrees. Reply OK.", and finally asks "Was {one day} warmer or colder than {the other}? Answer
warmer or colder." Example: "Monday was 12 degrees. Reply OK." / "Tuesday was 18 degrees. Reply
OK." / "Was Tuesday warmer or colder than Monday? Answer warmer or colder." -> "warmer"; asked
"Was Monday warmer or colder than Tuesday?", the answer would be "colder". The reply is free
text (no guided_choice). The episode returns 1.0 when the third reply, after .strip(), is
exactly the right word and 0 otherwise (the first two replies earn nothing). Items are (day,
temperature, next day, other temperature, day asked about) with consecutive weekdays from
Monday-Tuesday to Saturday-Sunday, two different whole temperatures from -10 to 35, and the
question asked about either day; a tenth, chosen by a SHA-256 hash, are held out for evaluation
(every day, temperature and answer also appears in training items).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()

Item = tuple[str, int, str, int, str]  # (day, temperature, next day, its temperature, day asked about)


def held_out(item: Item) -> bool:
    day, t, other, u, asked = item
    return hashlib.sha256(f"warmer_colder {day} {t}, {other} {u}, asked {asked}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"warmer_colder:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        start = rng.randrange(len(DAYS) - 1)
        day, other = DAYS[start], DAYS[start + 1]
        t, u = rng.sample(range(-10, 36), 2)
        item = (day, t, other, u, rng.choice((day, other)))
        if held_out(item) == evaluation:
            found[item] = None
    return list(found)


def answer(item: Item) -> str:
    day, t, other, u, asked = item
    asked_t, compared_t = (t, u) if asked == day else (u, t)
    return "warmer" if asked_t > compared_t else "colder"


def question(item: Item) -> str:
    day, _, other, _, asked = item
    compared = other if asked == day else day
    return f"Was {asked} warmer or colder than {compared}? Answer warmer or colder."


class Conversation:
    def __init__(self, item: Item) -> None:
        self.item = item
        self.turn = 0
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        self.turn += 1
        if self.turn == 1:
            return TurnOutcome(reward=0.0, next_message=f"{self.item[2]} was {self.item[3]} degrees. Reply OK.")
        if self.turn == 2:
            return TurnOutcome(reward=0.0, next_message=question(self.item))
        self.right = text.strip() == answer(self.item)
        return TurnOutcome(reward=1.0 if self.right else 0.0, next_message=None)


class WarmerColderEnv(BaseEnv):
    """Answer, in the third turn, whether one day was warmer or colder than the other, told in the first two turns (multi-turn)."""

    name = "warmer_colder"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=256, use_wandb=False)
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
            f"{item[0]} was {item[1]} degrees. Reply OK.",
            conversation.reply,
            max_turns=3,
            discount_factor=1.0,
            max_tokens=8,
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
    WarmerColderEnv.cli()
