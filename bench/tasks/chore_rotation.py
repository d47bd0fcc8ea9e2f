"""Give next week's order of a chore rota after it rotates by one (ordering).

"This week the dishes rota is Ana, Ben, Cara. Every week the first person moves to the end.
What is next week's order?" -> "Ben, Cara, Ana". Rotas have three or four people drawn from a
list of first names. A tenth of the rotas (the names in their order), chosen by a SHA-256 hash,
are held out for evaluation, so the policy must learn to rotate, not memorise rotas. The reply
is read as a comma-separated list; it scores 1.0 when it is exactly the rotated order and 0
otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Ana", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivan", "Jade", "Kai", "Lena",
    "Milo", "Nora", "Omar", "Pia", "Rosa", "Sam", "Tara", "Vera", "Wes", "Zoe", "Leo", "Maya",
)
CHORES = ("dishes", "bins", "vacuuming", "laundry", "bathroom", "cooking")
TEMPLATES = (
    "This week the {chore} rota is {rota}. Every week the first person moves to the end. What is next week's order?",
    "Our {chore} rota this week: {rota}. It rotates weekly, first person to the back. List next week's order.",
    "{chore_cap} rota for this week goes {rota}. Next week whoever is first goes last. What's the new order?",
)


def held_out(rota: list[str]) -> bool:
    return hashlib.sha256(",".join(rota).encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, list[str]]]:
    """(prompt, next week's order), distinct prompts on the requested side of the split."""
    rng = random.Random(f"chore_rotation:{seed}")
    found: dict[str, tuple[str, list[str]]] = {}
    while len(found) < count:
        rota = rng.sample(NAMES, rng.randint(3, 4))
        if held_out(rota) != evaluation:
            continue
        chore = rng.choice(CHORES)
        prompt = rng.choice(TEMPLATES).format(chore=chore, chore_cap=chore.capitalize(), rota=", ".join(rota))
        found.setdefault(prompt, (prompt, rota[1:] + rota[:1]))
    return list(found.values())


def score(answer: str, target: list[str]) -> float:
    names = [part.strip() for part in answer.strip().rstrip(".").split(",")]
    return 1.0 if names == target else 0.0


class ChoreRotationEnv(BaseEnv):
    """Rotate a rota by one place (single turn, ordering)."""

    name = "chore_rotation"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=40)
        scores = [score(c.text, item[1]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=40, temperature=0.0)
            return score(group.completions[0].text, item[1])

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
    ChoreRotationEnv.cli()
