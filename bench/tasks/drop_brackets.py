"""Rewrite a sentence without its bracketed aside (string map).

"Take out the part in brackets: The train (as usual) was twenty minutes late." -> "The train was
twenty minutes late." Every sentence is one of 25 everyday frames with one of 19 short asides in
parentheses, placed in the middle or at the end, asked under three phrasings. A tenth of the
bracketed sentences, chosen by a SHA-256 hash, are held out (under all phrasings) for
evaluation, so the policy must learn to cut whatever sits between the brackets, not memorise
sentences. A completion scores 1.0 when it is the sentence without the aside (spacing and a
final full stop aside) and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FRAMES = (
    ("I'll call you", "after lunch"),
    ("The meeting", "starts at ten"),
    ("My sister", "is moving to Leeds"),
    ("We should leave", "before the traffic gets bad"),
    ("The shop on the corner", "closes early on Sundays"),
    ("Dinner", "will be ready at seven"),
    ("Our landlord", "is fixing the boiler on Monday"),
    ("The train", "was twenty minutes late"),
    ("I left my keys", "on the kitchen table"),
    ("The new café", "does great pancakes"),
    ("Tom", "can't make it tonight"),
    ("The report", "is due on Friday"),
    ("Grandma", "is coming for the weekend"),
    ("I need to buy milk", "on the way home"),
    ("The printer", "is out of paper"),
    ("Our flight", "leaves at six in the morning"),
    ("The dog", "needs a walk"),
    ("My phone", "keeps losing signal"),
    ("The kids", "loved the museum"),
    ("The plumber", "is coming tomorrow"),
    ("This recipe", "takes about an hour"),
    ("The concert", "sold out in a day"),
    ("Jess", "got the job"),
    ("The car", "needs new tyres"),
    ("I finished the book", "last night"),
)
ASIDES = (
    "as usual", "I think", "sadly", "finally", "don't ask", "for once", "apparently",
    "just so you know", "between you and me", "no surprise", "again", "fingers crossed",
    "if I remember right", "or so I'm told", "believe it or not", "thankfully", "of course",
    "more or less", "probably",
)
TEMPLATES = (
    "Take out the part in brackets: {text}",
    "Can you remove the bit in parentheses from this sentence? {text}",
    "Rewrite this without the bracketed aside:\n{text}",
)


def held_out(text: str) -> bool:
    return hashlib.sha256(text.encode()).digest()[0] % 10 == 0


def sentences() -> list[tuple[str, str]]:
    """(sentence with the aside, sentence without it) for every frame, aside and position."""
    out = []
    for before, after in FRAMES:
        plain = f"{before} {after}."
        for aside in ASIDES:
            out.append((f"{before} ({aside}) {after}.", plain))
            out.append((f"{before} {after} ({aside}).", plain))
    return out


def all_items() -> list[tuple[str, str, str]]:
    """(bracketed sentence, prompt, answer) for every sentence and phrasing."""
    return [(text, template.format(text=text), plain) for text, plain in sentences() for template in TEMPLATES]


MAX_TOKENS = max(len(plain) for _, plain in sentences()) + 6


def normalise(text: str) -> str:
    return " ".join(text.split()).removesuffix(".")


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == normalise(target) else 0.0


class DropBracketsEnv(BaseEnv):
    """Rewrite a sentence without the aside in parentheses (single turn, string map)."""

    name = "drop_brackets"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
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
    DropBracketsEnv.cli()
