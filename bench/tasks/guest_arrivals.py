"""Say who arrived first or last at a party, from guests announced one turn at a time
(multi-turn memory).

The user announces two to four guests, one a turn ("Help me keep track of who turns up. Priya
just arrived. Reply OK.", "Now Tom is here. Reply OK.", ...), and, whatever the replies, asks
either "Who arrived first?" or "Who arrived most recently?". The episode returns 1.0 when the
last reply is that guest (case, spacing and a final full stop aside) and 0 otherwise. Guest
lists are drawn at random; a tenth of them, chosen by a SHA-256 hash of the list, are held out
for evaluation, so the policy must carry names over from earlier turns, not learn an answer per
party.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.concurrency import gather_bounded
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

NAMES = (
    "Priya", "Tom", "Sara", "Luis", "Anna", "Ben", "Kim", "Omar", "Jess", "Leo", "Maya", "Raj",
    "Zoe", "Sam", "Nina", "Hugo", "Ella", "Dan", "Ivy", "Marco", "Lena", "Jack", "Aisha", "Theo",
    "Rosa", "Felix", "Chloe", "Ravi", "Grace", "Owen",
)
OPENINGS = (
    "I'm on door duty at my party, so help me keep track of who turns up. {name} just arrived. Reply OK.",
    "Can you keep track of the guests for me as they arrive? {name} is here. Reply OK.",
    "Help me remember who comes in tonight. {name} has just come in. Reply OK.",
)
ARRIVALS = ("Now {name} is here. Reply OK.", "{name} just arrived. Reply OK.", "{name} has just walked in. Reply OK.")
QUESTIONS = {
    "first": ("Who arrived first?", "Who was the first guest to get here?"),
    "last": ("Who arrived most recently?", "Who was the last guest to get here?"),
}
MAX_TOKENS = max(len(name) for name in NAMES) + 4


def held_out(guests: tuple[str, ...]) -> bool:
    return hashlib.sha256(",".join(guests).encode()).digest()[0] % 10 == 0


def make_parties(count: int, *, seed: int, evaluation: bool) -> list[tuple[list[str], str]]:
    """``count`` distinct parties on the chosen side of the split: (user messages, answer)."""
    rng = random.Random(f"guest_arrivals:{seed}")
    found: dict[tuple[str, ...], tuple[list[str], str]] = {}
    while len(found) < count:
        guests = tuple(rng.sample(NAMES, rng.randint(2, 4)))
        which = rng.choice(tuple(QUESTIONS))
        key = (*guests, which)
        if key in found or held_out(guests) != evaluation:
            continue
        messages = [rng.choice(OPENINGS).format(name=guests[0])]
        messages += [rng.choice(ARRIVALS).format(name=name) for name in guests[1:]]
        messages.append(rng.choice(QUESTIONS[which]))
        found[key] = (messages, guests[0] if which == "first" else guests[-1])
    return list(found.values())


def normalise(text: str) -> str:
    return " ".join(text.split()).removesuffix(".").lower()


class Conversation:
    def __init__(self, messages: list[str], answer: str) -> None:
        self.pending = list(messages[1:])
        self.answer = answer
        self.correct = False

    def reply(self, text: str) -> TurnOutcome:
        if self.pending:
            return TurnOutcome(reward=0.0, next_message=self.pending.pop(0))
        self.correct = normalise(text) == normalise(self.answer)
        return TurnOutcome(reward=1.0 if self.correct else 0.0, next_message=None)


class GuestArrivalsEnv(BaseEnv):
    """Name the first or the latest guest announced over earlier turns (multi-turn)."""

    name = "guest_arrivals"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=448, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_parties = make_parties(5000, seed=self.config.seed, evaluation=False)
        self.eval_parties = make_parties(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_parties)

    async def play(self, party: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        messages, answer = party
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
        return episode, conversation.correct

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if correct else 0.0 for _, correct in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await gather_bounded((self.play(party, 0.0) for party in self.eval_parties), self.config.max_eval_workers)
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
    GuestArrivalsEnv.cli()
