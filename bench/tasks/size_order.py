"""Put clothing sizes in order from smallest to largest (ordering).

"Sort these T-shirt sizes from smallest to largest: L, XS, M" -> "XS, M, L". Sizes come from XS,
S, M, L, XL, XXL; a prompt lists 3 or 4 different ones in some order. Every arrangement is asked
under three phrasings; a tenth of the arrangements, chosen by a SHA-256 hash, are held out
(under all phrasings) for evaluation. A reply scores 1.0 when it lists the sizes in the right
order separated by commas (spacing and case ignored) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

SIZES = ("XS", "S", "M", "L", "XL", "XXL")
TEMPLATES = (
    "Sort these T-shirt sizes from smallest to largest: {sizes}",
    "I have shirts in {sizes}. List the sizes from smallest to biggest.",
    "Put these clothing sizes in order, smallest first: {sizes}",
)


def held_out(arrangement: str) -> bool:
    return hashlib.sha256(arrangement.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(arrangement, prompt, sorted sizes) for every arrangement and phrasing."""
    items = []
    for k in (3, 4):
        for chosen in itertools.permutations(SIZES, k):
            arrangement = ", ".join(chosen)
            answer = ", ".join(sorted(chosen, key=SIZES.index))
            for template in TEMPLATES:
                items.append((arrangement, template.format(sizes=arrangement), answer))
    return items


def same_order(answer: str, target: str) -> float:
    given = [part.strip().upper() for part in answer.strip().rstrip(".").split(",")]
    wanted = [part.strip() for part in target.split(",")]
    return 1.0 if given == wanted else 0.0


class SizeOrderEnv(BaseEnv):
    """List clothing sizes from smallest to largest (single turn)."""

    name = "size_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        self.eval_items = [i for i in items if held_out(i[0])]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=20)
        scores = [same_order(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=20, temperature=0.0)
            return same_order(group.completions[0].text, item[2])

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
    SizeOrderEnv.cli()
