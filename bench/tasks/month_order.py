"""Put three months in calendar order: "Put these months in calendar order: Oct, Mar, Jun" ->
"Mar, Jun, Oct" (ordering by knowledge, not by spelling).

Months are written with their usual three-letter abbreviations (Jan ... Dec), which keeps the
prompt and the answer short. Items are all 1,320 ordered triples of three different months;
a tenth, chosen by a SHA-256 hash, are held out for evaluation (every month also appears in
training items). A completion scores 1.0 for the three months in the order they come in the
year (January first), separated by ", " as in the prompt, after .strip(), and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()

Item = tuple[str, str, str]


def held_out(item: Item) -> bool:
    return hashlib.sha256(f"month order {' '.join(item)}".encode()).digest()[0] % 10 == 0


def all_items(*, evaluation: bool) -> list[Item]:
    return [
        (a, b, c)
        for a in MONTHS
        for b in MONTHS
        for c in MONTHS
        if len({a, b, c}) == 3 and held_out((a, b, c)) == evaluation
    ]


def answer(item: Item) -> str:
    return ", ".join(sorted(item, key=MONTHS.index))


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class MonthOrderEnv(BaseEnv):
    """Answer with three months in the order they come in the year (single turn)."""

    name = "month_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=96, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = all_items(evaluation=False)
        self.eval_items = all_items(evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Put these months in calendar order: {', '.join(item)}"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=18)
        scores = [exact(c.text, answer(item)) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=18, temperature=0.0)
            return exact(group.completions[0].text, answer(item))

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
    MonthOrderEnv.cli()
