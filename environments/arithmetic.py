"""Small arithmetic: "7-9" -> "-2".

Items are the 200 problems ``a op b`` with a, b in 0..9 and op in {+, -}. A fixed 20% of them,
the 40 with the smallest CRC-32, are held out for evaluation and never trained on. CRC-32 is
affine over GF(2), so those 40 are not a random sample: they are "+3", "+7", "-2" and "-6" with
every first digit, and no training problem ends in any of them.

Answers are constrained (``guided_choice``) to the integers of at most two digits, so every
completion is a number and the policy learns arithmetic, not the answer format. A completion
scores 1.0 for the exact integer. A wrong integer scores 0.1, plus 0.2 when it has as many
characters as the answer, plus 0.3 times the share of the answer's characters it has in place.
That partial credit is what lets two-character answers ("-2", "13") be found. Sampled from
scratch, a right two-character answer is rare, and by the time one turns up the policy has
settled on one-character answers. With credit for the right length and for each right
character, the first and second characters are learned in turn. Closeness in value is not
rewarded: credit for "off by one" made a neighbouring answer a trap the policy settled in.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

OPERATORS = ("+", "-")
EVAL_SHARE = 0.2
EVAL_TEMPERATURE = 0.0  # evaluation measures the greedy policy
ANSWER_CHOICES = [str(n) for n in range(-99, 100)]  # every integer of at most two digits
MAX_ANSWER_TOKENS = 4  # "-99" plus the end token
INTEGER = re.compile(r"[+-]?\d+")

Problem = tuple[int, str, int]


class ArithmeticConfig(BaseEnvConfig):
    exploration_rate: float = Field(
        0.1, ge=0, le=1, description="Share of uniformly sampled items; 1 = plain uniform sampling."
    )


def problem_text(problem: Problem) -> str:
    a, op, b = problem
    return f"{a}{op}{b}"


def solve(problem: Problem) -> int:
    a, op, b = problem
    return a + b if op == "+" else a - b


def all_problems() -> list[Problem]:
    return [(a, op, b) for a in range(10) for op in OPERATORS for b in range(10)]


def split_problems() -> tuple[list[Problem], list[Problem]]:
    """(train, eval): the eval split is the same fixed 40 problems everywhere."""
    ranked = sorted(all_problems(), key=lambda p: (zlib.crc32(problem_text(p).encode()), problem_text(p)))
    held = set(ranked[: round(len(ranked) * EVAL_SHARE)])
    train = [p for p in all_problems() if p not in held]
    evaluation = [p for p in all_problems() if p in held]
    return train, evaluation


def score_answer(answer: str, expected: int) -> float:
    """1.0 exact; another integer 0.1 + 0.2 for the right length + 0.3 x the share of the
    answer's characters in place; anything else 0."""
    answer = answer.strip()
    if not INTEGER.fullmatch(answer):
        return 0.0
    if int(answer) == expected:
        return 1.0
    want = str(expected)
    in_place = sum(1 for got, right in zip(answer, want) if got == right)
    return 0.1 + (0.2 if len(answer) == len(want) else 0.0) + 0.3 * in_place / len(want)


class ArithmeticEnv(BaseEnv):
    """Add or subtract two digits; answer the integer (single turn)."""

    name = "arithmetic"
    env_config_cls = ArithmeticConfig
    # A slower learning rate and an entropy bonus keep the policy from settling on a wrong
    # answer for an item before the right one has been sampled.
    trainer_defaults = {"learning_rate": 1e-3, "entropy_coef": 0.03}

    def __init__(self, config: ArithmeticConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.config: ArithmeticConfig = config
        self.train_items, self.eval_items = split_problems()
        self.correct_buffer: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[ArithmeticConfig, list[APIServerConfig]]:
        config = ArithmeticConfig(
            group_size=8,
            batch_size=64,
            total_steps=250,
            steps_per_eval=25,
            max_token_length=32,
            max_batches_offpolicy=2,
            use_wandb=True,
            wandb_name="arithmetic",
        )
        return config, [APIServerConfig(model_name="hermes-rl-local", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        from hermes_rl_mcp.sdk.sampler import ItemSampler

        self.sampler = ItemSampler(
            len(self.train_items),
            group_size=self.config.group_size,
            exploration_rate=self.config.exploration_rate,
            seed=self.config.seed,
        )

    async def get_next_item(self) -> tuple[int, Problem]:
        index = self.sampler.next_index()
        return index, self.train_items[index]

    @staticmethod
    def prompt(problem: Problem) -> list[dict[str, str]]:
        return [{"role": "user", "content": problem_text(problem)}]

    async def collect_trajectories(self, item: tuple[int, Problem]) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        index, problem = item
        messages = self.prompt(problem)
        group = await self.policy.chat(
            messages, n=self.config.group_size, max_tokens=MAX_ANSWER_TOKENS, guided_choice=ANSWER_CHOICES
        )
        expected = solve(problem)
        scores = [score_answer(c.text, expected) for c in group.completions]
        self.sampler.observe(index, scores)
        self.correct_buffer.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores, messages if self.config.include_messages else None), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(problem: Problem) -> float:
            group = await self.policy.chat(
                self.prompt(problem),
                n=1,
                max_tokens=MAX_ANSWER_TOKENS,
                temperature=EVAL_TEMPERATURE,
                guided_choice=ANSWER_CHOICES,
            )
            return score_answer(group.completions[0].text, solve(problem))

        scores = await gather_bounded((one(p) for p in self.eval_items), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(1.0 for s in scores if s == 1.0) / len(scores),
            "eval/mean_score": sum(scores) / len(scores),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct_buffer:
            metrics["train/percent_correct"] = sum(self.correct_buffer) / len(self.correct_buffer)
            self.correct_buffer = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    ArithmeticEnv.cli()
