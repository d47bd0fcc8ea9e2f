"""Write a dashed code out without its dashes (string map).

"My product key is 7KQ-X4M-P2R. Can you write it out without the dashes?" -> "7KQX4MP2R".
Codes are two to four groups of three or four characters (capital letters and digits, leaving
out the look-alikes O, 0, I and 1) joined by dashes, so an answer is at most 16 characters. A
tenth of the codes, chosen by a SHA-256 hash, are held out for evaluation, so the policy must
learn to copy the code and drop the dashes, not memorise codes. A completion scores 1.0 when it
is exactly the code without dashes and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CHARACTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
TEMPLATES = (
    "My product key is {code}. Can you write it out without the dashes?",
    "Type this tracking number with the hyphens removed: {code}",
    "The wifi password on the sticker says {code}, but the router wants it with no dashes. What do I enter?",
)


def held_out(code: str) -> bool:
    return hashlib.sha256(code.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(code, prompt, answer) for ``count`` distinct codes on one side of the hold-out split."""
    rng = random.Random(f"strip_dashes:{seed}:{evaluation}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        size = rng.choice((3, 4))
        groups = ["".join(rng.choice(CHARACTERS) for _ in range(size)) for _ in range(rng.randint(2, 4))]
        code = "-".join(groups)
        if code in found or held_out(code) != evaluation:
            continue
        found[code] = (code, rng.choice(TEMPLATES).format(code=code), "".join(groups))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class StripDashesEnv(BaseEnv):
    """Repeat a dashed code with the dashes taken out (single turn)."""

    name = "strip_dashes"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=20)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=20, temperature=0.0)
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
    StripDashesEnv.cli()
