"""Read a booking reference back one letter per reply, over several turns (multi-turn).

The user opens with "My booking reference is KXBQMD. Could you read it back to me one letter per
message? Just the first letter for now." and, whatever the reply, answers each reply with "Next
letter?" until the assistant has replied once per letter of the reference. The k-th reply should
be the k-th letter ("K", then "X", ...), so the policy must keep track of how far it has got.
Each reply that is exactly the right capital letter earns 1/length, so an episode returns the
share of letters read back right; it counts as correct only when every letter is. References
are 4 to 6 random capital letters; a tenth, chosen by a SHA-256 hash, are held out for
evaluation, so the policy must copy from the first message, not learn an answer per reference.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
OPENING = "My booking reference is {ref}. Could you read it back to me one letter per message? Just the first letter for now."
NEXT = "Next letter?"


def held_out(ref: str) -> bool:
    return hashlib.sha256(ref.encode()).digest()[0] % 10 == 0


def make_refs(count: int, *, seed: int, evaluation: bool) -> list[str]:
    rng = random.Random(f"read_back:{seed}")
    found: dict[str, None] = {}
    while len(found) < count:
        ref = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(4, 6)))
        if held_out(ref) == evaluation:
            found[ref] = None
    return list(found)


class Conversation:
    def __init__(self, ref: str) -> None:
        self.ref = ref
        self.position = 0
        self.right = 0

    def reply(self, text: str) -> TurnOutcome:
        hit = text.strip() == self.ref[self.position]
        self.right += hit
        self.position += 1
        more = self.position < len(self.ref)
        return TurnOutcome(reward=(1.0 if hit else 0.0) / len(self.ref), next_message=NEXT if more else None)

    @property
    def all_right(self) -> bool:
        return self.right == len(self.ref)


class ReadBackEnv(BaseEnv):
    """Read a reference given in the first message back one letter per turn (multi-turn)."""

    name = "read_back"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.all_right: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_refs = make_refs(2000, seed=self.config.seed, evaluation=False)
        self.eval_refs = make_refs(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> str:
        return self.rng.choice(self.train_refs)

    async def play(self, ref: str, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(ref)
        episode = await run_episode(
            self.policy,
            OPENING.format(ref=ref),
            conversation.reply,
            max_turns=len(ref),
            discount_factor=1.0,
            max_tokens=4,
            temperature=temperature,
        )
        return episode, conversation.all_right

    async def collect_trajectories(self, item: str) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.all_right.extend(1.0 if ok else 0.0 for _, ok in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(ref, 0.0) for ref in self.eval_refs))
        metrics = {"eval/percent_correct": sum(ok for _, ok in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.all_right:
            metrics["train/percent_correct"] = sum(self.all_right) / len(self.all_right)
            self.all_right = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    ReadBackEnv.cli()
