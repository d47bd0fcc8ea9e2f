"""Name the country a phone number is from by its dialling code, through guided_choice
(classification).

"I missed a call from +33 6 12 45 78 90. What country was it from?" -> "France". Numbers carry
the international code of one of six countries (+1 USA, +44 UK, +33 France, +49 Germany, +81
Japan, +61 Australia), written with "+" or with "00", and the rest of the number grouped the
way that country usually writes it. A tenth of the numbers, chosen by a SHA-256 hash, are held
out for evaluation. Answers are constrained to the six labels; a completion scores 1.0 for the
right country and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

# label, dialling code, group lengths of the national part
COUNTRIES = (
    ("USA", "1", (3, 3, 4)),
    ("UK", "44", (4, 6)),
    ("France", "33", (1, 2, 2, 2, 2)),
    ("Germany", "49", (3, 7)),
    ("Japan", "81", (2, 4, 4)),
    ("Australia", "61", (1, 4, 4)),
)
LABELS = [country for country, _, _ in COUNTRIES]
TEMPLATES = (
    "Which country is the phone number {number} from?",
    "I missed a call from {number}. What country was it from?",
    "A new client gave me the number {number}. Which country is that?",
)


def held_out(number: str) -> bool:
    return hashlib.sha256(number.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(number, prompt, country) for ``count`` distinct numbers on one side of the split."""
    rng = random.Random(f"dial_country:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        country, code, groups = rng.choice(COUNTRIES)
        parts = ["".join([rng.choice("123456789")] + [rng.choice("0123456789") for _ in range(size - 1)]) if i == 0
                 else "".join(rng.choice("0123456789") for _ in range(size))
                 for i, size in enumerate(groups)]
        prefix = rng.choice(("+", "+", "00"))
        number = f"{prefix}{code} " + " ".join(parts)
        if held_out(number) != evaluation or number in found:
            continue
        found[number] = (number, rng.choice(TEMPLATES).format(number=number), country)
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class DialCountryEnv(BaseEnv):
    """Say which country a phone number's dialling code belongs to (single turn, guided_choice)."""

    name = "dial_country"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
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
    DialCountryEnv.cli()
