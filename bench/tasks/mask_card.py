"""Mask a card number for a receipt, keeping only its last four digits (string map).

"Mask this card number for the receipt: 4921 3387 1102 5567" -> "**** **** **** 5567". Every
digit but the last four becomes "*", and the spaces or dashes of the number stay where they
are. Numbers are 16 digits in groups of four (spaces, dashes or none) or 15 digits grouped
4-6-5 like an American Express card. A tenth of the numbers, chosen by a SHA-256 hash of their
digits, are held out for evaluation, so the policy must learn the masking, not the numbers. A
reply scores 1.0 when it is exactly the masked number and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

TEMPLATES = (
    "Mask this card number for the receipt, replacing every digit except the last four with *: {card}",
    "Hide all but the last 4 digits of this card number with * and keep the spacing: {card}",
    "Write the card number {card} the way a receipt shows it, with * for each digit except the last four.",
)
# (group lengths, separator)
LAYOUTS = (((4, 4, 4, 4), " "), ((4, 4, 4, 4), "-"), ((4, 4, 4, 4), ""), ((4, 6, 5), " "))


def held_out(digits: str) -> bool:
    return hashlib.sha256(digits.encode()).digest()[0] % 10 == 0


def mask(card: str) -> str:
    digit_positions = [i for i, ch in enumerate(card) if ch.isdigit()]
    keep = set(digit_positions[-4:])
    return "".join(ch if (not ch.isdigit() or i in keep) else "*" for i, ch in enumerate(card))


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(card, prompt, masked card) for ``count`` distinct numbers on one side of the split."""
    rng = random.Random(f"mask_card:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        groups, sep = rng.choice(LAYOUTS)
        digits = "".join(rng.choice("0123456789") for _ in range(sum(groups)))
        if held_out(digits) != evaluation or digits in found:
            continue
        parts, start = [], 0
        for size in groups:
            parts.append(digits[start:start + size])
            start += size
        card = sep.join(parts)
        found[digits] = (card, rng.choice(TEMPLATES).format(card=card), mask(card))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class MaskCardEnv(BaseEnv):
    """Mask all but the last four digits of a card number (single turn)."""

    name = "mask_card"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=24)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=24, temperature=0.0)
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
    MaskCardEnv.cli()
