"""Say whether a sentence is a question, a command or a statement, through guided_choice
(classification).

"Is this sentence a question, a command or a statement? "Please water the plants."" ->
"command". Sentences are built from 26 household chores and 18 sentence patterns (six of each
type: questions end in a question mark and ask for information, commands are imperatives,
statements report or predict); each is asked under three phrasings. A tenth of the sentences,
chosen by a SHA-256 hash, are held out (under all phrasings) for evaluation, so the policy must
go by the sentence's form, not memorise sentences. Answers are constrained to the three labels;
a completion scores 1.0 for the right type and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["question", "command", "statement"]
CHORES = (  # (verb, past tense, object)
    ("close", "closed", "the door"), ("open", "opened", "the window"), ("wash", "washed", "the dishes"),
    ("water", "watered", "the plants"), ("feed", "fed", "the cat"), ("walk", "walked", "the dog"),
    ("empty", "emptied", "the bin"), ("fold", "folded", "the laundry"), ("lock", "locked", "the car"),
    ("clean", "cleaned", "the bathroom"), ("sweep", "swept", "the floor"), ("make", "made", "the bed"),
    ("pay", "paid", "the gas bill"), ("fix", "fixed", "the tap"), ("call", "called", "the plumber"),
    ("book", "booked", "the table"), ("mow", "mowed", "the lawn"), ("charge", "charged", "the laptop"),
    ("defrost", "defrosted", "the freezer"), ("return", "returned", "the library books"),
    ("iron", "ironed", "the shirts"), ("tidy", "tidied", "the living room"), ("post", "posted", "the letter"),
    ("hoover", "hoovered", "the stairs"), ("cancel", "cancelled", "the order"), ("wrap", "wrapped", "the present"),
)
PATTERNS = {
    "question": (
        "Did you {verb} {obj}?", "Have you {past} {obj} yet?", "Who {past} {obj}?",
        "Why did you {verb} {obj}?", "Should I {verb} {obj}?", "When will you {verb} {obj}?",
    ),
    "command": (
        "{Verb} {obj}.", "Please {verb} {obj}.", "{Verb} {obj} now.",
        "Don't {verb} {obj}.", "Go and {verb} {obj}.", "{Verb} {obj} before dinner, please.",
    ),
    "statement": (
        "I {past} {obj}.", "You {past} {obj} last week.", "Sam {past} {obj} yesterday.",
        "We never {verb} {obj}.", "I will {verb} {obj} later.", "Someone {past} {obj}.",
    ),
}
TEMPLATES = (
    'Is this sentence a question, a command or a statement? "{sentence}"',
    'My son\'s grammar homework asks what type of sentence this is: "{sentence}" Question, command or statement?',
    '"{sentence}" Would you call that a question, a command or a statement?',
)
MAX_TOKENS = max(len(label) for label in LABELS) + 3


def held_out(sentence: str) -> bool:
    return hashlib.sha256(sentence.encode()).digest()[0] % 10 == 0


def sentences() -> list[tuple[str, str]]:
    """(sentence, type) for every chore and pattern."""
    out = []
    for label, patterns in PATTERNS.items():
        for verb, past, obj in CHORES:
            for pattern in patterns:
                out.append((pattern.format(verb=verb, Verb=verb.capitalize(), past=past, obj=obj), label))
    return out


def all_items() -> list[tuple[str, str, str]]:
    """(sentence, prompt, type) for every sentence and phrasing."""
    return [(s, template.format(sentence=s), label) for s, label in sentences() for template in TEMPLATES]


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class SentenceTypeEnv(BaseEnv):
    """Classify a sentence as a question, a command or a statement (single turn, guided_choice)."""

    name = "sentence_type"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=224, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        self.eval_items = [i for i in items if held_out(i[0])]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, guided_choice=LABELS, temperature=0.0)
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
    SentenceTypeEnv.cli()
