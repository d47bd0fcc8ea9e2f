"""Put relatives in order of generation, oldest first (ordering).

"I'm labelling an old family photo. It shows my daughter, my grandmother and my mother. Can you
list them from the oldest generation to the youngest?" -> "grandmother, mother, daughter".
Items are drawn by a seeded generator: three to five of six generations (great-grandparent,
grandparent, parent, child, grandchild, great-grandchild), one relative of each chosen
generation with a random sex, shuffled and asked under one of four phrasings. The answer lists
the relatives as the prompt names them, without "my", joined by ", ". A tenth of the sets of
relatives, chosen by a SHA-256 hash of the answer, are held out for evaluation in every order
and phrasing. Evaluation is greedy and exact; in training a reply scores the share of
characters right position by position, over the longer of reply and answer, so a policy
trained from scratch can learn.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

GENERATIONS = (  # oldest first: (female, male)
    ("great-grandmother", "great-grandfather"),
    ("grandmother", "grandfather"),
    ("mother", "father"),
    ("daughter", "son"),
    ("granddaughter", "grandson"),
    ("great-granddaughter", "great-grandson"),
)
# the longest answer: the five longest generations' longer names, and a little
MAX_TOKENS = sum(sorted(max(len(w) for w in pair) for pair in GENERATIONS)[1:]) + 2 * 4 + 3


def held_out(answer: str) -> bool:
    return hashlib.sha256(answer.encode()).digest()[0] % 10 == 0


def listing(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def make_prompt(rng: random.Random, shuffled: list[str]) -> str:
    kind = rng.randrange(4)
    mine = listing([f"my {r}" for r in shuffled])
    if kind == 0:
        return f"I'm labelling an old family photo. It shows {mine}. Can you list them from the oldest generation to the youngest?"
    if kind == 1:
        return f"Put these relatives in order, oldest generation first: {', '.join(shuffled)}."
    if kind == 2:
        return (f"For my school project I'm drawing a family tree from the top down. It has to include "
                f"{mine}. In what order do they go, top first?")
    return f"Could you sort {listing(shuffled)} by generation, starting with the oldest?"


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """``count`` distinct (prompt, answer) items, from the held-out sets or from the others."""
    rng = random.Random(f"generation_order:{seed}")
    found: dict[str, str] = {}
    while len(found) < count:
        size = rng.randint(3, 5)
        chosen = sorted(rng.sample(range(len(GENERATIONS)), size))
        relatives = [GENERATIONS[g][rng.randrange(2)] for g in chosen]
        answer = ", ".join(relatives)
        if held_out(answer) != evaluation:
            continue
        shuffled = relatives[:]
        while shuffled == relatives:
            rng.shuffle(shuffled)
        found.setdefault(make_prompt(rng, shuffled), answer)
    return list(found.items())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


def char_share(answer: str, target: str) -> float:
    """The share of positions where reply and answer agree, over the longer of the two."""
    reply = answer.strip()
    longest = max(len(reply), len(target))
    if longest == 0:
        return 1.0
    return sum(x == y for x, y in zip(reply, target)) / longest


class GenerationOrderEnv(BaseEnv):
    """List relatives from the oldest generation to the youngest (single turn, ordering)."""

    name = "generation_order"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

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
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [char_share(c.text, item[1]) for c in group.completions]
        self.correct.extend(exact(c.text, item[1]) for c in group.completions)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return exact(group.completions[0].text, item[1])

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
    GenerationOrderEnv.cli()
