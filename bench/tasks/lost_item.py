"""Track where something was put down and moved around the house over a chat (multi-turn memory).

The user says where they put things, one remark per message ("I've left my keys on the kitchen
table.", "I put my glasses on the windowsill.", "Actually, I've moved my keys to the top
drawer."), the assistant acknowledging each, and then asks "Where are my keys now?". The
episode returns 1.0 when the last reply names the place the thing was put last ("top drawer",
"the top drawer" or "in the top drawer") and 0 otherwise. A conversation has the asked-about
thing put down once and moved up to twice, interleaved with one or two other things being put
down or moved, across twenty places; conversations are drawn at random and a tenth of them,
chosen by a SHA-256 hash of the script, are held out for evaluation.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

# (thing, plural?)
THINGS = (
    ("keys", True), ("glasses", True), ("wallet", False), ("phone", False), ("passport", False),
    ("umbrella", False), ("headphones", True), ("charger", False), ("watch", False), ("gloves", True),
)
# (preposition, place)
PLACES = (
    ("on", "kitchen table"), ("in", "top drawer"), ("on", "coat hook"), ("on", "bedside table"),
    ("on", "bookshelf"), ("on", "windowsill"), ("on", "sofa"), ("in", "hall cupboard"),
    ("on", "bathroom shelf"), ("on", "desk"), ("in", "fruit bowl"), ("in", "car"), ("in", "garden shed"),
    ("in", "jacket pocket"), ("in", "backpack"), ("on", "piano"), ("on", "mantelpiece"),
    ("in", "laundry basket"), ("on", "shoe rack"), ("on", "microwave"),
)
OPENING = "I keep losing things, so I'm going to tell you where I put them. Just reply OK for now. "
PUT = ("I've left my {thing} {prep} the {place}.", "I put my {thing} {prep} the {place}.", "My {thing} {be} {prep} the {place}.")
MOVE = (
    "Actually, I've moved my {thing} to the {place}.",
    "Now my {thing} {be} {prep} the {place} instead.",
    "I just moved my {thing} {prep}to the {place}.",
)
QUESTION = ("Where {be} my {thing} now? Just the place, please.", "OK, where did I leave my {thing} in the end?")
MAX_TOKENS = 24


def held_out(script: str) -> bool:
    return hashlib.sha256(script.encode()).digest()[0] % 10 == 0


def say(templates: tuple[str, ...], thing: tuple[str, bool], place: tuple[str, str], rng: random.Random) -> str:
    prep, where = place
    return rng.choice(templates).format(thing=thing[0], be="are" if thing[1] else "is", prep=prep, place=where)


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[list[str], str]]:
    """(user messages, answer place) for ``count`` distinct conversations of one split."""
    rng = random.Random(f"lost_item:{seed}:{evaluation}")
    found: dict[str, tuple[list[str], str]] = {}
    while len(found) < count:
        target, *others = rng.sample(THINGS, rng.randint(2, 3))
        # each thing is put down first and then moved: the asked-about one 0-2 times, others 0-1
        queues = [[(target, False)] + [(target, True)] * rng.randint(0, 2)]
        queues += [[(o, False)] + [(o, True)] * rng.randint(0, 1) for o in others]
        ordered: list[tuple[tuple[str, bool], bool]] = []
        while queues:  # interleave at random, keeping each thing's own order
            queue = rng.choice(queues)
            ordered.append(queue.pop(0))
            queues = [q for q in queues if q]
        places = rng.sample(PLACES, len(ordered))
        messages = []
        answer = ""
        for (thing, is_move), place in zip(ordered, places):
            messages.append(say(MOVE if is_move else PUT, thing, place, rng))
            if thing == target:
                answer = place[1]
        messages[0] = OPENING + messages[0]
        messages.append(rng.choice(QUESTION).format(thing=target[0], be="are" if target[1] else "is"))
        script = "\n".join(messages)
        if held_out(script) != evaluation or script in found:
            continue
        found[script] = (messages, answer)
    return list(found.values())


def normalise(text: str) -> str:
    text = re.sub(r"[^a-z ]", " ", text.lower())
    words = text.split()
    while words and words[0] in {"on", "in", "into", "onto", "to", "at", "the", "my", "your", "they", "it", "are", "is", "re", "s"}:
        words = words[1:]
    return " ".join(words)


class Conversation:
    def __init__(self, messages: list[str], answer: str) -> None:
        self.pending = list(messages[1:])
        self.answer = answer
        self.found = False

    def reply(self, text: str) -> TurnOutcome:
        if self.pending:
            return TurnOutcome(reward=0.0, next_message=self.pending.pop(0))
        self.found = normalise(text) == self.answer
        return TurnOutcome(reward=1.0 if self.found else 0.0, next_message=None)


class LostItemEnv(BaseEnv):
    """Say where a thing was put last, after several remarks about moving things (multi-turn)."""

    name = "lost_item"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.found: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=1024, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(4000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    async def play(self, item: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        messages, answer = item
        conversation = Conversation(messages, answer)
        episode = await run_episode(
            self.policy,
            messages[0],
            conversation.reply,
            max_turns=len(messages),
            discount_factor=1.0,
            max_tokens=MAX_TOKENS,
            temperature=temperature,
        )
        return episode, conversation.found

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.found.extend(1.0 if found else 0.0 for _, found in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(item, 0.0) for item in self.eval_items))
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
    LostItemEnv.cli()
