"""Write a 12-hour clock time in 24-hour format (string map).

"The train leaves at 7:15 pm. What's that in 24-hour time?" -> "19:15". Times are every minute
of the day, written as "7:15 pm", "7:15pm", "7:15 p.m.", "7:15 PM" or, on the hour, "7 pm";
prompts come in several phrasings. A tenth of the times, chosen by a SHA-256 hash of the time,
are held out (under every phrasing) for evaluation, so the policy must learn the rule, not the
answers. The answer is "HH:MM" ("7:05" for "07:05" is accepted too); a time found inside a longer
reply is taken as the answer. Training scores the share of characters in the right place (1.0
for an exact answer); evaluation counts exact answers.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

SUFFIXES = (("am", "pm", " "), ("am", "pm", ""), ("a.m.", "p.m.", " "), ("AM", "PM", " "))
TEMPLATES = (
    "The train leaves at {t}. What's that in 24-hour time?",
    "Can you write {t} in 24-hour format for me? Just the time please.",
    "My flight lands at {t} local time. How would that look on a 24-hour clock?",
    "The booking form wants the time in 24h format and pickup is at {t}. What do I type?",
    "quick q: {t} in 24 hour time?",
    "Our meeting invite says {t}. My calendar uses the 24-hour clock, what should I enter?",
)
TIME_IN_REPLY = re.compile(r"\b(\d{1,2})[:.](\d{2})\b")


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def twelve_hour(hour: int, minute: int, style: tuple[str, str, str], on_the_hour_short: bool) -> str:
    am, pm, space = style
    suffix = am if hour < 12 else pm
    h12 = hour % 12 or 12
    clock = f"{h12}" if (minute == 0 and on_the_hour_short) else f"{h12}:{minute:02d}"
    return f"{clock}{space}{suffix}"


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(time key, prompt, answer) items whose time is (evaluation) or is not held out."""
    rng = random.Random(f"clock_24h:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    attempts = 0
    while len(found) < count and attempts < 200 * count:
        attempts += 1
        hour, minute = rng.randrange(24), rng.choice((rng.randrange(60), rng.randrange(0, 60, 5), 0))
        answer = f"{hour:02d}:{minute:02d}"
        if held_out(answer) != evaluation:
            continue
        shown = twelve_hour(hour, minute, rng.choice(SUFFIXES), rng.random() < 0.5)
        prompt = rng.choice(TEMPLATES).format(t=shown)
        found.setdefault(prompt, (answer, prompt, answer))
    return list(found.values())


def normalise(text: str) -> str:
    match = TIME_IN_REPLY.search(text)
    if match:
        return f"{match.group(1)}:{match.group(2)}"
    return text.strip().rstrip(".").strip()


def accepted(answer: str) -> list[str]:
    forms = [answer]
    if answer.startswith("0"):
        forms.append(answer[1:])
    return forms


def char_share(got: str, want: str) -> float:
    return sum(a == b for a, b in zip(got, want)) / max(len(got), len(want), 1)


def score(text: str, answer: str) -> float:
    got = normalise(text)
    return max(char_share(got, form) for form in accepted(answer))


class Clock24hEnv(BaseEnv):
    """Convert a 12-hour clock time to the 24-hour clock (string map)."""

    name = "clock_24h"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [score(c.text, item[2]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0)
            return score(group.completions[0].text, item[2])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    Clock24hEnv.cli()
