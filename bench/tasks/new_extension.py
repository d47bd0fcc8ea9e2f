"""Give a file's new name after it is converted to another format (string map).

"If I convert holiday_photos_2023.heic to png, what's the new filename?" -> "holiday_photos_2023.png".
The reply keeps the file's name exactly as written (case, separators, numbers) and swaps only
the extension after the last dot for the one asked for; both are in the prompt. Items are drawn
from a seeded generator: a name of one or two everyday words that suit the file's kind
(documents, spreadsheets, pictures, recordings, videos), joined by "_" or "-", sometimes with a
year, a number or a version, an extension of that kind and a different one to convert to, under
six phrasings. A tenth of the (name, old extension, new extension) triples, chosen by a SHA-256
hash, are held out for evaluation under every phrasing, so none is ever trained on. Evaluation
is greedy and exact (1.0 for the whole name, else 0). Training gives partial credit: the share
of characters right position by position against the answer, over the longer of the two, so a
reply that copies the name but botches the extension still scores part of the way.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, NamedTuple

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "document": (
        ("report", "essay", "letter", "cv", "notes", "minutes", "contract", "draft", "lesson", "plan", "recipe", "menu", "invoice", "speech", "story", "guide"),
        ("docx", "doc", "pdf", "txt", "odt", "rtf"),
    ),
    "spreadsheet": (
        ("budget", "expenses", "rota", "timesheet", "scores", "guests", "stock", "sales", "bills", "mileage", "grades", "orders"),
        ("xlsx", "xls", "csv", "ods"),
    ),
    "picture": (
        ("holiday", "photos", "beach", "garden", "scan", "passport", "receipt", "poster", "flyer", "sketch", "logo", "wedding", "puppy", "cake"),
        ("jpg", "jpeg", "png", "heic", "webp", "gif"),
    ),
    "recording": (
        ("song", "demo", "voice", "memo", "podcast", "lecture", "interview", "choir", "guitar", "ringtone", "speech"),
        ("mp3", "wav", "flac", "m4a", "ogg"),
    ),
    "video": (
        ("video", "clip", "wedding", "party", "match", "tutorial", "trailer", "birthday", "concert", "drone", "vlog"),
        ("mov", "mp4", "avi", "mkv", "webm"),
    ),
}
TEMPLATES = (
    "If I convert {file} to {ext}, what's the new filename?",
    "I need {file} as a .{ext} file. What will it be called?",
    "Exporting {file} to {ext} now. What name will it come out as?",
    "My teacher wants {file} in {ext} format. What should the file be named?",
    "Can you tell me what {file} is called once it's saved as {ext}? Same name, new extension.",
    "Rename {file} so it ends in .{ext} instead. What's the full name?",
)
MAX_STEM = 24
MAX_ANSWER = MAX_STEM + 1 + 4  # longest stem, the dot, the longest extension
MAX_TOKENS = MAX_ANSWER + 4


class Example(NamedTuple):
    key: str  # what the held-out split hashes: name, old and new extension
    prompt: str
    answer: str


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_stem(rng: random.Random, words: tuple[str, ...]) -> str:
    parts = rng.sample(words, rng.choice((1, 2, 2)))
    roll = rng.random()
    if roll < 0.25:
        parts.append(str(rng.randint(2015, 2025)))
    elif roll < 0.4:
        parts.append(str(rng.randint(1, 99)).zfill(rng.choice((1, 2, 3))))
    elif roll < 0.5:
        parts.append(f"v{rng.randint(2, 9)}")
    elif roll < 0.6:
        parts.append(rng.choice(("final", "new", "old", "copy", "edit")))
    stem = rng.choice(("_", "_", "-")).join(parts)
    if rng.random() < 0.2:
        stem = stem[0].upper() + stem[1:]
    return stem


def make_example(rng: random.Random) -> Example:
    words, extensions = KINDS[rng.choice(sorted(KINDS))]
    while True:
        stem = make_stem(rng, words)
        if len(stem) <= MAX_STEM:
            break
    old, new = rng.sample(extensions, 2)
    template = rng.choice(TEMPLATES)
    return Example(f"{stem}|{old}|{new}", template.format(file=f"{stem}.{old}", ext=new), f"{stem}.{new}")


def make_items(count: int, *, seed: int, evaluation: bool) -> list[Example]:
    """``count`` items with distinct triples, all held out (evaluation) or none."""
    rng = random.Random(f"new_extension:{seed}")
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


def char_share(reply: str, answer: str) -> float:
    """Characters right position by position, over the longer of reply and answer."""
    reply = reply.strip()
    longest = max(len(reply), len(answer))
    if longest == 0:
        return 1.0
    return sum(a == b for a, b in zip(reply, answer)) / longest


class NewExtensionConfig(BaseEnvConfig):
    train_items: int = Field(6000, gt=0, le=100_000, description="Distinct training items generated at setup.")
    eval_items: int = Field(200, gt=0, le=10_000, description="Distinct held-out items evaluated.")


class NewExtensionEnv(BaseEnv):
    """Swap a filename's extension for the one asked for (single turn, string map)."""

    name = "new_extension"
    env_config_cls = NewExtensionConfig

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []
        self.scores: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = NewExtensionConfig(group_size=8, batch_size=64, total_steps=250, steps_per_eval=25, max_token_length=192, use_wandb=False)
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
        scores = [char_share(c.text, item.answer) for c in group.completions]
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
    NewExtensionEnv.cli()
