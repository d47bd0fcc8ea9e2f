"""Keep track of packed items over several messages and say what is still missing (multi-turn).

The user reports what they have packed in two or three messages ("I'm packing for a beach
holiday. So far I've put in my passport, sunglasses and a toothbrush. Just say OK for now.",
"Also packed: phone charger."), then lists the whole checklist in a shuffled order and asks
which thing has not been packed yet. Replies before the question earn nothing; the last reply
scores 1.0 when, of the checklist's items, it names only the missing one, and 0 otherwise.
A tenth of the episodes, chosen by a SHA-256 hash of the checklist and the missing item, are
held out for evaluation, so the policy must carry the packed items over from earlier messages.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

THINGS = (
    "passport", "phone charger", "toothbrush", "sunglasses", "swimsuit", "headphones", "sun cream", "umbrella",
    "raincoat", "wallet", "tickets", "camera", "book", "hat", "sandals", "pyjamas", "laptop", "plug adapter",
    "medicine", "hairbrush", "socks", "scarf", "gloves", "water bottle", "razor", "keys", "towel", "trainers",
)
TRIPS = ("a weekend in Lisbon", "a beach holiday", "a work trip", "a ski trip", "my sister's wedding", "a camping trip", "a week at my parents'")
OPENERS = (
    "I'm packing for {trip}. So far I've put in {things}. Just say OK for now.",
    "Can you help me keep track while I pack for {trip}? In the bag already: {things}. Reply OK.",
    "packing for {trip}... {things} are in. say ok",
)
FOLLOW_UPS = (
    "Also packed: {things}. OK?",
    "Just added {things}.",
    "{things_cap} in too. OK?",
    "Right, {things} done as well.",
)
QUESTIONS = (
    "Here's my checklist: {checklist}. What haven't I packed yet?",
    "OK, the list says {checklist}. Which one am I still missing?",
    "Checking against my list - {checklist}. What's left to pack? Just the item.",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def join(things: list[str]) -> str:
    return things[0] if len(things) == 1 else ", ".join(things[:-1]) + " and " + things[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, list[str], str, tuple[str, ...]]]:
    """(key, the user's messages, missing item, checklist) episodes, held out or not."""
    rng = random.Random(f"packing_check:{seed}")
    found: dict[str, tuple[str, list[str], str, tuple[str, ...]]] = {}
    while len(found) < count:
        checklist = rng.sample(THINGS, rng.randint(5, 7))
        missing = rng.choice(checklist)
        key = ",".join(sorted(checklist)) + "|" + missing
        if held_out(key) != evaluation:
            continue
        packed = [t for t in checklist if t != missing]
        rng.shuffle(packed)
        parts = rng.randint(2, 3)
        cuts = sorted(rng.sample(range(1, len(packed)), parts - 1))
        chunks = [packed[a:b] for a, b in zip([0, *cuts], [*cuts, len(packed)])]
        messages = [rng.choice(OPENERS).format(trip=rng.choice(TRIPS), things=join(chunks[0]))]
        for chunk in chunks[1:]:
            text = join(chunk)
            messages.append(rng.choice(FOLLOW_UPS).format(things=text, things_cap=text[0].upper() + text[1:]))
        shown = list(checklist)
        rng.shuffle(shown)
        messages.append(rng.choice(QUESTIONS).format(checklist=", ".join(shown)))
        found.setdefault(key, (key, messages, missing, tuple(checklist)))
    return list(found.values())


def named(text: str, things: tuple[str, ...]) -> set[str]:
    lowered = text.lower()
    return {t for t in things if re.search(r"\b" + re.escape(t) + r"\b", lowered)}


def score(text: str, missing: str, checklist: tuple[str, ...]) -> float:
    return 1.0 if named(text, checklist) == {missing} else 0.0


class Conversation:
    def __init__(self, messages: list[str], missing: str, checklist: tuple[str, ...]) -> None:
        self.pending = list(messages[1:])
        self.missing = missing
        self.checklist = checklist
        self.found = False

    def reply(self, text: str) -> TurnOutcome:
        if self.pending:
            return TurnOutcome(reward=0.0, next_message=self.pending.pop(0))
        self.found = score(text, self.missing, self.checklist) == 1.0
        return TurnOutcome(reward=1.0 if self.found else 0.0, next_message=None)


class PackingCheckEnv(BaseEnv):
    """Say which checklist item was never reported packed (multi-turn)."""

    name = "packing_check"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.found: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=768, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    async def play(self, item: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        _, messages, missing, checklist = item
        conversation = Conversation(messages, missing, checklist)
        episode = await run_episode(
            self.policy,
            messages[0],
            conversation.reply,
            max_turns=len(messages),
            discount_factor=1.0,
            max_tokens=16,
            temperature=temperature,
        )
        return episode, conversation.found

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        import asyncio

        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.found.extend(1.0 if found else 0.0 for _, found in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item, 0.0) for item in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(found for _, found in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.found:
            metrics["train/percent_correct"] = sum(self.found) / len(self.found)
            self.found = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    PackingCheckEnv.cli()
