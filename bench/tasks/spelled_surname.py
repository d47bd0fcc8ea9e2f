"""Put together a surname spelled one letter per message (multi-turn).

As on a phone call, the user opens with "I'll spell my surname one letter at a time; just
reply OK after each. First letter: K", sends the remaining letters one message each ("Next:
A", ...), then asks "That's all. What is my surname?". Every reply before the last earns 0;
the episode returns 1.0 when the last reply is the surname (case is ignored) and 0 otherwise.
Surnames are 3 to 6 letters built from syllables; a tenth, chosen by a SHA-256 hash, are held
out for evaluation, so the policy must carry the letters over from the earlier turns, not learn
an answer per name.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

SYLLABLES = (
    "ba", "be", "bo", "da", "di", "do", "fa", "fe", "ga", "go", "ha", "he", "ka", "ki", "ko",
    "la", "li", "lo", "ma", "me", "mo", "na", "ne", "no", "pa", "pe", "ra", "ri", "ro", "sa",
    "se", "so", "ta", "te", "to", "va", "vi", "wa", "ze", "lin", "son", "mar", "ber", "ton",
)
OPENINGS = (
    "I'll spell my surname one letter at a time; just reply OK after each. First letter: {letter}",
    "Let me spell my last name for you, one letter per message. Say OK after each one. It starts with {letter}",
    "Spelling my surname now, letter by letter. Reply OK to each letter. {letter}",
)
QUESTION = "That's all. What is my surname?"


def held_out(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] % 10 == 0


def make_names(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"spelled_surname:{seed}")
    found: dict[str, None] = {}
    while len(found) < count:
        name = ""
        while len(name) < 3:
            name += rng.choice(SYLLABLES)
        if len(name) < 6 and rng.random() < 0.5:
            name += rng.choice(SYLLABLES)
        name = name[:6].capitalize()
        if held_out(name) == evaluation:
            found[name] = None
    return list(found)


class Call:
    def __init__(self, name: str) -> None:
        self.name = name
        self.sent = 1  # the first letter goes in the opening message
        self.recalled = False

    def reply(self, text: str) -> TurnOutcome:
        if self.sent < len(self.name):
            letter = self.name[self.sent].upper()
            self.sent += 1
            return TurnOutcome(reward=0.0, next_message=f"Next: {letter}")
        if self.sent == len(self.name):
            self.sent += 1
            return TurnOutcome(reward=0.0, next_message=QUESTION)
        self.recalled = text.strip().rstrip(".").lower() == self.name.lower()
        return TurnOutcome(reward=1.0 if self.recalled else 0.0, next_message=None)


class SpelledSurnameEnv(BaseEnv):
    """Say the surname spelled letter by letter over earlier turns (multi-turn)."""

    name = "spelled_surname"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.recalled: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=512, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_names = make_names(2000, seed=self.config.seed, evaluation=False)
        self.eval_names = make_names(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> tuple[str, str]:
        name = self.rng.choice(self.train_names)
        return name, self.rng.choice(OPENINGS)

    async def play(self, item: tuple[str, str], temperature: float | None = None) -> tuple[Episode, bool]:
        name, opening = item
        call = Call(name)
        episode = await run_episode(
            self.policy,
            opening.format(letter=name[0].upper()),
            call.reply,
            max_turns=len(name) + 1,
            discount_factor=1.0,
            max_tokens=10,
            temperature=temperature,
        )
        return episode, call.recalled

    async def collect_trajectories(self, item: tuple[str, str]) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.recalled.extend(1.0 if recalled else 0.0 for _, recalled in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        items = [(name, OPENINGS[i % len(OPENINGS)]) for i, name in enumerate(self.eval_names)]
        played = await asyncio.gather(*(self.play(item, 0.0) for item in items))
        metrics = {"eval/percent_correct": sum(recalled for _, recalled in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.recalled:
            metrics["train/percent_correct"] = sum(self.recalled) / len(self.recalled)
            self.recalled = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    SpelledSurnameEnv.cli()
