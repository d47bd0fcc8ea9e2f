"""Put shuffled section numbers of a document back in reading order (ordering).

"I printed the sections of my report out of order: 2.10, 1.3, 2.2, 2.1. What order should they
go in?" -> "1.3, 2.1, 2.2, 2.10". Section numbers are chapter.section pairs (chapters 1 to 4,
sections 1 to 12), four to six distinct ones per item, so the order is by chapter and then by
section as a whole number: 2.10 comes after 2.9, not between 2.1 and 2.2. Items come from a
seeded generator under four phrasings; sets of numbers whose SHA-256 hash falls in one tenth are
held out for evaluation (in any order, under any phrasing) and never trained on. The answer is
the numbers separated by commas; spaces around the commas do not matter. Evaluation is exact
(greedy). Training gives partial credit: half the share of places holding the right number and
half the share of characters right in place, below 1 unless the list is exactly right.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CHAPTERS = range(1, 5)
SECTIONS = range(1, 13)
PHRASINGS = (
    "Put these section numbers in order: {items}",
    "I printed the sections of my report out of order: {items}. What order should they go in?",
    "The pages of the manual got shuffled. The sections I have are {items}. List them from first to last.",
    "Sort these clause numbers the way they appear in the contract: {items}",
)

Section = tuple[int, int]


def show(section: Section) -> str:
    return f"{section[0]}.{section[1]}"


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_item(rng: random.Random) -> tuple[str, str, list[str]]:
    """(key, prompt, sections in order)."""
    count = rng.randint(4, 6)
    chosen: set[Section] = set()
    while len(chosen) < count:
        chapter = rng.choice(CHAPTERS)
        if chosen and rng.random() < 0.5:  # often share a chapter, so the section number decides
            chapter = rng.choice(sorted(chosen))[0]
        section = rng.choice(SECTIONS)
        if section < 4 and len(chosen) + 2 <= count and rng.random() < 0.3:
            chosen.add((chapter, section + 9))  # 2.1 next to 2.10: a sort by characters gets these wrong
        chosen.add((chapter, section))
    sections = sorted(chosen)
    shuffled = sections[:]
    while shuffled == sections:
        rng.shuffle(shuffled)
    key = ",".join(show(s) for s in sections)
    prompt = rng.choice(PHRASINGS).format(items=", ".join(show(s) for s in shuffled))
    return key, prompt, [show(s) for s in sections]


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, list[str]]]:
    rng = random.Random(f"section_order:{seed}:{'eval' if evaluation else 'train'}")
    found: dict[str, tuple[str, str, list[str]]] = {}
    while len(found) < count:
        item = make_item(rng)
        if held_out(item[0]) == evaluation:
            found.setdefault(item[0], item)
    return list(found.values())


def parse(answer: str) -> list[str]:
    return [part.strip() for part in answer.strip().rstrip(".").split(",")]


def exact(answer: str, target: list[str]) -> float:
    return 1.0 if parse(answer) == target else 0.0


def partial(answer: str, target: list[str]) -> float:
    """1.0 when exact, else half the share of places right plus half the characters right in
    place (of the answer written as "a, b, c"), at most 0.9."""
    parts = parse(answer)
    if parts == target:
        return 1.0
    places = sum(a == b for a, b in zip(parts, target)) / max(len(parts), len(target))
    written, wanted = ", ".join(parts), ", ".join(target)
    chars = sum(a == b for a, b in zip(written, wanted)) / max(len(written), len(wanted))
    return 0.9 * (0.5 * places + 0.5 * chars)


MAX_TOKENS = 6 * len("4.12") + 5 * len(", ") + 6


class SectionOrderConfig(BaseEnvConfig):
    train_size: int = Field(4000, gt=0, description="Distinct training sets of section numbers.")
    eval_size: int = Field(200, gt=0, description="Distinct held-out sets evaluated.")


class SectionOrderEnv(BaseEnv):
    """List shuffled section numbers in reading order (single turn, ordering)."""

    name = "section_order"
    env_config_cls = SectionOrderConfig

    def __init__(self, config: SectionOrderConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[SectionOrderConfig, list[APIServerConfig]]:
        config = SectionOrderConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(self.config.train_size, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(self.config.eval_size, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [partial(c.text, item[2]) for c in group.completions]
        self.correct.extend(exact(c.text, item[2]) for c in group.completions)
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
    SectionOrderEnv.cli()
