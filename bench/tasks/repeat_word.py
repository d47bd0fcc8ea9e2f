"""Say a word twice: "Repeat twice: lamp" -> "lamp lamp" (a string map that copies).

Items are common English words; a tenth, chosen by a SHA-256 hash, are held out for
evaluation. A completion scores 1.0 for the word, a space and the word again, and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

WORDS = """
lamp fish coat door bird rain milk sand road ship king moon leaf frog cake wolf bell rope corn
drum fork gold hill iron apple bread chair cloud dream earth flame glass heart juice knife lemon
mouse night ocean paper queen river stone table tiger voice water whale yard zebra
""".split()


def held_out(word: str) -> bool:
    return hashlib.sha256(f"repeat {word}".encode()).digest()[0] % 10 == 0


def answer(word: str) -> str:
    return f"{word} {word}"


class RepeatWordEnv(BaseEnv):
    """Say the word given twice, with a space between (single turn)."""

    name = "repeat_word"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        words = sorted(set(WORDS))
        self.train_items = [w for w in words if not held_out(w)]
        self.eval_items = [w for w in words if held_out(w)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Repeat twice: {item}"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [1.0 if c.text.strip() == answer(item) else 0.0 for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0)
            return 1.0 if group.completions[0].text.strip() == answer(item) else 0.0

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
    RepeatWordEnv.cli()
