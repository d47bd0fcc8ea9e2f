"""Pick the one gym class that fits wholly inside the free time someone has (selection).

"I'm free from 18:00 to 20:00. Which of these classes could I do start to finish? Yoga
17:30-18:30, Spin 18:15-19:00, Pilates 19:30-20:30" -> "Spin".
A class fits when it starts no earlier than the free time begins and ends no later than it ends
(touching either edge counts). Items come from a seeded generator: a free window of one to three
hours between 07:00 and 22:00, one class placed inside it and two or three others that each
start before the window or run past it (all on quarter hours, 30 to 90 minutes long), listed in
timetable order under six phrasings; the reply is the class's name as the prompt writes it. A
tenth of the (window, timetable) contents, chosen by a SHA-256 hash, are held out for
evaluation, so none is trained on. Evaluation is greedy and exact. Training gives partial
credit: the share of characters right position by position against the name, over the longer
of reply and name, so copying a name from the list is rewarded early and the right one fully.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, NamedTuple

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CLASSES = (
    "Yoga", "Spin", "Pilates", "Zumba", "Boxing", "HIIT", "Barre", "Aqua aerobics", "Kettlebells",
    "Tai chi", "Circuits", "Salsa", "Body pump", "Stretch", "Rowing", "Step", "Kickboxing",
    "Core blast", "Bootcamp", "Dance fit", "Power yoga", "Aqua fit",
)
TEMPLATES = (
    "I'm free from {start} to {end}. Which of these classes could I do start to finish? {listing}",
    "Gym timetable for today: {listing}. I can't get there before {start} and have to leave by {end}. Which class fits?",
    "Which class fits between {start} and {end}? {listing}",
    "I've got a gap from {start} until {end}. Options are {listing}. Which one can I do without arriving late or leaving early?",
    "Classes on Saturday:\n{lines}\nI'm around between {start} and {end}. Which one fits completely?",
    "My sister wants to do a class with me but we only have {start} to {end}. The sports centre has:\n{lines}\nWhich one works?",
)
MAX_ANSWER = max(len(c) for c in CLASSES)
MAX_TOKENS = MAX_ANSWER + 4
DURATIONS = (30, 45, 60, 75, 90)


class Example(NamedTuple):
    key: str  # what the held-out split hashes: the window and the timetable
    prompt: str
    answer: str


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def fits(begin: int, finish: int, start: int, end: int) -> bool:
    return start <= begin and finish <= end


def make_example(rng: random.Random) -> Example:
    length = rng.choice((60, 90, 120, 150, 180))
    start = rng.randrange(7 * 60, 22 * 60 - length + 1, 30)
    end = start + length
    names = rng.sample(CLASSES, rng.choice((3, 3, 4)))
    duration = rng.choice([d for d in DURATIONS if d <= length])
    begin = rng.randrange(start, end - duration + 1, 15)
    sessions = [(begin, begin + duration, names[0])]
    for name in names[1:]:
        while True:
            other = rng.choice(DURATIONS)
            other_begin = rng.randrange(max(6 * 60, start - 90), min(23 * 60, end + 45) - other + 1, 15)
            clash = any(s[0] == other_begin for s in sessions)
            if not fits(other_begin, other_begin + other, start, end) and not clash:
                break
        sessions.append((other_begin, other_begin + other, name))
    sessions.sort()
    entries = [f"{name} {clock(b)}-{clock(f)}" for b, f, name in sessions]
    template = rng.choice(TEMPLATES)
    prompt = template.format(
        start=clock(start), end=clock(end), listing=", ".join(entries), lines="\n".join(f"- {e}" for e in entries)
    )
    key = f"{clock(start)}-{clock(end)}|" + ";".join(entries)
    return Example(key, prompt, names[0])


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Example]:
    """``count`` items with distinct contents, all held out (evaluation) or none."""
    rng = random.Random(f"gym_class:{seed}")
    found: dict[str, Example] = {}
    for _ in range(200 * count):
        if len(found) == count:
            break
        example = make_example(rng)
        if held_out(example.key) == evaluation and example.key not in found:
            found[example.key] = example
    else:
        raise RuntimeError(f"could not draw {count} distinct items")
    return list(found.values())


def exact(reply: str, answer: str) -> float:
    return 1.0 if reply.strip() == answer else 0.0


def char_share(reply: str, answer: str) -> float:
    """Characters right position by position, over the longer of reply and answer."""
    reply = reply.strip()
    longest = max(len(reply), len(answer))
    if longest == 0:
        return 1.0
    return sum(a == b for a, b in zip(reply, answer)) / longest


class GymClassConfig(BaseEnvConfig):
    train_items: int = Field(6000, gt=0, le=100_000, description="Distinct training items generated at setup.")
    eval_items: int = Field(200, gt=0, le=10_000, description="Distinct held-out items evaluated.")


class GymClassEnv(BaseEnv):
    """Name the class that fits inside a free window (single turn, selection)."""

    name = "gym_class"
    env_config_cls = GymClassConfig

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []
        self.scores: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = GymClassConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_items, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_items, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Example:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Example) -> list[dict[str, str]]:
        return [{"role": "user", "content": item.prompt}]

    async def collect_trajectories(self, item: Example) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [char_share(c.text, item.answer) for c in group.completions]
        self.correct.extend(exact(c.text, item.answer) for c in group.completions)
        self.scores.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Example) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return exact(group.completions[0].text, item.answer)

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            metrics["train/mean_score"] = sum(self.scores) / len(self.scores)
            self.correct, self.scores = [], []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    GymClassEnv.cli()
