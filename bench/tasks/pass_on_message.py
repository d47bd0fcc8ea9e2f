"""Pass on the message left for a caller, from earlier turns (multi-turn memory).

The user leaves two or three messages for different people, one a turn, each ending "Reply
OK.": "I'm popping out for a bit. If Sam comes round, tell him the spare key is under the mat.
Reply OK." then "And if Priya drops by, tell her the parcel is in the shed. Reply OK." Whatever
the replies, one of those people then arrives: "Hi, it's Priya. Did they leave a message for
me?" and the last reply must be that person's message as it was given: "the parcel is in the
shed". Episodes are drawn by a seeded generator (names, messages built from a thing and a
place, which caller arrives, the wording of each turn); a tenth, chosen by a SHA-256 hash of
the names, messages and caller, are held out for evaluation, so the policy must carry the
message over from the right turn, not learn an answer per episode. Evaluation is greedy and
exact. In training the last reply scores the share of characters right position by position,
over the longer of reply and message, so a policy trained from scratch can learn; the "OK"
turns score 0.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

PEOPLE = (
    ("Sam", "him"), ("Priya", "her"), ("Tom", "him"), ("Grace", "her"), ("Omar", "him"), ("Lucy", "her"),
    ("Dev", "him"), ("Hannah", "her"), ("Jack", "him"), ("Mei", "her"), ("Callum", "him"), ("Rosa", "her"),
    ("Ade", "him"), ("Fiona", "her"), ("Luke", "him"), ("Nina", "her"),
)
THINGS = (
    "the spare key", "the parcel", "the dog's lead", "the bike pump", "the umbrella", "the cake tin",
    "the drill", "the charger", "the ladder", "the post", "the recycling bag", "the toolbox",
)
PLACES = (
    "under the mat", "in the shed", "next door", "on the kitchen table", "in the blue bowl",
    "behind the plant pot", "in the top drawer", "by the back door", "in the car", "on the stairs",
    "in the porch", "under the sink",
)
FIRST = (
    "I'm popping out for a bit. If {name} comes round, tell {pron} {message}. Reply OK.",
    "Can you keep an eye on the door while I'm out? If {name} knocks, tell {pron} {message}. Reply OK.",
    "I'll be out all afternoon. Should {name} turn up, let {pron} know {message}. Reply OK.",
)
NEXT = (
    "And if {name} drops by, tell {pron} {message}. Reply OK.",
    "Also, if {name} comes round, tell {pron} {message}. Reply OK.",
    "One more: if {name} calls in, let {pron} know {message}. Reply OK.",
)
ARRIVE = (
    "Hi, it's {name}. Did they leave a message for me?",
    "Hello, {name} here. Is there a message for me?",
    "Hi! I'm {name}. Was I supposed to be told something?",
)
MAX_TOKENS = max(len(t) for t in THINGS) + len(" is ") + max(len(p) for p in PLACES) + 3  # the longest message and a little


def held_out(content: str) -> bool:
    return hashlib.sha256(content.encode()).digest()[0] % 10 == 0


def make_episodes(count: int, *, seed: int, evaluation: bool) -> list[tuple[list[str], str]]:
    """``count`` distinct episodes: (the user's messages in order, the message due to the caller)."""
    rng = random.Random(f"pass_on_message:{seed}")
    found: dict[tuple[str, ...], str] = {}
    while len(found) < count:
        size = rng.randint(2, 3)
        people = rng.sample(PEOPLE, size)
        messages = [f"{thing} is {place}" for thing, place in zip(rng.sample(THINGS, size), rng.sample(PLACES, size))]
        caller = rng.randrange(size)
        content = ";".join(f"{name}:{message}" for (name, _), message in zip(people, messages)) + f"|{people[caller][0]}"
        if held_out(content) != evaluation:
            continue
        turns = [rng.choice(FIRST).format(name=people[0][0], pron=people[0][1], message=messages[0])]
        for (name, pron), message in zip(people[1:], messages[1:]):
            turns.append(rng.choice(NEXT).format(name=name, pron=pron, message=message))
        turns.append(rng.choice(ARRIVE).format(name=people[caller][0]))
        found.setdefault(tuple(turns), messages[caller])
    return [(list(turns), message) for turns, message in found.items()]


def char_share(answer: str, target: str) -> float:
    """The share of positions where reply and answer agree, over the longer of the two."""
    reply = answer.strip()
    longest = max(len(reply), len(target))
    if longest == 0:
        return 1.0
    return sum(x == y for x, y in zip(reply, target)) / longest


class Conversation:
    def __init__(self, turns: list[str], message: str) -> None:
        self.pending = list(turns[1:])
        self.message = message
        self.passed_on = False

    def reply(self, text: str) -> TurnOutcome:
        if self.pending:
            return TurnOutcome(reward=0.0, next_message=self.pending.pop(0))
        self.passed_on = text.strip() == self.message
        return TurnOutcome(reward=char_share(text, self.message), next_message=None)


class PassOnMessageEnv(BaseEnv):
    """Give an arriving caller the message left for them in an earlier turn (multi-turn)."""

    name = "pass_on_message"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.passed_on: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=768, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_episodes = make_episodes(2000, seed=self.config.seed, evaluation=False)
        self.eval_episodes = make_episodes(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_episodes)

    async def play(self, item: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        turns, message = item
        conversation = Conversation(turns, message)
        episode = await run_episode(
            self.policy,
            turns[0],
            conversation.reply,
            max_turns=len(turns),
            discount_factor=1.0,
            max_tokens=MAX_TOKENS,
            temperature=temperature,
        )
        return episode, conversation.passed_on

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item) for _ in range(self.config.group_size)), self.config.group_size)
        self.passed_on.extend(1.0 if passed else 0.0 for _, passed in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item, 0.0) for item in self.eval_episodes), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(passed for _, passed in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.passed_on:
            metrics["train/percent_correct"] = sum(self.passed_on) / len(self.passed_on)
            self.passed_on = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    PassOnMessageEnv.cli()
