"""Work out a call time across time zones from an offset given a turn earlier (multi-turn).

The user first says, e.g., "My sister just moved abroad and she's now 3 hours behind me. Just
say OK for now." and, whatever the reply, asks "She wants to video call at 4 pm her time. What
time will that be for me? (just the time, e.g. 11 am or 2:30 pm)" -> "7 pm". Offsets are 1 to 9
whole hours ahead or behind; the time asked about runs from 7 am to 10:30 pm on the hour or half
hour, and the question goes either from their time to mine or from mine to theirs. A tenth of
the (offset, direction, time, way) combinations, chosen by a SHA-256 hash, are held out for
evaluation under one phrasing each; training draws the rest under random phrasings. The second
reply is read as a time (7 pm, 7:00 p.m., 19:00, noon, midnight): the right time scores 1.0;
anything else scores half the share of its characters that match the target written as
"7 pm" position by position, so a nearly right answer earns a little. The first reply earns 0.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

PEOPLE = (
    ("sister", "she", "her"), ("brother", "he", "his"), ("business partner", "she", "her"),
    ("old roommate", "he", "his"), ("boss", "he", "his"), ("cousin", "she", "her"), ("best friend", "she", "her"),
)
# {who}: the person, {p}: he/she, {n}: "3 hours", {rel}: ahead of / behind, {word}: later / earlier
OPENINGS = (
    "My {who} just moved abroad and {p}'s now {n} {rel} me. Just say OK for now.",
    "Heads up for later: my {who} is {n} {rel} me. Reply OK.",
    "Where my {who} lives it's {n} {word} than here. Just say OK, I'll have a question in a sec.",
)
# (question, asks for my time given theirs)
QUESTIONS = (
    ("{P} wants to video call at {t} {pp} time. What time will that be for me?", True),
    ("If I want to ring {o} at {t} {pp} time, what time should I call from here?", True),
    ("If I call {o} at {t} my time, what time will it be for {o}?", False),
    ("I'm free at {t} here. What time is that where {p} is?", False),
)
FORMAT = " (just the time, e.g. 11 am or 2:30 pm)"
TIMES = tuple(range(7 * 60, 23 * 60, 30))  # 7:00 to 22:30, minutes after midnight


def clock(minutes: int) -> str:
    hour, minute = divmod(minutes % (24 * 60), 60)
    suffix = "am" if hour < 12 else "pm"
    hour = hour % 12 or 12
    return f"{hour} {suffix}" if minute == 0 else f"{hour}:{minute:02d} {suffix}"


def read_time(text: str) -> int | None:
    """Minutes after midnight of the first time written in ``text``, or None."""
    lowered = text.lower()
    match = re.search(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s*m\b\.?", lowered)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        if not 1 <= hour <= 12 or minute >= 60:
            return None
        return (hour % 12 + (12 if match.group(3) == "p" else 0)) * 60 + minute
    if re.search(r"\bnoon\b|\bmidday\b", lowered):
        return 12 * 60
    if re.search(r"\bmidnight\b", lowered):
        return 0
    match = re.search(r"\b(\d{1,2}):(\d{2})\b", lowered)
    if match and int(match.group(1)) < 24 and int(match.group(2)) < 60:
        return int(match.group(1)) * 60 + int(match.group(2))
    return None


def score(answer: str, target: int) -> float:
    if read_time(answer) == target:
        return 1.0
    text, wanted = answer.strip().lower(), clock(target)
    if not text:
        return 0.0
    same = sum(a == b for a, b in zip(text, wanted))
    return 0.5 * same / max(len(text), len(wanted))


def held_out(key: tuple[int, bool, int, bool]) -> bool:
    return hashlib.sha256(f"time_difference:{key}".encode()).digest()[0] % 10 == 0


def all_keys() -> list[tuple[int, bool, int, bool]]:
    """(offset in hours, they are ahead, the time asked about, asks for my time) combinations."""
    return [(n, ahead, t, to_mine) for n in range(1, 10) for ahead in (True, False) for t in TIMES for to_mine in (True, False)]


def phrase(key: tuple[int, bool, int, bool], rng: random.Random) -> tuple[str, str, int]:
    """(first message, second message, the answer in minutes after midnight) for ``key``."""
    hours, ahead, asked, to_mine = key
    who, p, pp = rng.choice(PEOPLE)
    opening = rng.choice(OPENINGS).format(
        who=who, p=p, n=f"{hours} hour" + ("" if hours == 1 else "s"),
        rel="ahead of" if ahead else "behind", word="later" if ahead else "earlier",
    )
    question = rng.choice([q for q, mine in QUESTIONS if mine == to_mine])
    second = question.format(P=p.capitalize(), p=p, pp=pp, o="him" if p == "he" else "her", t=clock(asked)) + FORMAT
    shift = hours * 60 if ahead else -hours * 60  # their clock minus mine
    target = (asked - shift if to_mine else asked + shift) % (24 * 60)
    return opening, second, target


class Conversation:
    def __init__(self, second: str, target: int) -> None:
        self.second = second
        self.target = target
        self.asked = False
        self.right = False

    def reply(self, text: str) -> TurnOutcome:
        if not self.asked:
            self.asked = True
            return TurnOutcome(reward=0.0, next_message=self.second)
        reward = score(text, self.target)
        self.right = reward == 1.0
        return TurnOutcome(reward=reward, next_message=None)


class TimeDifferenceEnv(BaseEnv):
    """Convert a call time using a time difference stated in the first turn (multi-turn)."""

    name = "time_difference"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.right: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=250, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        keys = all_keys()
        self.train_keys = [k for k in keys if not held_out(k)]
        picker = random.Random(f"time_difference:eval:{self.config.seed}")
        self.eval_items = [phrase(k, picker) for k in keys if held_out(k)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> tuple[str, str, int]:
        return phrase(self.rng.choice(self.train_keys), self.rng)

    async def play(self, item: tuple[str, str, int], temperature: float | None = None) -> tuple[Episode, bool]:
        opening, second, target = item
        conversation = Conversation(second, target)
        episode = await run_episode(
            self.policy,
            opening,
            conversation.reply,
            max_turns=2,
            discount_factor=1.0,
            max_tokens=12,
            temperature=temperature,
        )
        return episode, conversation.right

    async def collect_trajectories(self, item: tuple[str, str, int]) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.right.extend(1.0 if right else 0.0 for _, right in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item, 0.0) for item in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(right for _, right in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.right:
            metrics["train/percent_correct"] = sum(self.right) / len(self.right)
            self.right = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    TimeDifferenceEnv.cli()
