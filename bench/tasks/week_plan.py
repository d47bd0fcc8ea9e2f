"""Put the week's appointments in the order they happen, Monday first (ordering).

"This week I've got the dentist on Thursday, yoga class on Monday and a haircut on Wednesday.
What order do they come in?" -> "yoga class, haircut, dentist". A week holds three to five
appointments from a pool of twenty-four, each on a different day, listed in a random order.
Weeks are drawn at random; a tenth of the possible weeks (the set of appointment-day pairs,
whatever order they are listed in), chosen by a SHA-256 hash, are held out for evaluation. The
answer is the appointments separated by commas; a completion scores the share of positions that
hold the right appointment (1.0 for the whole order right), divided by the longer of the two
lists so that extra or missing entries cost credit.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
APPOINTMENTS = (
    "dentist", "haircut", "yoga class", "piano lesson", "book club", "car service", "vet appointment",
    "job interview", "football practice", "swimming", "team dinner", "doctor's appointment", "quiz night",
    "parents' evening", "driving lesson", "cinema", "physio", "choir practice", "boiler repair",
    "dance class", "eye test", "salsa night", "tennis", "pottery class",
)
TEMPLATES = (
    "This week I've got {listing}. Can you put them in the order they happen, starting from Monday? "
    "Just the appointments, separated by commas.",
    "My diary for the week: {listing}. What order do they come in? List them from Monday to Sunday, "
    "separated by commas.",
    "Help me plan my week. I have {listing}. In what order do they happen? Give me just the list, "
    "earliest in the week first, comma separated.",
)
MAX_TOKENS = 96


def key_of(pairs: list[tuple[str, str]]) -> str:
    return "|".join(f"{a}@{d}" for a, d in sorted(pairs))


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def listing(pairs: list[tuple[str, str]]) -> str:
    parts = [f"{a} on {d}" for a, d in pairs]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, list[str]]]:
    """(key, prompt, appointments in order) for ``count`` distinct weeks of one split."""
    rng = random.Random(f"week_plan:{seed}:{evaluation}")
    found: dict[str, tuple[str, str, list[str]]] = {}
    while len(found) < count:
        size = rng.randint(3, 5)
        pairs = list(zip(rng.sample(APPOINTMENTS, size), rng.sample(DAYS, size)))
        key = key_of(pairs)
        if held_out(key) != evaluation or key in found:
            continue
        order = [a for a, d in sorted(pairs, key=lambda p: DAYS.index(p[1]))]
        if order == [a for a, _ in pairs]:
            rng.shuffle(pairs)  # already in order as listed: shuffle once, so most weeks need sorting
        prompt = rng.choice(TEMPLATES).format(listing=listing(pairs))
        found[key] = (key, prompt, order)
    return list(found.values())


def position_share(answer: str, target: list[str]) -> float:
    given = [part.strip().strip(".").lower() for part in answer.strip().split(",")]
    given = [g for g in given if g]
    if not given:
        return 0.0
    right = sum(g == t.lower() for g, t in zip(given, target))
    return right / max(len(given), len(target))


class WeekPlanEnv(BaseEnv):
    """List the week's appointments in the order of their days (single turn, ordering)."""

    name = "week_plan"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.scores: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(5000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [position_share(c.text, item[2]) for c in group.completions]
        self.scores.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return position_share(group.completions[0].text, item[2])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores),
            "eval/mean_score": sum(scores) / len(scores),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.scores:
            metrics["train/percent_correct"] = sum(s == 1.0 for s in self.scores) / len(self.scores)
            metrics["train/mean_score"] = sum(self.scores) / len(self.scores)
            self.scores = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    WeekPlanEnv.cli()
