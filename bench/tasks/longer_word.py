"""Name the longer of two words: "Which word is longer: fig or apple?" -> "apple" (selection by comparison).

Items are ordered pairs of distinct-length words from a list of common English words; a tenth
of the pairs, chosen by a SHA-256 hash of the pair, are held out for evaluation (every word
also appears in training pairs). A completion scores 1.0 for the longer word and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

WORDS = (
    "cat dog sun map cup pen box hat fig egg ox "
    "tree bird fish lamp door rain milk road ship star "
    "apple horse table chair bread river stone cloud plant grape "
    "garden window basket pencil rabbit silver orange yellow candle forest "
    "blanket kitchen morning library printer diamond"
).split()


def held_out(pair: tuple[str, str]) -> bool:
    return hashlib.sha256(" ".join(pair).encode()).digest()[0] % 10 == 0


def all_pairs() -> list[tuple[str, str]]:
    return [(a, b) for a in WORDS for b in WORDS if len(a) != len(b)]


def longer(pair: tuple[str, str]) -> str:
    return max(pair, key=len)


class LongerWordEnv(BaseEnv):
    """Answer with the longer of two words (single turn)."""

    name = "longer_word"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        pairs = all_pairs()
        self.train_items = [p for p in pairs if not held_out(p)]
        self.eval_items = [p for p in pairs if held_out(p)][:200]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(pair: tuple[str, str]) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Which word is longer: {pair[0]} or {pair[1]}?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        messages = self.prompt(item)
        group = await self.policy.chat(messages, n=self.config.group_size, max_tokens=10)
        scores = [1.0 if c.text.strip() == longer(item) else 0.0 for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=10, temperature=0.0)
            return 1.0 if group.completions[0].text.strip() == longer(item) else 0.0

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
    LongerWordEnv.cli()
