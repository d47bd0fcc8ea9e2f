"""Say which dish was ordered after a possible change of mind (multi-turn memory).

The user orders a dish ("Hi! I'd like the soup for lunch, please. Just reply OK."), then in a
second message either changes it ("Actually, could you change that to the curry? Reply OK.")
or adds a drink ("Could I also get a glass of lemonade? Reply OK."), and finally asks "So which
dish am I getting?". The answer is the dish standing after the second message: "curry" in the
first case, "soup" in the second. Whatever the first two replies, only the last one is scored:
1.0 when it is exactly the dish and 0 otherwise. A case is the first dish with the change or
the drink; a tenth of the cases, chosen by a SHA-256 hash, are held out (under all phrasings)
for evaluation, so the policy must follow the conversation, not learn an answer per case.
Training items are drawn half with a change and half with a drink, and the evaluation takes as
many held-out changes (picked with the seed) as it has held-out drinks, so neither "the last
dish named" nor "the first dish named" passes more than half the time.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

DISHES = (
    "soup", "salad", "pasta", "curry", "burger", "omelette", "risotto", "tacos", "lasagne",
    "ramen", "pizza", "paella", "stew", "noodles", "falafel", "quiche", "chili", "sushi",
)
DRINKS = ("water", "lemonade", "milk", "orange juice", "apple juice", "cola")
OPENERS = (
    "Hi! I'd like the {dish} for lunch, please. Just reply OK.",
    "Can I order the {dish}? Reply OK for now.",
)
CHANGES = (
    "Actually, could you change that to the {dish}? Reply OK.",
    "Sorry, I've changed my mind: make it the {dish} instead. Reply OK.",
)
EXTRAS = (
    "Could I also get a glass of {drink}? Reply OK.",
    "Oh, and a glass of {drink} with it, please. Reply OK.",
)
QUESTIONS = (
    "So which dish am I getting?",
    "Remind me, what food did I order?",
)


def held_out(case: str) -> bool:
    return hashlib.sha256(case.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, list[str], str]]:
    """(case, the three user messages, final dish) for every case and phrasing."""
    cases = [(first, f"change to {second}", CHANGES, {"dish": second}, second)
             for first in DISHES for second in DISHES if second != first]
    cases += [(first, f"add {drink}", EXTRAS, {"drink": drink}, first) for first in DISHES for drink in DRINKS]
    items = []
    for first, event, middles, fields, dish in cases:
        case = f"{first}|{event}"
        for opener in OPENERS:
            for middle in middles:
                for question in QUESTIONS:
                    messages = [opener.format(dish=first), middle.format(**fields), question]
                    items.append((case, messages, dish))
    return items


def changed(item: Any) -> bool:
    """Whether the second message of the item changes the order (rather than adding a drink)."""
    return "|change to " in item[0]


class Conversation:
    def __init__(self, messages: list[str], dish: str) -> None:
        self.later = list(messages[1:])
        self.dish = dish
        self.correct = False

    def reply(self, text: str) -> TurnOutcome:
        if self.later:
            return TurnOutcome(reward=0.0, next_message=self.later.pop(0))
        self.correct = text.strip() == self.dish
        return TurnOutcome(reward=1.0 if self.correct else 0.0, next_message=None)


class OrderChangeEnv(BaseEnv):
    """Name the dish ordered, after a change or an unrelated addition (multi-turn)."""

    name = "order_change"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        self.train_by_kind = {kind: [i for i in self.train_items if changed(i) == kind] for kind in (True, False)}
        held = [i for i in items if held_out(i[0])]
        additions = [i for i in held if not changed(i)]
        changes = random.Random(f"order_change:{self.config.seed}").sample([i for i in held if changed(i)], len(additions))
        self.eval_items = changes + additions
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_by_kind[self.rng.random() < 0.5])

    async def play(self, item: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        _, messages, dish = item
        conversation = Conversation(messages, dish)
        episode = await run_episode(
            self.policy,
            messages[0],
            conversation.reply,
            max_turns=len(messages),
            discount_factor=1.0,
            max_tokens=10,
            temperature=temperature,
        )
        return episode, conversation.correct

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if correct else 0.0 for _, correct in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item, 0.0) for item in self.eval_items), self.config.max_eval_workers)
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
    OrderChangeEnv.cli()
