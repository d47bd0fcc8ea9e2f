"""List travellers in the order they board, from their boarding zones (ordering).

"We're flying out tomorrow and our boarding passes show Maya zone 4, Leo zone 2, Priya zone 1
and Tom zone 3. In what order will we board? Just list the names." -> "Priya, Leo, Tom, Maya".
Three to five travellers have distinct zones, numbered (1 boards first) or lettered (A boards
first); prompts come in several phrasings. A tenth of the items, chosen by a SHA-256 hash of the
travellers and their zones, are held out for evaluation. The names in the reply (other words
are ignored) are compared position by position with the right order: training scores the share
of positions right, out of the longer of the two lists (1.0 for the exact order); evaluation
counts exact orders.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Maya", "Leo", "Priya", "Tom", "Anna", "Ben", "Chloe", "Dan", "Ella", "Finn", "Grace", "Hugo", "Isla", "Jack",
    "Kate", "Liam", "Mia", "Noah", "Olivia", "Paul", "Rosa", "Sam", "Tara", "Umar", "Vera", "Wendy", "Zoe", "Omar",
    "Nina", "Ravi", "Sofia", "Theo", "Lucy", "Oscar", "Eva", "Jonas", "Aisha", "Carlos", "Mei", "Ivan",
)
TEMPLATES = (
    "We're flying out tomorrow and our boarding passes show {people}. In what order will we board? Just list the names.",
    "Boarding goes {word} by {word}, {first} first. {people_cap}. What order do we get on the plane?",
    "Family trip! Boarding {word}s: {people}. Who boards first, second and so on? Names only, in order.",
    "can you sort us by boarding {word}? {people}",
    "Our gate calls {word}s in order. {people_cap}. Which order do we line up in?",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def describe(pairs: list[tuple[str, str]], word: str, style: int) -> str:
    if style == 0:
        parts = [f"{n} {word} {z}" for n, z in pairs]
    elif style == 1:
        parts = [f"{n} is in {word} {z}" for n, z in pairs]
    else:
        parts = [f"{n} {z}" for n, z in pairs]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(key, prompt, answer, names in boarding order) items, held out or not."""
    rng = random.Random(f"boarding_zones:{seed}")
    found: dict[str, tuple[str, str, str, tuple[str, ...]]] = {}
    while len(found) < count:
        size = rng.randint(3, 5)
        names = rng.sample(NAMES, size)
        lettered = rng.random() < 0.4
        zones = sorted(rng.sample(range(6), size))
        labels = ["ABCDEF"[z] if lettered else str(z + 1) for z in zones]
        order = list(names)  # names[i] has labels[i]; present them shuffled
        pairs = list(zip(order, labels))
        rng.shuffle(pairs)
        key = ";".join(f"{n}={z}" for n, z in sorted(pairs))
        if held_out(key) != evaluation:
            continue
        word = rng.choice(("group", "zone")) if lettered else "zone"
        people = describe(pairs, word, rng.randrange(3))
        prompt = rng.choice(TEMPLATES).format(
            people=people, people_cap=people[0].upper() + people[1:], word=word, first="A" if lettered else "1"
        )
        found.setdefault(key, (key, prompt, ", ".join(order), tuple(order)))
    return list(found.values())


def score(text: str, order: tuple[str, ...]) -> float:
    known = {n.lower(): n for n in order}
    got = [known[w.lower()] for w in re.findall(r"[A-Za-z]+", text) if w.lower() in known]
    right = sum(a == b for a, b in zip(got, order))
    return right / max(len(got), len(order))


class BoardingZonesEnv(BaseEnv):
    """Put travellers in boarding order by their zones (ordering)."""

    name = "boarding_zones"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=48)
        scores = [score(c.text, item[3]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=48, temperature=0.0)
            return score(group.completions[0].text, item[3])

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
    BoardingZonesEnv.cli()
