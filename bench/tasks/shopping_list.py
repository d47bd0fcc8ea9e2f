"""Name an item of a list given in an earlier turn by its position (multi-turn recall by position).

The user opens with "Here is my shopping list: {a}, {b}, {c}. Reply OK." and, whatever the
reply, asks "What was the {first|second|third} thing on my list?". Example: "Here is my
shopping list: eggs, milk, bread. Reply OK." / "What was the second thing on my list?" ->
"milk". The episode returns 1.0 when the second reply, after .strip(), is the asked-for item
and 0 otherwise (the first reply earns nothing). Items are (three different groceries from a
list of twenty, position); a tenth, chosen by a SHA-256 hash, are held out for evaluation
(every grocery also appears in training items), so the policy must read the answer from the
first message, not learn one per list.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

GROCERIES = """
eggs milk bread butter cheese apples rice pasta flour sugar tea coffee honey jam onions
carrots beans salt soap lemons
""".split()
ORDINALS = ("first", "second", "third")

Item = tuple[tuple[str, str, str], int]  # (groceries, position 0..2)


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"list {', '.join(item[0])}, asked {ORDINALS[item[1]]}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"shopping_list:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        item = (tuple(rng.sample(GROCERIES, 3)), rng.randrange(3))
        if held_out(item) == evaluation:  # type: ignore[arg-type]
            found[item] = None  # type: ignore[index]
    return list(found)


def answer(item: Item) -> str:
    return item[0][item[1]]


def first_message(item: Item) -> str:
    return f"Here is my shopping list: {', '.join(item[0])}. Reply OK."


class Conversation:
    def __init__(self, item: Item) -> None:
        self.item = item
        self.asked = False
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        if not self.asked:
            self.asked = True
            return TurnOutcome(reward=0.0, next_message=f"What was the {ORDINALS[self.item[1]]} thing on my list?")
        self.right = text.strip() == answer(self.item)
        return TurnOutcome(reward=1.0 if self.right else 0.0, next_message=None)


class ShoppingListEnv(BaseEnv):
    """Answer, in the second turn, with the item at a given position of the list from the first (multi-turn)."""

    name = "shopping_list"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=160, use_wandb=False)
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
            max_turns=2,
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
    ShoppingListEnv.cli()
