"""Rank three players from the highest score to the lowest (ordering).

"Quiz scores: Ann 7, Bob 9, Cy 5. List the names from highest score to lowest, separated by
commas." -> "Bob, Ann, Cy".
Each game has three players with distinct short names from a list in this file and distinct
scores from 1 to 30, in a random order; the answer is the three names from the highest score to
the lowest, joined by ", ". Each game is asked under one of three phrasings. A tenth of the
games, chosen by a SHA-256 hash of the players and scores, are held out for evaluation, so the
policy must compare the scores, not memorise answers. A completion scores 1.0 when its
comma-separated names are exactly the right names in the right order (spaces around the commas
are ignored) and 0 otherwise; evaluation is greedy and scored the same way.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Ann", "Bob", "Cy", "Dee", "Ed", "Fay", "Gus", "Hal", "Ida", "Jo",
    "Kim", "Lou", "Meg", "Ned", "Ola", "Pat", "Ray", "Sue", "Ted", "Una",
    "Val", "Wes", "Yan", "Zed", "Abe", "Bea", "Cal", "Dot", "Eve", "Flo",
    "Gil", "Hana", "Ike", "Jen", "Kit", "Lars", "Mo", "Nell", "Otto", "Pia",
)
TEMPLATES = (
    "Quiz scores: {players}. List the names from highest score to lowest, separated by commas.",
    "After the card game, {players} points. Rank the players from most points to fewest, comma-separated.",
    "Darts tonight: {players}. Who came first, second and third? Give the names in that order, separated by commas.",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(game key, prompt, ranking) for ``count`` distinct games on one side of the split."""
    rng = random.Random(f"score_rank:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        names = rng.sample(NAMES, 3)
        scores = rng.sample(range(1, 31), 3)
        key = ", ".join(f"{n} {s}" for n, s in zip(names, scores))
        if key in found or held_out(key) != evaluation:
            continue
        template = rng.choice(TEMPLATES)
        if template.startswith("After the card game"):
            players = f"{names[0]} has {scores[0]}, {names[1]} has {scores[1]} and {names[2]} has {scores[2]}"
        else:
            players = key
        ranking = ", ".join(n for _, n in sorted(zip(scores, names), reverse=True))
        found[key] = (key, template.format(players=players), ranking)
    return list(found.values())


def names_in(text: str) -> list[str]:
    return [part.strip() for part in text.strip().split(",")]


def exact(answer: str, target: str) -> float:
    return 1.0 if names_in(answer) == names_in(target) else 0.0


class ScoreRankEnv(BaseEnv):
    """List players from the highest score to the lowest (single turn, ordering)."""

    name = "score_rank"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
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
    ScoreRankEnv.cli()
