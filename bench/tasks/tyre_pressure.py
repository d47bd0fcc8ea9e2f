"""Say whether a tyre's pressure is low, fine or high, answering through guided_choice (classification).

"The sticker in the door says 32 psi, and within 2 psi either way is fine. My front left tyre
reads 29. Low, fine or high?" -> "low".
A reading is fine when it is within the stated tolerance of the target (the edges count as
fine), low below that and high above. Every (target, tolerance, reading) triple is asked, with
targets of 28 to 40 psi, tolerances of 1 to 3 psi and readings up to 8 psi either side, under
five phrasings, the tyre (front left, spare, ...) chosen by a seeded generator. A tenth of the
triples, chosen by a SHA-256 hash, are held out for evaluation under every phrasing, so the
policy must compare the numbers, not memorise triples. Answers are constrained to the three
labels; a completion scores 1.0 for the right label and 0 otherwise, in training and evaluation
(a group of eight usually holds both, so no partial credit is needed).
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, NamedTuple

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["low", "fine", "high"]
TYRES = ("front left", "front right", "back left", "back right", "spare")
TEMPLATES = (
    "The sticker in the door says {target} psi, and within {tol} psi either way is fine. My {tyre} tyre reads {reading}. Low, fine or high?",
    "Checked the {tyre} tyre at the petrol station: {reading} psi. It should be {target}, give or take {tol}. Is it low, fine or high?",
    "Manual says {target} psi, plus or minus {tol} is OK. The gauge shows {reading} on the {tyre}. Low, fine or high?",
    "My {tyre} tyre is at {reading} psi. Recommended is {target}, and up to {tol} off is fine. Is that low, fine or high?",
    "Quick one: target pressure {target} psi (anything within {tol} is fine), {tyre} tyre reading {reading} psi. Low, fine or high?",
)
MAX_TOKENS = max(len(label) for label in LABELS) + 2


class Example(NamedTuple):
    key: str  # what the held-out split hashes: target, tolerance and reading
    prompt: str
    answer: str


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def label(target: int, tol: int, reading: int) -> str:
    if reading < target - tol:
        return "low"
    if reading > target + tol:
        return "high"
    return "fine"


def all_items(seed: int) -> list[Example]:
    """Every triple under every phrasing; the tyre named is drawn from a seeded generator."""
    rng = random.Random(f"tyre_pressure:{seed}")
    items = []
    for target in range(28, 41):
        for tol in (1, 2, 3):
            for reading in range(target - 8, target + 9):
                key = f"{target}|{tol}|{reading}"
                for template in TEMPLATES:
                    prompt = template.format(target=target, tol=tol, reading=reading, tyre=rng.choice(TYRES))
                    items.append(Example(key, prompt, label(target, tol, reading)))
    return items


def exact(reply: str, answer: str) -> float:
    return 1.0 if reply.strip() == answer else 0.0


class TyrePressureEnv(BaseEnv):
    """Classify a tyre reading as low, fine or high (single turn, guided_choice)."""

    name = "tyre_pressure"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=250, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items(self.config.seed)
        self.train_items = [i for i in items if not held_out(i.key)]
        self.eval_items = [i for i in items if held_out(i.key)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Example:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Example) -> list[dict[str, str]]:
        return [{"role": "user", "content": item.prompt}]

    async def collect_trajectories(self, item: Example) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS, guided_choice=LABELS)
        scores = [exact(c.text, item.answer) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Example) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, guided_choice=LABELS, temperature=0.0)
            return exact(group.completions[0].text, item.answer)

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    TyrePressureEnv.cli()
