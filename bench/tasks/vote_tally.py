"""Count the votes one option got in a list of votes (counting).

"We voted on where to eat tonight: pizza, sushi, pizza, tacos, pizza. How many votes did pizza
get?" -> "3". Each list has four to ten votes among three foods, and the question asks about a
food that got at least one vote. Lists are random; a tenth of them, chosen by a SHA-256 hash of
the votes and the food asked about, are held out for evaluation, so the policy must count, not
remember answers. A completion scores 1.0 when it is the number (in digits, or as a word such as
"three"; a final full stop is forgiven) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FOODS = ("pizza", "sushi", "tacos", "curry", "burgers", "pasta", "ramen", "salad", "kebabs",
         "noodles", "dumplings", "falafel")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
TEMPLATES = (
    "We voted on where to eat tonight: {votes}. How many votes did {food} get?",
    "Here are the lunch votes from the team: {votes}. How many people picked {food}?",
    "Tally for Friday's dinner: {votes}. How many voted for {food}?",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """(prompt, count as digits) for random vote lists."""
    rng = random.Random(f"vote_tally:{seed}:{evaluation}")
    found: dict[tuple[str, str], None] = {}
    while len(found) < count:
        options = rng.sample(FOODS, 3)
        votes = [rng.choice(options) for _ in range(rng.randint(4, 10))]
        food = rng.choice(votes)
        shown = ", ".join(votes)
        if held_out(f"{shown}|{food}") != evaluation:
            continue
        found[(rng.choice(TEMPLATES).format(votes=shown, food=food), str(votes.count(food)))] = None
    return list(found)


def normalise(text: str) -> str:
    text = " ".join(text.lower().split()).rstrip(".").strip()
    return str(NUMBER_WORDS.index(text)) if text in NUMBER_WORDS else text


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == target else 0.0


MAX_TOKENS = 4  # the longest answer, "10", and a little more


class VoteTallyEnv(BaseEnv):
    """Count how many votes a food got (single turn, counting)."""

    name = "vote_tally"

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
    VoteTallyEnv.cli()
