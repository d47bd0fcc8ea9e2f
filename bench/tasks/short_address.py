"""Abbreviate the street type of an address for a label (string map, word-wise).

"Rewrite this address with the street type abbreviated (St, Ave, Rd, Dr, Ln, Blvd, Ct, Pl):
48 Maple Avenue" -> "48 Maple Ave". Only the street-type word changes; the house number and
street name are copied as written. Addresses combine a house number, a street name and one of
eight street types; a tenth of the addresses, chosen by a SHA-256 hash, are held out for
evaluation, so the policy must learn the rule rather than memorise addresses. A completion
scores 1.0 when it is exactly the abbreviated address and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

STREET_TYPES = {
    "Street": "St", "Avenue": "Ave", "Road": "Rd", "Drive": "Dr",
    "Lane": "Ln", "Boulevard": "Blvd", "Court": "Ct", "Place": "Pl",
}
STREET_NAMES = (
    "Oak", "Maple", "Pine", "Cedar", "Elm", "Birch", "Willow", "Chestnut", "Walnut", "Hill",
    "Park", "Lake", "River", "Church", "Mill", "Station", "Bridge", "Spring", "Garden", "Meadow",
    "Main", "High", "King", "Queen", "Market", "School", "Forest", "Sunset", "Harbor", "Orchard",
    "Victoria", "Lincoln", "Baker", "Cherry", "Rose", "Grove", "North", "South", "Valley", "Ash",
)
HINT = "(St, Ave, Rd, Dr, Ln, Blvd, Ct, Pl)"
TEMPLATES = (
    "Rewrite this address with the street type abbreviated " + HINT + ": {address}",
    "I'm printing envelope labels. Shorten the street type " + HINT + " in {address}",
    "Abbreviate the street type in this address " + HINT + ": {address}",
)


def held_out(address: str) -> bool:
    return hashlib.sha256(address.encode()).digest()[0] % 10 == 0


def shorten(address: str) -> str:
    return " ".join(STREET_TYPES.get(word, word) for word in address.split())


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(address, prompt, abbreviated address), distinct addresses on the requested side of the split."""
    rng = random.Random(f"short_address:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        address = f"{rng.randint(1, 999)} {rng.choice(STREET_NAMES)} {rng.choice(list(STREET_TYPES))}"
        if address in found or held_out(address) != evaluation:
            continue
        found[address] = (address, rng.choice(TEMPLATES).format(address=address), shorten(address))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class ShortAddressEnv(BaseEnv):
    """Abbreviate the street type of an address (single turn, string map)."""

    name = "short_address"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
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
    ShortAddressEnv.cli()
