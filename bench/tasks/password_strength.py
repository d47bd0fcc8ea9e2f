"""Rate a password as weak, medium or strong, answering through guided_choice (classification).

"Rate the password 'tulipgate7' under our rule: fewer than 8 characters is weak, 8 or more with
a digit is strong, anything else is medium." -> "strong". The rule: under 8 characters weak
(whatever it holds), 8 or more characters with at least one digit strong, 8 or more letters only
medium. Passwords are lowercase letters with digits in some, four to twelve characters long,
the three labels equally often, under three phrasings. A tenth of the passwords, chosen by a
SHA-256 hash, are held out (under all phrasings) for evaluation. Answers are constrained to the
three labels; a completion scores 1.0 for the right label and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["weak", "medium", "strong"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
TEMPLATES = (
    "Rate the password '{pw}' under our rule: fewer than 8 characters is weak, 8 or more with a digit is strong, anything else is medium.",
    "Is '{pw}' a weak, medium or strong password? (Under 8 characters: weak. 8+ characters including a digit: strong. Otherwise: medium.)",
    "Our sign-up form calls a password weak below 8 characters, strong at 8 or more with a number in it, and medium otherwise. What does it say for {pw}?",
)


def held_out(password: str) -> bool:
    return hashlib.sha256(password.encode()).digest()[0] % 10 == 0


def strength(password: str) -> str:
    if len(password) < 8:
        return "weak"
    return "strong" if any(ch in DIGITS for ch in password) else "medium"


def new_password(label: str, rng: random.Random) -> str:
    if label == "weak":
        chars = [rng.choice(LETTERS) for _ in range(rng.randint(4, 7))]
        for i in rng.sample(range(len(chars)), rng.randint(0, 2)):
            chars[i] = rng.choice(DIGITS)
        return "".join(chars)
    chars = [rng.choice(LETTERS) for _ in range(rng.randint(8, 12))]
    if label == "strong":
        # digits usually at the end, as people add them, sometimes elsewhere
        digits = rng.randint(1, 3)
        if rng.random() < 0.6:
            chars[-digits:] = [rng.choice(DIGITS) for _ in range(digits)]
        else:
            for i in rng.sample(range(len(chars)), digits):
                chars[i] = rng.choice(DIGITS)
    return "".join(chars)


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(password, prompt, label) for ``count`` distinct passwords, the labels taking turns."""
    rng = random.Random(f"password_strength:{seed}")
    found: dict[str, tuple[str, str]] = {}
    while len(found) < count:
        password = new_password(LABELS[len(found) % 3], rng)
        if password in found or held_out(password) != evaluation:
            continue
        found[password] = (rng.choice(TEMPLATES).format(pw=password), strength(password))
    return [(password, prompt, label) for password, (prompt, label) in found.items()]


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class PasswordStrengthEnv(BaseEnv):
    """Rate a password against a simple rule (single turn, guided_choice)."""

    name = "password_strength"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=8, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=8, guided_choice=LABELS, temperature=0.0)
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
    PasswordStrengthEnv.cli()
