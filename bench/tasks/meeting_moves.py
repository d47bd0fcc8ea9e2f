"""Keep track of an appointment's day while it is moved about (multi-turn).

The user books something for a day ("Please put the team meeting in the diary for Tuesday.
Reply with just the day.") and the policy replies with the day. Then, two or three times, the
user moves it ("Let's push it back two days. What day is that?", "Sorry, can we move it one day
earlier? Which day is it on now?") and the policy must reply with the new day, counting across
the weekend (two days after Saturday is Monday). Moves are one to three days either way, so a
conversation is its first day and its moves: 1,764 of them, under varied events and phrasings.
Those whose first day and moves hash (SHA-256) into one tenth are held out for evaluation, so
the policy must learn to count days, not recall conversations. An episode is correct when every
reply is exactly the right day; evaluation (greedy) counts correct episodes. Training scores an
episode by the mean over its turns of 1.0 for the right day, else 0.9 times the share of
characters right in place, so a day spelt partly right earns something where an all-or-nothing
score would give a whole group nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.concurrency import gather_bounded
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MOVES = (-3, -2, -1, 1, 2, 3)
SPAN = {1: "one day", 2: "two days", 3: "three days"}
EVENTS = (
    "the team meeting", "my dentist appointment", "the plumber's visit", "Mia's piano lesson", "the call with the bank",
    "dinner with Sam", "the car service", "my haircut", "the book club", "the boiler check",
)
OPENINGS = (
    "Please put {event} in the diary for {day}. Reply with just the day.",
    "Can you book {event} for {day}? Just tell me the day.",
    "Add {event} to my calendar on {day}, please. Which day did you put it on?",
)
LATER = (
    "Actually, can we move it {span} later? Which day is it on now?",
    "Let's push it back {span}. What day is that?",
    "Could you move it {span} later, please? What's the new day?",
)
EARLIER = (
    "Sorry, can we move it {span} earlier? Which day is it on now?",
    "Let's bring it forward {span}. What day is that?",
    "Could you move it {span} earlier, please? What's the new day?",
)
MAX_TOKENS = max(len(d) for d in DAYS) + 3


def key_of(start: str, moves: tuple[int, ...]) -> str:
    return start + "|" + "|".join(f"{m:+d}" for m in moves)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def all_plans() -> list[tuple[str, tuple[int, ...]]]:
    """Every (first day, moves) with two or three moves."""
    return [(day, moves) for day in DAYS for n in (2, 3) for moves in itertools.product(MOVES, repeat=n)]


@dataclass(frozen=True)
class Script:
    """One conversation: what the user says each turn and the day each reply must name."""

    key: str
    messages: tuple[str, ...]
    answers: tuple[str, ...]


def make_script(start: str, moves: tuple[int, ...], rng: random.Random) -> Script:
    messages = [rng.choice(OPENINGS).format(event=rng.choice(EVENTS), day=start)]
    answers = [start]
    index = DAYS.index(start)
    for move in moves:
        templates = LATER if move > 0 else EARLIER
        messages.append(rng.choice(templates).format(span=SPAN[abs(move)]))
        index = (index + move) % len(DAYS)
        answers.append(DAYS[index])
    return Script(key_of(start, moves), tuple(messages), tuple(answers))


def normalise(answer: str) -> str:
    return answer.strip().rstrip(".!").strip()


def turn_score(answer: str, target: str) -> float:
    """1.0 when exact, else 0.9 times the share of characters right in place."""
    answer = normalise(answer)
    if answer == target:
        return 1.0
    right = sum(a == b for a, b in zip(answer, target))
    return 0.9 * right / max(len(answer), len(target))


class Conversation:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.turn = 0
        self.scores: list[float] = []

    def reply(self, text: str) -> TurnOutcome:
        score = turn_score(text, self.script.answers[self.turn])
        self.scores.append(score)
        self.turn += 1
        done = self.turn == len(self.script.answers)
        return TurnOutcome(reward=score, next_message=None if done else self.script.messages[self.turn])

    @property
    def correct(self) -> bool:
        return len(self.scores) == len(self.script.answers) and all(s == 1.0 for s in self.scores)

    @property
    def score(self) -> float:
        return sum(self.scores) / len(self.script.answers)


class MeetingMovesConfig(BaseEnvConfig):
    eval_size: int = Field(200, gt=0, description="Held-out conversations evaluated (at most one per held-out plan).")


class MeetingMovesEnv(BaseEnv):
    """Name an appointment's day after each move (multi-turn)."""

    name = "meeting_moves"
    env_config_cls = MeetingMovesConfig

    def __init__(self, config: MeetingMovesConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[MeetingMovesConfig, list[APIServerConfig]]:
        config = MeetingMovesConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=576, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        plans = all_plans()
        self.train_plans = [p for p in plans if not held_out(key_of(*p))]
        held = [p for p in plans if held_out(key_of(*p))]
        pick = random.Random(f"meeting_moves:eval:{self.config.seed}")
        if len(held) > self.config.eval_size:
            held = pick.sample(held, self.config.eval_size)
        self.eval_scripts = [make_script(start, moves, pick) for start, moves in held]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Script:
        start, moves = self.rng.choice(self.train_plans)
        return make_script(start, moves, self.rng)

    async def play(self, script: Script, temperature: float | None = None) -> tuple[Episode, Conversation]:
        conversation = Conversation(script)
        episode = await run_episode(
            self.policy,
            script.messages[0],
            conversation.reply,
            max_turns=len(script.answers),
            discount_factor=1.0,
            max_tokens=MAX_TOKENS,
            temperature=temperature,
        )
        return episode, conversation

    async def collect_trajectories(self, item: Script) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await gather_bounded((self.play(item) for _ in range(self.config.group_size)), self.config.group_size)
        self.correct.extend(1.0 if conversation.correct else 0.0 for _, conversation in played)
        return episodes_to_group([e for e, _ in played], scores=[c.score for _, c in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await gather_bounded((self.play(s, 0.0) for s in self.eval_scripts), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(c.correct for _, c in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    MeetingMovesEnv.cli()
