"""Join two surnames into a double-barrelled one, in the order the prompt asks (string map).

"Anna Hill is marrying Tom Reed, and they're joining their surnames with a hyphen, Tom's first.
What will their new surname be?" -> "Reed-Hill". Items are drawn by a seeded generator: two
people (first name and surname, all different), which of them goes first, and one of five
phrasings (weddings, a baby's birth certificate, a form, first person). A tenth of the surname
pairs, chosen by a SHA-256 hash of the answer, are held out for evaluation under every name and
phrasing, so the policy must copy the surnames in the asked order, not memorise pairs.
Evaluation is greedy and exact; in training a reply scores the share of characters right
position by position, over the longer of reply and answer, so a policy trained from scratch can
learn.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

FIRST_NAMES = (
    "Anna", "Tom", "Priya", "James", "Sofia", "Daniel", "Chloe", "Omar", "Grace", "Luke", "Megan", "Ravi",
    "Laura", "Ben", "Hannah", "Sam", "Nadia", "Owen", "Ellie", "Marcus", "Zoe", "Adam", "Lucy", "Kofi",
    "Ruth", "Jack", "Maya", "Felix", "Amira", "Leo", "Isla", "Noah", "Freya", "Ethan", "Jade", "Hugo",
)
SURNAMES = (
    "Hill", "Reed", "Patel", "Walker", "Jones", "Clarke", "Baker", "Evans", "Hughes", "Morgan", "Turner",
    "Shaw", "Khan", "Wood", "Price", "Bennett", "Fisher", "Lloyd", "Carter", "Murray", "Fraser", "Ellis",
    "Hayes", "Nolan", "Booth", "Warren", "Stone", "Foster", "Harper", "Lowe", "Mason", "Quinn", "Grant",
    "Holmes", "Doyle", "Mills", "Parry", "Sutton", "Barker", "Dixon", "Kerr", "Lamb", "Webb", "Ward",
    "Ashton", "Pearson", "Gill", "Owens", "Nash", "Cross", "Tate", "Hale", "Finch", "Rowe", "Kemp",
    "Moss", "Burton", "Chapman", "Fletcher", "Sharma",
)
MAX_TOKENS = 2 * max(len(s) for s in SURNAMES) + 1 + 3  # the longest answer and a little


def held_out(answer: str) -> bool:
    return hashlib.sha256(answer.encode()).digest()[0] % 10 == 0


def make_prompt(rng: random.Random, a: tuple[str, str], b: tuple[str, str], a_first: bool) -> str:
    """The question for people ``a`` and ``b`` (first name, surname); ``a_first``: a's surname leads."""
    lead, other = (a, b) if a_first else (b, a)
    kind = rng.randrange(5)
    if kind == 0:
        return (f"{a[0]} {a[1]} is marrying {b[0]} {b[1]}, and they're joining their surnames with a hyphen, "
                f"{lead[0]}'s first. What will their new surname be?")
    if kind == 1:
        which = "mine" if a_first else "my partner's"
        return (f"My surname is {a[1]} and my partner's is {b[1]}. We're going double-barrelled after the wedding, "
                f"with {which} first. What will our surname be?")
    if kind == 2:
        return (f"{a[0]} {a[1]} and {b[0]} {b[1]} want a double-barrelled surname for their baby, with "
                f"{lead[0]}'s surname first. What surname goes on the birth certificate?")
    if kind == 3:
        return (f"Quick one for the wedding invitations: after the big day, {a[0]} {a[1]} and {b[0]} {b[1]} "
                f"will share a hyphenated surname, {lead[0]}'s before {other[0]}'s. What is it?")
    which = "mine" if a_first else "theirs"
    return (f"I'm {a[0]} {a[1]}, my partner is {b[0]} {b[1]}, and we're combining our surnames with {which} "
            f"first. What should I write on the form as our new surname?")


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """``count`` distinct (prompt, answer) items, from the held-out pairs or from the others."""
    rng = random.Random(f"double_barrelled:{seed}")
    found: dict[str, str] = {}
    while len(found) < count:
        first_a, first_b = rng.sample(FIRST_NAMES, 2)
        sur_a, sur_b = rng.sample(SURNAMES, 2)
        a_first = rng.random() < 0.5
        answer = f"{sur_a}-{sur_b}" if a_first else f"{sur_b}-{sur_a}"
        if held_out(answer) != evaluation:
            continue
        prompt = make_prompt(rng, (first_a, sur_a), (first_b, sur_b), a_first)
        found.setdefault(prompt, answer)
    return list(found.items())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


def char_share(answer: str, target: str) -> float:
    """The share of positions where reply and answer agree, over the longer of the two."""
    reply = answer.strip()
    longest = max(len(reply), len(target))
    if longest == 0:
        return 1.0
    return sum(x == y for x, y in zip(reply, target)) / longest


class DoubleBarrelledEnv(BaseEnv):
    """Hyphenate two surnames in the order asked (single turn, string map)."""

    name = "double_barrelled"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(5000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [char_share(c.text, item[1]) for c in group.completions]
        self.correct.extend(exact(c.text, item[1]) for c in group.completions)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=MAX_TOKENS, temperature=0.0)
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
    DoubleBarrelledEnv.cli()
