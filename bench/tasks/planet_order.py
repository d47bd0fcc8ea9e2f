"""List planets in order of their distance from the sun (ordering).

"Put these planets in order from the sun, closest first: Mars, Mercury and Jupiter." ->
"Mercury, Mars, Jupiter". Three or four of the eight planets are named in a shuffled order; some
phrasings ask nearest first, others farthest first. The answer is the planets' names separated
by commas. Every set of three or four planets is used; a tenth of the sets, chosen by a SHA-256
hash, are held out (in every order and phrasing) for evaluation. A completion scores 1.0 when,
split at commas (a final "and" is allowed), it names exactly the right planets in the right
order, and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

PLANETS = ("Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune")  # from the sun out
TEMPLATES = (  # (phrasing, farthest first?)
    ("Put these planets in order from the sun, closest first: {planets}.", False),
    ("Going outwards from the sun, what order do {planets} come in?", False),
    ("List {planets} from farthest to nearest the sun.", True),
    ("My daughter wants {planets} ordered by distance from the sun, nearest first. What order?", False),
    ("Which order are {planets} in if you start at the outer edge of the solar system and work in?", True),
)


def held_out(planets: tuple[str, ...]) -> bool:
    key = ",".join(sorted(planets))
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def spoken(planets: list[str]) -> str:
    return ", ".join(planets[:-1]) + " and " + planets[-1]


def target(planets: tuple[str, ...], farthest_first: bool) -> str:
    ordered = sorted(planets, key=PLANETS.index, reverse=farthest_first)
    return ", ".join(ordered)


def all_sets() -> list[tuple[str, ...]]:
    return [s for size in (3, 4) for s in itertools.combinations(PLANETS, size)]


def make_item(planets: tuple[str, ...], template: int, rng: random.Random) -> tuple[tuple[str, ...], str, str]:
    shown = list(planets)
    rng.shuffle(shown)
    phrasing, farthest_first = TEMPLATES[template]
    return planets, phrasing.format(planets=spoken(shown)), target(planets, farthest_first)


def parse(answer: str) -> list[str]:
    text = answer.strip().rstrip(".").replace(" and ", ", ")
    return [part.strip() for part in text.split(",") if part.strip()]


def exact(answer: str, wanted: str) -> float:
    return 1.0 if parse(answer) == wanted.split(", ") else 0.0


MAX_TOKENS = max(len(target(s, False)) for s in all_sets()) + 6


class PlanetOrderEnv(BaseEnv):
    """Order the named planets by distance from the sun (single turn, ordering)."""

    name = "planet_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        sets = all_sets()
        self.train_sets = [s for s in sets if not held_out(s)]
        eval_rng = random.Random(f"planet_order:eval:{self.config.seed}")
        # every held-out set under every phrasing, each in one fixed shuffled order
        self.eval_items = [make_item(s, t, eval_rng) for s in sets if held_out(s) for t in range(len(TEMPLATES))]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return make_item(self.rng.choice(self.train_sets), self.rng.randrange(len(TEMPLATES)), self.rng)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
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
    PlanetOrderEnv.cli()
