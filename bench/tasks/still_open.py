"""Say which of a few places is open at a given time (selection).

"It's 3pm. The bakery is open 7am to 1pm, the library 10am to 6pm, and the pool 4pm to
10pm. Which one can I go to right now?" -> "library".
Each case lists three or four places (bakery, pharmacy, bank, library, ...) with whole-hour
opening hours between 6am and 10pm, and a time between 8am and 5pm, on the hour or the half
hour, at which exactly one of them is open (a place is open from its opening time up to, not
including, its closing time); each other place has either closed already or not opened yet.
The answer is that place's name as listed, without "the". A tenth of the cases, chosen by a
SHA-256 hash, are held out for evaluation, so the policy must compare times, not memorise
cases. A completion scores 1.0 for the open place and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

PLACES = (
    "bakery", "pharmacy", "bank", "library", "post office", "gym", "florist",
    "barber", "butcher", "museum", "cafe", "bookshop", "pool", "market",
)
LAST_OPENING = 16  # 4pm
LAST_CLOSING = 22  # 10pm
TEMPLATES = (
    "It's {time}. {hours} Which one can I go to right now?",
    "I have an errand to run at {time}. {hours} Which place will be open then?",
    "Quick question: {hours_lower} If I head out at {time}, which of them is open?",
)


def clock(minutes: int) -> str:
    """12-hour clock time: 420 -> "7am", 930 -> "3:30pm", 720 -> "12pm"."""
    hour, minute = divmod(minutes, 60)
    suffix = "am" if hour < 12 else "pm"
    hour = hour % 12 or 12
    return f"{hour}{suffix}" if minute == 0 else f"{hour}:{minute:02d}{suffix}"


def describe(hours: list[tuple[str, int, int]]) -> str:
    """'the bakery is open 7am to 1pm, the bank 9am to 2pm, and the gym 6am to 10pm.'"""
    parts = [f"the {place} is open {clock(o)} to {clock(c)}" if i == 0 else f"the {place} {clock(o)} to {clock(c)}"
             for i, (place, o, c) in enumerate(hours)]
    return ", ".join(parts[:-1]) + ", and " + parts[-1] + "."


def held_out(case: str) -> bool:
    return hashlib.sha256(case.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(case, prompt, open place) for ``count`` distinct cases on one side of the hold-out split.

    The time is drawn first, then the one place open at it, then each other place either closed
    already or not open yet (whichever the time allows, half and half when both do), so neither
    "the place closing last" nor "the place opening first" is a reliable shortcut.
    """
    rng = random.Random(f"still_open:{seed}:{evaluation}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        now = rng.randint(8 * 2, 17 * 2) * 30
        hour = now // 60
        opens = rng.randint(6, min(LAST_OPENING, hour))
        closes = rng.randint(max(opens + 3, hour + 1), LAST_CLOSING)
        places = rng.sample(PLACES, rng.randint(3, 4))
        hours = [(places[0], opens * 60, closes * 60)]
        for place in places[1:]:
            kinds = (["closed"] if hour >= 9 else []) + (["later"] if hour < LAST_OPENING else [])
            if rng.choice(kinds) == "closed":
                closes = rng.randint(9, hour)
                opens = rng.randint(6, closes - 3)
            else:
                opens = rng.randint(hour + 1, LAST_OPENING)
                closes = rng.randint(opens + 3, LAST_CLOSING)
            hours.append((place, opens * 60, closes * 60))
        rng.shuffle(hours)
        open_now = [place for place, o, c in hours if o <= now < c]
        if len(open_now) != 1:
            continue
        case = f"{clock(now)}|" + ";".join(f"{p} {clock(o)}-{clock(c)}" for p, o, c in hours)
        if case in found or held_out(case) != evaluation:
            continue
        listed = describe(hours)
        prompt = rng.choice(TEMPLATES).format(time=clock(now), hours=listed[0].upper() + listed[1:], hours_lower=listed)
        found[case] = (case, prompt, open_now[0])
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class StillOpenEnv(BaseEnv):
    """Pick the one place that is open at the given time (single turn)."""

    name = "still_open"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=14)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=14, temperature=0.0)
            return exact(group.completions[0].text, item[2])

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
    StillOpenEnv.cli()
