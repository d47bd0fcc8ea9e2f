"""Count how many stops a bus ride takes (counting).

"The 12 bus goes Park, Library, Mill, Bridge, Zoo, Beach. I get on at Library and get off at
Zoo. How many stops is that?" -> "3" (Mill, Bridge, Zoo: the stop where I get off counts, the
one where I get on does not). Routes are five to seven distinct stops from a pool of place
names, ridden forwards between two of them. Each ride (route, on, off) is asked under three
phrasings; a tenth of the rides, chosen by a SHA-256 hash, are held out for evaluation. A
completion scores 1.0 when it is the number of stops and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

STOPS = (
    "Park", "Library", "Mill", "Bridge", "Zoo", "Beach", "Market", "Station", "Harbour", "School",
    "Museum", "Church", "Castle", "Airport", "Stadium", "Square", "Garden", "Theatre", "Hospital",
    "Mall", "Pier", "Farm", "Lake", "College",
)
TEMPLATES = (
    "The {bus} bus goes {route}. I get on at {on} and get off at {off}. How many stops is that?",
    "Bus {bus} stops at {route}, in that order. How many stops do I ride from {on} to {off}?",
    "My bus route is {route}. If I board at {on}, how many stops until {off}?",
)
EVAL_SIZE = 300


def held_out(ride: str) -> bool:
    return hashlib.sha256(ride.encode()).digest()[0] % 10 == 0


def make_rides(count: int, *, seed: int, evaluation: bool) -> list[tuple[list[str], int, int]]:
    """(route, index boarded, index left) for distinct rides on one side of the split."""
    rng = random.Random(f"bus_stops:{seed}:{evaluation}")
    found: dict[str, tuple[list[str], int, int]] = {}
    while len(found) < count:
        route = rng.sample(STOPS, rng.randint(5, 7))
        on, off = sorted(rng.sample(range(len(route)), 2))
        ride = f"{', '.join(route)}|{on}|{off}"
        if held_out(ride) == evaluation:
            found[ride] = (route, on, off)
    return list(found.values())


def make_item(ride: tuple[list[str], int, int], rng: random.Random) -> tuple[str, str, str]:
    route, on, off = ride
    prompt = rng.choice(TEMPLATES).format(bus=rng.randint(2, 99), route=", ".join(route), on=route[on], off=route[off])
    return (f"{', '.join(route)}|{on}|{off}", prompt, str(off - on))


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class BusStopsEnv(BaseEnv):
    """Count the stops between boarding and leaving a bus (single turn, counting)."""

    name = "bus_stops"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.rng = random.Random(self.config.seed)
        self.train_rides = make_rides(5000, seed=self.config.seed, evaluation=False)
        eval_rng = random.Random(f"bus_stops:eval:{self.config.seed}")
        self.eval_items = [make_item(ride, eval_rng) for ride in make_rides(EVAL_SIZE, seed=self.config.seed, evaluation=True)]

    async def get_next_item(self) -> Any:
        return make_item(self.rng.choice(self.train_rides), self.rng)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=4)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=4, temperature=0.0)
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
    BusStopsEnv.cli()
