"""Write a number in Roman numerals, as for an engraving, a banner or a chapter heading (string map).

"We're having our wedding year engraved on a ring. How do I write 2014 in Roman numerals?" ->
"MMXIV". Numbers run from 1 to 3999 under several phrasings (plain questions, years, chapters,
a Super Bowl, a club's anniversary); a tenth of the numbers, chosen by a SHA-256 hash, are held
out (under all phrasings) for evaluation, so the policy must apply the rule, not memorise
numbers. The answer is compared with the standard subtractive form (IV, IX, XL, XC, CD, CM),
ignoring case and surrounding spaces (in a longer reply, its last capitalised numeral of two
or more letters is read): an exact answer scores 1.0, any other the share of its
characters that match the target position by position (divided by the longer of the two), so
the local policy, which must write letters the prompt does not hold, can learn from partial
answers.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NUMERALS = (
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
)
# (template, lowest number, highest number): each phrasing asks only about numbers it fits
TEMPLATES = (
    ("We're having our wedding year engraved on a ring. How do I write {n} in Roman numerals?", 1950, 2030),
    ("I want the year {n} on a plaque in Roman numerals. What would that be?", 1000, 2100),
    ("How do you write {n} in Roman numerals?", 1, 3999),
    ("What's {n} in Roman numerals?", 1, 3999),
    ("My essay has {n} chapters and I'm numbering them the old-fashioned way. What's the last chapter number in Roman numerals?", 2, 60),
    ("Quick one: the number {n} written as a Roman numeral?", 1, 3999),
    ("The club is celebrating its {nth} anniversary and wants it in Roman numerals on the banner. How is it written?", 5, 200),
    ("Super Bowl {n} is coming up. How would they write that number in Roman numerals?", 1, 70),
)


def to_roman(number: int) -> str:
    out = []
    for value, letters in NUMERALS:
        count, number = divmod(number, value)
        out.append(letters * count)
    return "".join(out)


def ordinal(number: int) -> str:
    if 10 <= number % 100 <= 20:
        return f"{number}th"
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def held_out(number: int) -> bool:
    return hashlib.sha256(f"roman_numeral:{number}".encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[int, str, str]]:
    """(number, prompt, numeral) for every number and every phrasing that fits it."""
    items = []
    for template, low, high in TEMPLATES:
        for number in range(low, high + 1):
            items.append((number, template.format(n=number, nth=ordinal(number)), to_roman(number)))
    return items


def numeral_in(answer: str) -> str:
    """The numeral the answer gives: the whole answer if it is one, else its last capitalised
    numeral word (so "It's MMXIV." reads as MMXIV), else the whole answer."""
    text = answer.strip().rstrip(".!").upper()
    if re.fullmatch(r"[IVXLCDM]+", text):
        return text
    words = re.findall(r"\b[IVXLCDM]{2,}\b", answer)
    return words[-1] if words else text


def score(answer: str, target: str) -> float:
    """1.0 for the exact numeral, else the share of characters in place."""
    text = numeral_in(answer)
    if text == target:
        return 1.0
    if not text:
        return 0.0
    same = sum(a == b for a, b in zip(text, target))
    return same / max(len(text), len(target))


class RomanNumeralEnv(BaseEnv):
    """Write a number in Roman numerals (single turn, string map)."""

    name = "roman_numeral"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        eval_items = [i for i in items if held_out(i[0])]
        # one phrasing per held-out number keeps the evaluation short and spread over the range
        picker = random.Random(f"roman_numeral:eval:{self.config.seed}")
        by_number: dict[int, list[tuple[int, str, str]]] = {}
        for item in eval_items:
            by_number.setdefault(item[0], []).append(item)
        self.eval_items = [picker.choice(by_number[n]) for n in sorted(by_number)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=20)
        scores = [score(c.text, item[2]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=20, temperature=0.0)
            return score(group.completions[0].text, item[2])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores),
            "eval/mean_score": sum(scores) / len(scores),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    RomanNumeralEnv.cli()
