"""Turn a short everyday phrase into a hashtag (string map).

"Can you turn 'bake sale 2024' into a hashtag? Capital letter for each word." -> "#BakeSale2024".
The rule: a "#", then every word of the phrase with its first letter capitalised and the rest
kept, all run together with no spaces. Phrases are built from an optional opener ("our", "my",
"annual", ...), an event ("road trip", "game night", ...) and an optional ending ("with the
kids", "in Lisbon", "2025", ...), each asked under four phrasings. A tenth of the phrases, chosen
by a SHA-256 hash, are held out (under every phrasing) for evaluation. A completion scores the
share of characters right, position by position, over the longer of answer and target (1.0
only for the exact hashtag), since the answer writes characters the prompt does not hold;
eval/percent_correct counts exact answers only.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

OPENERS = ("", "our ", "my ", "annual ", "first ", "big ", "last ", "best ")
EVENTS = (
    "road trip", "beach day", "game night", "bake sale", "book club", "family reunion", "pizza night",
    "movie marathon", "sunday brunch", "morning run", "camping weekend", "garden party", "yard sale",
    "hiking trip", "coffee date", "spring cleaning", "birthday party", "wedding day", "graduation day",
    "ski trip", "quiz night", "bike ride", "picnic", "fun run", "book launch", "dog walk", "farmers market",
    "karaoke night", "craft fair", "snow day", "taco tuesday", "team lunch", "date night", "school play",
)
ENDINGS = (
    "", " with the kids", " with friends", " in Lisbon", " in Rome", " at home", " 2024", " 2025",
    " by the lake", " with mum", " in the park",
)
TEMPLATES = (
    "Turn this into a hashtag, capital letter for each word, no spaces: {phrase}",
    "Can you make \"{phrase}\" into a hashtag for my post? Capitalise every word.",
    "What would \"{phrase}\" look like as a hashtag, each word starting with a capital?",
    "Hashtag please, no spaces and every word capitalised: {phrase}",
)


def held_out(phrase: str) -> bool:
    return hashlib.sha256(phrase.encode()).digest()[0] % 10 == 0


def hashtag(phrase: str) -> str:
    return "#" + "".join(word[0].upper() + word[1:] for word in phrase.split())


def all_phrases() -> list[str]:
    return [f"{opener}{event}{ending}" for opener in OPENERS for event in EVENTS for ending in ENDINGS]


def all_items() -> list[tuple[str, str, str]]:
    """(phrase, prompt, hashtag) for every phrase and phrasing."""
    return [(p, t.format(phrase=p), hashtag(p)) for p in all_phrases() for t in TEMPLATES]


def share_right(answer: str, target: str) -> float:
    answer = answer.strip()
    if not answer and not target:
        return 1.0
    right = sum(a == b for a, b in zip(answer, target))
    return right / max(len(answer), len(target))


MAX_TOKENS = max(len(hashtag(p)) for p in all_phrases()) + 4


class HashtagEnv(BaseEnv):
    """Rewrite a phrase as a capitalised, space-free hashtag (single turn, string map)."""

    name = "hashtag"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        held = [i for i in items if held_out(i[0])]
        # one phrasing per held-out phrase, rotating through the phrasings
        self.eval_items = held[:: len(TEMPLATES) + 1]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [share_right(c.text, item[2]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return share_right(group.completions[0].text, item[2])

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
    HashtagEnv.cli()
