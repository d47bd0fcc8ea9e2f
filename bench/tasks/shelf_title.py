"""File a book title the way a library catalogue does, its leading article moved to the end (string map).

'How would a library catalogue file the title "The Silent Harbour"?' -> "Silent Harbour, The".
A title that starts with "The", "A" or "An" is filed with the article behind a comma at the
end; a title without one is filed as it is. Titles are made up from word lists ("Silent
Harbour", "Orchard in Winter", "Clockmaker of Prague"), each under all three of its forms
(with "The", with "A"/"An", bare). A tenth of the titles, chosen by a SHA-256 hash of the bare
title, are held out for evaluation under every form and phrasing, so the policy must learn the
rule, not the titles. A completion scores 1.0 when it is exactly the filed title and otherwise
the share of characters it has right, position by position: the local policy seldom samples a
whole rearranged title at first, and an all-or-nothing score would give it nothing to learn
from.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ADJECTIVES = (
    "Silent", "Hidden", "Broken", "Golden", "Quiet", "Last", "Wild", "Little", "Secret", "Lonely",
    "Crimson", "Distant", "Forgotten", "Painted", "Burning", "Silver", "Paper", "Iron", "Hollow",
    "Midnight", "Northern", "Velvet", "Endless", "Early", "Amber", "Ancient", "Electric",
    "Invisible", "Unfinished", "Orange", "Open", "Empty", "Patient", "Restless", "Glass",
)
NOUNS = (
    "Harbour", "Garden", "Orchard", "Lighthouse", "River", "Kingdom", "Letter", "Island", "Window",
    "House", "Road", "Clock", "Forest", "Bridge", "Valley", "Station", "Mirror", "Compass", "Ocean",
    "Engine", "Archive", "Inn", "Echo", "Atlas", "Umbrella", "Orchestra", "Cottage", "Meadow",
)
PEOPLE = (
    "Clockmaker", "Beekeeper", "Ferryman", "Gardener", "Astronomer", "Innkeeper", "Alchemist",
    "Emperor", "Archivist", "Watchmaker", "Orphan", "Mapmaker", "Baker", "Tailor",
)
CITIES = ("Prague", "Lisbon", "Dublin", "Oslo", "Vienna", "Kyoto", "Venice", "Cairo", "Seville", "Bruges")
TIMES = ("Winter", "Spring", "Autumn", "Summer", "the Rain", "the Dark", "the Snow", "August")
TEMPLATES = (
    'How would a library catalogue file the title "{title}"?',
    'I\'m making spine labels for our book club shelf. How should "{title}" be filed, with any "The", "A" or "An" moved to the end?',
    'Write the book title "{title}" the way it goes in the catalogue, article last.',
)


class ShelfTitleConfig(BaseEnvConfig):
    eval_size: int = Field(300, gt=0, le=100_000, description="Held-out (title, phrasing) pairs evaluated.")


def held_out(bare: str) -> bool:
    return hashlib.sha256(bare.encode()).digest()[0] % 10 == 0


def bare_titles() -> list[str]:
    titles = [f"{adjective} {noun}" for adjective in ADJECTIVES for noun in NOUNS]
    titles += [f"{noun} in {time}" for noun in NOUNS + PEOPLE for time in TIMES]
    titles += [f"{person} of {city}" for person in PEOPLE for city in CITIES]
    return titles


def forms(bare: str) -> list[tuple[str, str]]:
    """(title as written, title as filed) for the three forms of a bare title."""
    indefinite = "An" if bare[0] in "AEIOU" else "A"
    return [(f"The {bare}", f"{bare}, The"), (f"{indefinite} {bare}", f"{bare}, {indefinite}"), (bare, bare)]


def all_items() -> list[tuple[str, str, str]]:
    """(bare title, title as written, title as filed) for every title and form."""
    return [(bare, written, filed) for bare in bare_titles() for written, filed in forms(bare)]


def char_share(answer: str, target: str) -> float:
    answer = answer.strip()
    if answer == target:
        return 1.0
    right = sum(a == b for a, b in zip(answer, target))
    return right / max(len(answer), len(target))


MAX_TOKENS = max(len(filed) for _, _, filed in all_items()) + 4


class ShelfTitleEnv(BaseEnv):
    """Move a book title's leading article to the end, as a catalogue files it (single turn)."""

    name = "shelf_title"
    env_config_cls = ShelfTitleConfig

    def __init__(self, config: ShelfTitleConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[ShelfTitleConfig, list[APIServerConfig]]:
        config = ShelfTitleConfig(group_size=8, batch_size=64, total_steps=300, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        held = [(written, filed, template) for bare, written, filed in items if held_out(bare) for template in TEMPLATES]
        random.Random(f"shelf_title:eval:{self.config.seed}").shuffle(held)
        self.eval_items = held[: self.config.eval_size]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        _, written, filed = self.rng.choice(self.train_items)
        return written, filed, self.rng.choice(TEMPLATES)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[2].format(title=item[0])}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [char_share(c.text, item[1]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
            return char_share(group.completions[0].text, item[1])

        scores = await gather_bounded((one(i) for i in self.eval_items), self.config.max_eval_workers)
        metrics = {
            "eval/percent_correct": sum(s == 1.0 for s in scores) / len(scores),
            "eval/char_share": sum(scores) / len(scores),
        }
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    ShelfTitleEnv.cli()
