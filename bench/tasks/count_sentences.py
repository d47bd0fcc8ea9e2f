"""Count the sentences in a short message (counting).

'How many sentences are in this message? "The bus was late. Can you call me? If it rains, we
stay home."' -> "3".
A message is one to six distinct sentences drawn from a bank of everyday ones, each ending in
".", "?" or "!" with no other full stops inside (some hold commas), joined by spaces. A tenth
of the messages, chosen by a SHA-256 hash, are held out for evaluation, so the policy must
count sentence ends, not memorise messages. A completion scores 1.0 when it is exactly the
count in digits and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

SENTENCES = (
    "The bus was late.", "Can you call me?", "If it rains, we stay home.", "What a day!",
    "I left my keys at work.", "Dinner is at seven.", "Did you feed the cat?", "See you soon!",
    "The shop was closed, so I came back.", "Tom says hi.", "Is the meeting still on?",
    "We need milk, eggs and bread.", "Happy birthday!", "The train leaves at noon.",
    "Where did you park?", "I'm running a bit late.", "Thanks for the flowers!",
    "Let's meet by the fountain.", "Have you seen my glasses?", "It was sunny all week.",
    "The kids are asleep.", "Don't forget the tickets!", "My phone is almost dead.",
    "Could you pick up the parcel?", "Honestly, I loved it.", "The heating is broken again.",
    "Who's bringing dessert?", "Good luck tomorrow!", "Anna got the job.", "Call me when you land.",
    "Why is the door open?", "The film starts at eight.",
)
TEMPLATES = (
    'How many sentences are in this message? "{text}"',
    'My teacher says I write too many sentences. How many are in this: "{text}"',
    "Count the sentences in the following text: {text}",
)


def held_out(text: str) -> bool:
    return hashlib.sha256(text.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(message, prompt, count) for ``count`` distinct messages on one side of the hold-out split."""
    rng = random.Random(f"count_sentences:{seed}:{evaluation}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        size = rng.randint(1, 6)
        text = " ".join(rng.sample(SENTENCES, size))
        if text in found or held_out(text) != evaluation:
            continue
        found[text] = (text, rng.choice(TEMPLATES).format(text=text), str(size))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class CountSentencesEnv(BaseEnv):
    """Say how many sentences a message has (single turn)."""

    name = "count_sentences"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

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
    CountSentencesEnv.cli()
