"""Count the lights left on after a run of switching them on and off (counting).

"The house was dark when I got in. I switched on the hall light, turned the kitchen light on,
switched off the hall light and turned the porch light on. How many lights are on now?" -> "2".
Items are drawn by a seeded generator: every light starts off, then three to seven switchings
among ten rooms, each turning on a light that is off or off a light that is on, each worded
one of two ways, under one of four phrasings. The answer is the number of lights on at the end,
in digits (0 to 7). A tenth of the switching sequences, chosen by a SHA-256 hash of the
sequence, are held out for evaluation under every wording. Evaluation is greedy and exact; in
training a reply scores the share of characters right position by position, over the longer of
reply and answer, so a longer reply that starts with the right digit earns part of the credit.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ROOMS = ("kitchen", "hall", "landing", "bathroom", "porch", "garage", "living room", "bedroom", "study", "spare room")
MAX_TOKENS = 4  # one digit and a little


def held_out(content: str) -> bool:
    return hashlib.sha256(content.encode()).digest()[0] % 10 == 0


def switchings(rng: random.Random) -> tuple[list[tuple[str, bool]], int]:
    """A random run of (room, switched on?) that starts with every light off; and the lights on after it."""
    lit: set[str] = set()
    steps = []
    for _ in range(rng.randint(3, 7)):
        if lit and rng.random() < 0.4:
            room = rng.choice(sorted(lit))
            lit.discard(room)
            steps.append((room, False))
        else:
            room = rng.choice([r for r in ROOMS if r not in lit])
            lit.add(room)
            steps.append((room, True))
    return steps, len(lit)


def phrase(rng: random.Random, room: str, on: bool) -> str:
    state = "on" if on else "off"
    if rng.random() < 0.5:
        return f"switched {state} the {room} light"
    return f"turned the {room} light {state}"


def make_prompt(rng: random.Random, steps: list[tuple[str, bool]]) -> str:
    acts = [phrase(rng, room, on) for room, on in steps]
    done = ", ".join(acts[:-1]) + " and " + acts[-1]
    kind = rng.randrange(4)
    if kind == 0:
        return f"The house was dark when I got in. I {done}. How many lights are on now?"
    if kind == 1:
        return f"All the lights were off when I got home. Then I {done}. How many lights have I left on?"
    if kind == 2:
        return f"My flatmate says I waste electricity. Starting with every light off tonight, I {done}. How many are still on?"
    steps_text = ", then ".join(acts)
    return f"Every light in the house was off. I {steps_text}. How many lights are on?"


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """``count`` distinct (prompt, answer) items, from the held-out sequences or from the others."""
    rng = random.Random(f"lights_on:{seed}")
    found: dict[str, str] = {}
    while len(found) < count:
        steps, lit = switchings(rng)
        content = ";".join(f"{room}:{'on' if on else 'off'}" for room, on in steps)
        if held_out(content) != evaluation:
            continue
        found.setdefault(make_prompt(rng, steps), str(lit))
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


class LightsOnEnv(BaseEnv):
    """Count the lights still on after a sequence of switchings (single turn, counting)."""

    name = "lights_on"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=512, use_wandb=False)
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
    LightsOnEnv.cli()
