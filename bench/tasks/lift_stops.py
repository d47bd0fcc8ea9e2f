"""Count how many different floors a lift will stop at from the buttons pressed (counting).

"We got in the lift on the ground floor and people pressed 4, 7, 4, 2, 7 and 9. How many
different floors will it stop at?" -> "4".
The answer is the number of distinct floors among the presses (a floor pressed twice is one
stop). Items come from a seeded generator: a building of 4 to 20 floors and two to eight presses
of floors 1 up to its top, so repeats are common and the count often differs from the number of
presses, under six phrasings. A tenth of the contents (the presses as a multiset), chosen by a
SHA-256 hash, are held out for evaluation, so none is trained on in any order or phrasing.
Evaluation is greedy and exact. Training gives partial credit to a reply that is a whole number:
1 - |reply - answer| / 3, floored at 0 (1.0 right, 0.67 one off, 0.33 two off); anything else
scores 0.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, NamedTuple

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight")
TEMPLATES = (
    "We got in the lift on the ground floor and people pressed {presses}. How many different floors will it stop at?",
    "Busy lift this morning: the buttons pressed were {presses}. How many stops will it make if nobody else gets on?",
    "Floors pressed in the lift: {presses}. How many separate stops is that?",
    "{people} of us got in the lift downstairs and each pressed our floor: {presses}. How many floors does it stop on?",
    "At the hotel the lift had {presses} lit up. How many floors will it stop at on the way up?",
    "The kids pressed {presses} in the lift. How many different floors is that?",
)
MAX_PRESSES = 8
MAX_ANSWER = len(str(MAX_PRESSES))
MAX_TOKENS = MAX_ANSWER + 3


class Example(NamedTuple):
    key: str  # what the held-out split hashes: the presses, sorted
    prompt: str
    answer: str


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def spoken_list(numbers: list[int]) -> str:
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def make_example(rng: random.Random) -> Example:
    top = rng.randint(4, 20)
    presses = [rng.randint(1, top) for _ in range(rng.randint(2, MAX_PRESSES))]
    template = rng.choice(TEMPLATES)
    prompt = template.format(presses=spoken_list(presses), people=NUMBER_WORDS[len(presses)].capitalize())
    key = ",".join(str(p) for p in sorted(presses))
    return Example(key, prompt, str(len(set(presses))))


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Example]:
    """``count`` items with distinct contents, all held out (evaluation) or none."""
    rng = random.Random(f"lift_stops:{seed}")
    found: dict[str, Example] = {}
    for _ in range(200 * count):
        if len(found) == count:
            break
        example = make_example(rng)
        if held_out(example.key) == evaluation and example.key not in found:
            found[example.key] = example
    else:
        raise RuntimeError(f"could not draw {count} distinct items")
    return list(found.values())


def exact(reply: str, answer: str) -> float:
    return 1.0 if reply.strip() == answer else 0.0


def closeness(reply: str, answer: str) -> float:
    """1 - |reply - answer| / 3, floored at 0, for a whole-number reply; 0 otherwise."""
    text = reply.strip()
    if not text.isdigit() or not text.isascii():
        return 0.0
    return max(0.0, 1.0 - abs(int(text) - int(answer)) / 3)


class LiftStopsConfig(BaseEnvConfig):
    train_items: int = Field(6000, gt=0, le=100_000, description="Distinct training items generated at setup.")
    eval_items: int = Field(200, gt=0, le=10_000, description="Distinct held-out items evaluated.")


class LiftStopsEnv(BaseEnv):
    """Count the distinct floors among the lift buttons pressed (single turn, counting)."""

    name = "lift_stops"
    env_config_cls = LiftStopsConfig

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []
        self.scores: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = LiftStopsConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_items, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_items, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Example:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Example) -> list[dict[str, str]]:
        return [{"role": "user", "content": item.prompt}]

    async def collect_trajectories(self, item: Example) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [closeness(c.text, item.answer) for c in group.completions]
        self.correct.extend(exact(c.text, item.answer) for c in group.completions)
        self.scores.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Example) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return exact(group.completions[0].text, item.answer)

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            metrics["train/mean_score"] = sum(self.scores) / len(self.scores)
            self.correct, self.scores = [], []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    LiftStopsEnv.cli()
