"""Count how many guests answered yes to a party invitation (counting).

Example: "Party replies: Ana yes, Ben no, Cara yes, Dan yes, Eve no. How many people are
coming?" -> "3". Each item lists three to eight different guests from a pool of thirty, each
with "yes" or "no"; the number of yes replies is drawn evenly from 0 to the number of guests.
A tenth of the items, chosen by a SHA-256 hash, are held out for evaluation (every name and
count also appears in training items). A completion scores 1.0 when, after .strip(), it is
exactly the count in digits and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Ana Ben Cara Dan Eve Finn Gina Hugo Ivy Jack Kira Leo Mia Nick Olga Paul Rosa Sam Tara Umar "
    "Vera Will Yara Zoe Alex Beth Carl Dora Emil Fay"
).split()

Item = tuple[tuple[str, str], ...]  # (guest, "yes" or "no") pairs as shown


def held_out(item: Item) -> bool:
    text = ", ".join(f"{name} {reply}" for name, reply in item)
    return hashlib.sha256(f"rsvp_count {text}".encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Item]:
    rng = random.Random(f"rsvp_count:{seed}")
    found: dict[Item, None] = {}
    while len(found) < count:
        guests = rng.sample(NAMES, rng.randint(3, 8))
        coming = set(rng.sample(guests, rng.randint(0, len(guests))))
        item = tuple((name, "yes" if name in coming else "no") for name in guests)
        if held_out(item) == evaluation:
            found[item] = None
    return list(found)


def answer(item: Item) -> str:
    return str(sum(reply == "yes" for _, reply in item))


def score(text: str, item: Item) -> float:
    return 1.0 if text.strip() == answer(item) else 0.0


class RsvpCountEnv(BaseEnv):
    """Count the guests who replied yes (single turn)."""

    name = "rsvp_count"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Item:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Item) -> list[dict[str, str]]:
        replies = ", ".join(f"{name} {reply}" for name, reply in item)
        return [{"role": "user", "content": f"Party replies: {replies}. How many people are coming?"}]

    async def collect_trajectories(self, item: Item) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=3)
        scores = [score(c.text, item) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Item) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=3, temperature=0.0)
            return score(group.completions[0].text, item)

        scores = await gather_bounded((one(item) for item in self.eval_items), self.config.max_eval_workers)
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
    RsvpCountEnv.cli()
