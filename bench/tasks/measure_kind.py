"""Say what a quantity measures, answering through guided_choice (classification).

"The label says 250 ml. Is that a length, a weight, a volume, a temperature, a time or a
speed?" -> "volume". Quantities are a number with a unit, written the ways people write them
(abbreviated or in full, metric, imperial and kitchen units): 12 fl oz is a volume but 12 oz a
weight, 5 m a length but 5 m/s a speed and 5 ms a time. Every unit goes with the numbers it is
usually written with (small ones for tbsp, large ones for ml) under three phrasings; a tenth of
the quantities, chosen by a SHA-256 hash, are held out (under all phrasings) for evaluation, so
the policy must go by the unit, not memorise quantities.
Training draws the six labels equally often. Answers are constrained to the six labels, so every
reply is a label and a group of them differs often enough for an all-or-nothing score: a
completion scores 1.0 for the right label and 0 otherwise, in training and evaluation alike.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["length", "weight", "volume", "temperature", "time", "speed"]

SMALL = ("0.5", "1", "1.5", "2", "2.5", "3", "4", "5", "6", "8", "10", "12", "15", "20")
LARGE = ("15", "18", "20", "24", "25", "30", "35", "40", "45", "50", "60", "75", "90", "100", "120", "150", "180",
         "200", "250", "300", "500", "750")
ANY = tuple(dict.fromkeys(SMALL + LARGE))

# label -> (singular, plural, numbers it is written with); a unit starting with "°" follows the number directly
UNITS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "length": (("mm", "mm", ANY), ("cm", "cm", ANY), ("m", "m", ANY), ("km", "km", ANY), ("inch", "inches", SMALL),
               ("foot", "feet", SMALL), ("ft", "ft", ANY), ("yard", "yards", ANY), ("mile", "miles", ANY),
               ("metre", "metres", ANY)),
    "weight": (("g", "g", ANY), ("kg", "kg", ANY), ("mg", "mg", LARGE), ("lb", "lb", ANY), ("oz", "oz", SMALL),
               ("gram", "grams", LARGE), ("kilo", "kilos", SMALL), ("stone", "stone", SMALL), ("tonne", "tonnes", SMALL)),
    "volume": (("ml", "ml", LARGE), ("L", "L", SMALL), ("litre", "litres", SMALL), ("fl oz", "fl oz", SMALL),
               ("cup", "cups", SMALL), ("pint", "pints", SMALL), ("gallon", "gallons", SMALL), ("cl", "cl", LARGE),
               ("teaspoon", "teaspoons", SMALL), ("tbsp", "tbsp", SMALL), ("tsp", "tsp", SMALL)),
    "temperature": (("°C", "°C", ANY), ("°F", "°F", ANY), ("degree Celsius", "degrees Celsius", ANY),
                    ("degree Fahrenheit", "degrees Fahrenheit", ANY)),
    "time": (("second", "seconds", ANY), ("sec", "sec", ANY), ("minute", "minutes", ANY), ("min", "min", ANY),
             ("hour", "hours", ANY), ("hr", "hrs", SMALL), ("day", "days", ANY), ("week", "weeks", SMALL),
             ("ms", "ms", LARGE), ("month", "months", SMALL), ("year", "years", SMALL)),
    "speed": (("km/h", "km/h", ANY), ("mph", "mph", ANY), ("m/s", "m/s", SMALL), ("knot", "knots", ANY),
              ("kph", "kph", ANY), ("ft/s", "ft/s", SMALL), ("mile per hour", "miles per hour", ANY),
              ("kilometre per hour", "kilometres per hour", ANY)),
}
PHRASINGS = (
    "What does {q} measure: length, weight, volume, temperature, time or speed?",
    "The label says {q}. Is that a length, a weight, a volume, a temperature, a time or a speed?",
    'My notes just say "{q}". What kind of measurement is that?',
)


def quantity(number: str, unit: tuple[str, str, tuple[str, ...]]) -> str:
    word = unit[0] if number == "1" else unit[1]
    return f"{number}{word}" if word.startswith("°") else f"{number} {word}"


def held_out(q: str) -> bool:
    return hashlib.sha256(q.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(quantity, prompt, label) for every quantity and phrasing."""
    items = []
    for label, units in UNITS.items():
        for unit in units:
            for number in unit[2]:
                q = quantity(number, unit)
                for phrasing in PHRASINGS:
                    items.append((q, phrasing.format(q=q), label))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class MeasureKindConfig(BaseEnvConfig):
    eval_size: int = Field(240, gt=0, description="Held-out prompts evaluated, the same number per label.")


class MeasureKindEnv(BaseEnv):
    """Say whether a quantity is a length, weight, volume, temperature, time or speed (guided_choice)."""

    name = "measure_kind"
    env_config_cls = MeasureKindConfig

    def __init__(self, config: MeasureKindConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[MeasureKindConfig, list[APIServerConfig]]:
        config = MeasureKindConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_by_label = {label: [i for i in items if i[2] == label and not held_out(i[0])] for label in LABELS}
        pick = random.Random(f"measure_kind:eval:{self.config.seed}")
        per_label = max(1, self.config.eval_size // len(LABELS))
        self.eval_items = []
        for label in LABELS:
            held = [i for i in items if i[2] == label and held_out(i[0])]
            self.eval_items.extend(pick.sample(held, min(per_label, len(held))))
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_by_label[self.rng.choice(LABELS)])

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, guided_choice=LABELS, temperature=0.0)
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
    MeasureKindEnv.cli()
