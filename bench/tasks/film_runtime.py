"""Pick the shortest or the longest of a few films from their running times (selection).

"We've only got a couple of hours tonight. Which of these films is the shortest? Paper
Lanterns (104 min), The Iron Valley (97 min), Midnight Ferry (121 min)" -> "The Iron Valley".
Three to five made-up films with distinct running times between 78 and 180 minutes are listed;
half the phrasings ask for the shortest and half for the longest, so the policy must read the
question as well as compare the numbers. Items are generated from a seed; a tenth of all
possible items, chosen by a SHA-256 hash of the item, are reserved for evaluation and never
trained on. The answer is a title copied from the prompt, so a completion scores 1.0 for the
right title and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FIRST = (
    "Paper", "Midnight", "Iron", "Silver", "Broken", "Electric", "Distant", "Quiet", "Crimson",
    "Frozen", "Summer", "Golden", "Hidden", "Wild", "Velvet", "Northern", "Burning", "Lonely",
    "Secret", "Neon", "Stolen", "Last", "Glass", "Salt",
)
SECOND = (
    "Lanterns", "Valley", "Ferry", "Harbour", "Horizon", "Station", "Garden", "Kingdom", "Letters",
    "Highway", "Echoes", "Orchard", "Island", "Signal", "Mountain", "Circus", "Sky", "Tides",
    "Frontier", "Detective", "Voyage", "Heist", "Lighthouse", "Storm",
)
SHORTEST = (
    "We've only got a couple of hours tonight. Which of these films is the shortest? {films}",
    "Pick the shortest film for the kids' movie night: {films}",
)
LONGEST = (
    "We're in the mood for a long epic this weekend. Which of these is the longest? {films}",
    "Which of these films runs the longest? {films}",
)


class FilmRuntimeConfig(BaseEnvConfig):
    train_size: int = Field(5000, gt=0, le=1_000_000, description="Training items generated.")
    eval_size: int = Field(200, gt=0, le=100_000, description="Held-out items evaluated.")


def held_out(prompt: str) -> bool:
    return hashlib.sha256(prompt.encode()).digest()[0] % 10 == 0


def make_item(rng: random.Random) -> tuple[str, str]:
    """(prompt, title of the right film)."""
    count = rng.randint(3, 5)
    titles: list[str] = []
    while len(titles) < count:
        title = f"{rng.choice(FIRST)} {rng.choice(SECOND)}"
        if rng.random() < 0.3:
            title = "The " + title
        if all(title.removeprefix("The ") != t.removeprefix("The ") for t in titles):
            titles.append(title)
    minutes = rng.sample(range(78, 181), count)
    films = ", ".join(f"{t} ({m} min)" for t, m in zip(titles, minutes))
    want_short = rng.random() < 0.5
    template = rng.choice(SHORTEST if want_short else LONGEST)
    pick = min if want_short else max
    answer = titles[minutes.index(pick(minutes))]
    return template.format(films=films), answer


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    rng = random.Random(f"film_runtime:{seed}:{'eval' if evaluation else 'train'}")
    found: dict[str, str] = {}
    while len(found) < count:
        prompt, answer = make_item(rng)
        if held_out(prompt) == evaluation:
            found[prompt] = answer
    return list(found.items())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


MAX_TOKENS = len("The ") + max(map(len, FIRST)) + 1 + max(map(len, SECOND)) + 4


class FilmRuntimeEnv(BaseEnv):
    """Pick the shortest or longest film from a list with running times (single turn)."""

    name = "film_runtime"
    env_config_cls = FilmRuntimeConfig

    def __init__(self, config: FilmRuntimeConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[FilmRuntimeConfig, list[APIServerConfig]]:
        config = FilmRuntimeConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_size, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_size, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return exact(group.completions[0].text, item[1])

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
    FilmRuntimeEnv.cli()
