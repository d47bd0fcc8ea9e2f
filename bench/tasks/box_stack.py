"""List a pile of boxes in order from clues about which sits on which (ordering).

"I stacked three boxes. The blue box is directly under the red box. The green box is directly
under the blue box. List the boxes from top to bottom, separated by commas." -> "red, blue,
green". A pile holds three or four boxes of different colours; each neighbouring pair is
described once ("X is directly on top of Y" or "Y is directly under X"), the clues come in a
random order, and the pile is asked for from the top down or from the bottom up, under three
phrasings. A tenth of the piles, chosen by a SHA-256 hash of the pile (read in either direction),
are held out for evaluation, so the policy must chain the clues, not memorise piles. A
completion scores 1.0 when it lists the colours in the asked order (case and spacing aside) and
0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

COLOURS = ("red", "blue", "green", "yellow", "white", "black", "brown", "grey", "pink", "orange", "purple")
NUMBERS = {3: "three", 4: "four"}
DIRECTIONS = {"down": "from top to bottom", "up": "from bottom to top"}
TEMPLATES = (
    "I stacked {count} boxes. {clues} List the boxes {direction}, separated by commas.",
    "{clues} What order are the {count} boxes in, {direction}? Give the colours separated by commas.",
    "Help me sort out my moving boxes. {clues} Name the colours {direction}, comma-separated.",
)
MAX_TOKENS = 4 * max(len(c) for c in COLOURS) + 3 * 2 + 4


def pile_key(pile: tuple[str, ...]) -> str:
    """The same key for a pile read from either end."""
    return ",".join(min(pile, pile[::-1]))


def held_out(pile: tuple[str, ...]) -> bool:
    return hashlib.sha256(pile_key(pile).encode()).digest()[0] % 10 == 0


def clue(upper: str, lower: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"The {upper} box is directly on top of the {lower} box."
    return f"The {lower} box is directly under the {upper} box."


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(pile key, prompt, answer) for ``count`` distinct questions on the chosen side of the split.

    ``pile`` is read from the top down."""
    rng = random.Random(f"box_stack:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        pile = tuple(rng.sample(COLOURS, rng.randint(3, 4)))
        if held_out(pile) != evaluation:
            continue
        clues = [clue(pile[i], pile[i + 1], rng) for i in range(len(pile) - 1)]
        rng.shuffle(clues)
        direction = rng.choice(tuple(DIRECTIONS))
        prompt = rng.choice(TEMPLATES).format(count=NUMBERS[len(pile)], clues=" ".join(clues), direction=DIRECTIONS[direction])
        answer = ", ".join(pile if direction == "down" else pile[::-1])
        found.setdefault(prompt, (pile_key(pile), prompt, answer))
    return list(found.values())


def normalise(text: str) -> list[str]:
    return [part.strip().lower() for part in text.strip().removesuffix(".").split(",")]


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == normalise(target) else 0.0


class BoxStackEnv(BaseEnv):
    """Order stacked boxes from top or bottom given which sits on which (single turn, ordering)."""

    name = "box_stack"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=352, use_wandb=False)
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
    BoxStackEnv.cli()
