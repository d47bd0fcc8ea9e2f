"""Read a code out one character per message, as over the phone (multi-turn).

"Can you read me the Wi-Fi password one character at a time? It's kq7rm2. Just the first one for
now." -> "k"; "Got it. Next?" -> "q"; ... until the last character, "2".
The user gives a code of 4 to 6 lowercase letters and digits in the first message and then asks
for the next character after every reply, as many times as the code is long; the policy must
keep its place from the conversation so far. Codes come from a seeded generator under five
opening phrasings and six follow-ups (the follow-ups of an episode drawn by a generator seeded
by its code). A tenth of the codes, chosen by a SHA-256 hash, are held out for evaluation, so
none is trained on. Each reply that is exactly the right character earns 1/len(code), so an
episode's return (undiscounted) is the share of characters read out right: that is the
training score, partial credit by design. Evaluation is greedy and exact: an episode counts
only when every character is right.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any, NamedTuple

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"  # no l, o, 0 or 1, as printed codes avoid them
OPENINGS = (
    "Can you read me the Wi-Fi password one character at a time? It's {code}. Just the first one for now.",
    "I'm typing in the booking code {code} on my phone. Give it to me one character per message, starting with the first.",
    "Spell out {code} for me slowly, one character at a time. First character?",
    "Read this gift card code back to me a character at a time: {code}. Go ahead with the first.",
    "Mum's setting up the new router and needs the code {code}. Tell me it one character at a time so I can pass it on. First one?",
)
FOLLOW_UPS = ("Got it. Next?", "OK, next one.", "Yep, and the next?", "Next please.", "Right, what's after that?", "Typed it. Next?")
MAX_TOKENS = 1 + 2  # one character a turn


class Example(NamedTuple):
    key: str  # what the held-out split hashes: the code
    prompt: str
    answer: str


def held_out(code: str) -> bool:
    return hashlib.sha256(code.encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Example]:
    """``count`` distinct codes with their opening messages, all held out (evaluation) or none."""
    rng = random.Random(f"letter_by_letter:{seed}")
    found: dict[str, Example] = {}
    for _ in range(200 * count):
        if len(found) == count:
            break
        code = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(4, 6)))
        opening = rng.choice(OPENINGS).format(code=code)
        if held_out(code) == evaluation and code not in found:
            found[code] = Example(code, opening, code)
    else:
        raise RuntimeError(f"could not draw {count} distinct items")
    return list(found.values())


class Conversation:
    """The user's side: asks for the next character after every reply until the code is done."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.position = 0
        self.right = 0
        self.rng = random.Random(f"letter_by_letter:follow-ups:{code}")

    def reply(self, text: str) -> TurnOutcome:
        hit = text.strip() == self.code[self.position]
        self.right += hit
        self.position += 1
        reward = (1.0 if hit else 0.0) / len(self.code)
        if self.position == len(self.code):
            return TurnOutcome(reward=reward, next_message=None)
        return TurnOutcome(reward=reward, next_message=self.rng.choice(FOLLOW_UPS))

    @property
    def all_right(self) -> bool:
        return self.right == len(self.code)


class LetterByLetterConfig(BaseEnvConfig):
    train_items: int = Field(4000, gt=0, le=100_000, description="Distinct training codes generated at setup.")
    eval_items: int = Field(100, gt=0, le=10_000, description="Distinct held-out codes evaluated.")


class LetterByLetterEnv(BaseEnv):
    """Give a code's characters one per turn, in order (multi-turn)."""

    name = "letter_by_letter"
    env_config_cls = LetterByLetterConfig

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []
        self.scores: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = LetterByLetterConfig(group_size=8, batch_size=64, total_steps=250, steps_per_eval=25, max_token_length=512, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_items, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_items, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Example:
        return self.rng.choice(self.train_items)

    async def play(self, item: Example, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(item.answer)
        episode = await run_episode(
            self.policy,
            item.prompt,
            conversation.reply,
            max_turns=len(item.answer),
            discount_factor=1.0,
            max_tokens=MAX_TOKENS,
            temperature=temperature,
        )
        return episode, conversation.all_right

    async def collect_trajectories(self, item: Example) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if right else 0.0 for _, right in played)
        self.scores.extend(episode.discounted_return for episode, _ in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        played = await gather_bounded((self.play(item, 0.0) for item in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(right for _, right in played) / len(played)}
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
    LetterByLetterEnv.cli()
