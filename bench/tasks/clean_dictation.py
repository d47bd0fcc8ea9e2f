"""Remove the filler words "um" and "uh" from a dictated voice note (string map).

"My dictation app typed: "call uh mom um tonight". Write it again without the ums and uhs." ->
"call mom tonight". A note is an everyday reminder (a verb, its object and a time, such as "buy
milk tomorrow") with one to three fillers slipped in between or before its words, under three
phrasings. A tenth of the clean notes, chosen by a SHA-256 hash, are held out (with every filler
placement and phrasing) for evaluation, so the policy must drop the fillers, not memorise
notes. A completion scores 1.0 when it is exactly the clean note and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

ERRANDS = (
    ("buy", ("milk", "bread", "eggs", "rice", "soap", "apples", "stamps")),
    ("call", ("mom", "dad", "Sam", "the vet", "the bank", "grandma")),
    ("email", ("Ana", "the boss", "Tom", "the landlord")),
    ("book", ("a table", "the flight", "a taxi", "a haircut")),
    ("pay", ("rent", "the bill", "Lisa back")),
    ("water", ("the plants", "the garden")),
    ("clean", ("the car", "the oven", "my desk")),
)
TIMES = ("today", "tonight", "tomorrow", "at noon", "on Friday", "later", "this weekend")
FILLERS = ("um", "uh")
TEMPLATES = (
    "Remove the filler words (um, uh) from this voice note: {note}",
    'My dictation app typed: "{note}". Write it again without the ums and uhs.',
    "Clean up this transcript by dropping every um and uh: {note}",
)


def held_out(note: str) -> bool:
    return hashlib.sha256(note.encode()).digest()[0] % 10 == 0


def clean_notes() -> list[str]:
    return [f"{verb} {thing} {time}" for verb, things in ERRANDS for thing in things for time in TIMES]


def noisy(note: str, rng: random.Random) -> str:
    """The note with one to three fillers placed before words of it (never two in a row)."""
    words = note.split()
    spots = rng.sample(range(len(words)), rng.randint(1, min(3, len(words))))
    out = []
    for i, word in enumerate(words):
        if i in spots:
            out.append(rng.choice(FILLERS))
        out.append(word)
    return " ".join(out)


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """(prompt, clean note) pairs, distinct prompts."""
    rng = random.Random(f"clean_dictation:{seed}")
    notes = [n for n in clean_notes() if held_out(n) == evaluation]
    found: dict[str, str] = {}
    for _ in range(count * 50):
        if len(found) >= count:
            break
        note = rng.choice(notes)
        prompt = rng.choice(TEMPLATES).format(note=noisy(note, rng))
        found[prompt] = note
    return list(found.items())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


MAX_REPLY = max(len(n) for n in clean_notes()) + 4


class CleanDictationEnv(BaseEnv):
    """Drop the ums and uhs from a dictated note (single turn, string map)."""

    name = "clean_dictation"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_REPLY)
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_REPLY, temperature=0.0)
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
    CleanDictationEnv.cli()
