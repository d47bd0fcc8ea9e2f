"""Count how many quiz answers match the answer key (counting).

"I just marked my practice quiz. The answer key is A, C, B, D, A and my answers were A, B, B, D,
C. How many did I get right?" -> "3". Quizzes have 5 to 10 multiple-choice questions (A to D);
the answers are written as a list, as one run of letters, or numbered (1A 2C ...), and the user
asks for the number right or the number wrong. Items come from a seeded random; a tenth of the
possible quizzes, chosen by a SHA-256 hash, are held out for evaluation. The first whole number
in the answer (digits, a word from zero to ten, or "none") is read: the right count scores 1.0, one off
scores 0.3, anything else 0.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CHOICES = "ABCD"
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
# (template, whether it asks for the number wrong rather than right)
TEMPLATES = (
    ("I just marked my practice quiz. The answer key is {key} and my answers were {mine}. How many did I get right?", False),
    ("Answer key: {key}. My son's answers: {mine}. How many questions did he get right?", False),
    ("Can you check my mock theory test? Correct answers: {key}. Mine: {mine}. How many did I get wrong?", True),
    ("My answers on the pub quiz multiple-choice round were {mine}, and the quizmaster just read out {key}. How many did we get?", False),
    ("Here's the key for the chapter test: {key}. Emma put {mine}. How many did she miss?", True),
    ("I'm grading worksheets. Key: {key}. This student wrote {mine}. How many are correct?", False),
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def write(letters: list[str], style: str) -> str:
    if style == "list":
        return ", ".join(letters)
    if style == "run":
        return "".join(letters)
    return " ".join(f"{i}{c}" for i, c in enumerate(letters, 1))


def make_item(rng: random.Random) -> tuple[str, str, int]:
    """(key, prompt, count) for one random quiz."""
    size = rng.randint(5, 10)
    key = [rng.choice(CHOICES) for _ in range(size)]
    skill = rng.uniform(0.2, 0.95)
    mine = [k if rng.random() < skill else rng.choice([c for c in CHOICES if c != k]) for k in key]
    template, counts_wrong = rng.choice(TEMPLATES)
    style = rng.choice(("list", "run", "numbered"))
    prompt = template.format(key=write(key, style), mine=write(mine, style))
    right = sum(k == m for k, m in zip(key, mine))
    count = size - right if counts_wrong else right
    return f"{counts_wrong}|{''.join(key)}|{''.join(mine)}", prompt, count


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, int]]:
    rng = random.Random(f"quiz_score:{seed}")
    found: dict[str, tuple[str, str, int]] = {}
    while len(found) < count:
        item = make_item(rng)
        if held_out(item[0]) == evaluation:
            found.setdefault(item[0], item)
    return list(found.values())


def read_number(text: str) -> int | None:
    match = re.search(r"\d+|\b(?:none|" + "|".join(NUMBER_WORDS) + r")\b", text.lower())
    if match is None:
        return None
    word = match.group(0)
    if word == "none":
        return 0
    return int(word) if word.isdigit() else NUMBER_WORDS.index(word)


def score(answer: str, target: int) -> float:
    number = read_number(answer)
    if number is None:
        return 0.0
    if number == target:
        return 1.0
    return 0.3 if abs(number - target) == 1 else 0.0


class QuizScoreEnv(BaseEnv):
    """Count the quiz answers that match the key (single turn, counting)."""

    name = "quiz_score"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(5000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=8)
        scores = [score(c.text, item[2]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=8, temperature=0.0)
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
    QuizScoreEnv.cli()
