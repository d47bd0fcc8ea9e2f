"""Sort an email into a folder by its subject line, answering through guided_choice (classification).

"Which folder should this go in? Subject: Your order #48213 has been dispatched" -> "shopping".
The folders are work, family, shopping and spam. Subject lines come from eight patterns per
folder with names, products, days and numbers filled in (thousands of subjects), asked under
three phrasings; a tenth of the subjects, chosen by a SHA-256 hash, are held out for evaluation,
so the policy must go by what the email is about, not memorise subjects. Answers are constrained
to the four labels; a completion scores 1.0 for the right folder and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["work", "family", "shopping", "spam"]
SLOTS = {
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    "first": ("Anna", "Ben", "Chris", "Dave", "Emma", "Fiona", "Gary", "Helen", "Ian", "Jess", "Karen", "Liam",
              "Mark", "Nicola", "Paul", "Rachel", "Steve", "Tina"),
    "team": ("marketing", "sales", "finance", "design", "product", "IT", "HR", "operations"),
    "project": ("Apollo", "website redesign", "Q3 forecast", "office move", "client onboarding", "Phoenix",
                "budget", "supplier review"),
    "role": ("junior analyst", "office manager", "software engineer", "sales lead", "designer", "accountant"),
    "relative": ("Mum", "Dad", "Grandma", "Grandad", "Auntie Sue", "Uncle Pete", "cousin Amy", "Nana"),
    "kid": ("Ella", "Max", "Jake", "Lucy", "Ollie", "Mia", "Sam", "Rosie"),
    "kid_event": ("birthday party", "school play", "sports day", "swimming gala", "first day at school", "nativity"),
    "family_event": ("birthday", "wedding anniversary", "retirement party", "70th", "garden party", "housewarming"),
    "hour": tuple(str(n) for n in range(1, 13)),
    "product": ("running shoes", "coffee machine", "phone case", "winter coat", "desk lamp", "headphones",
                "yoga mat", "kettle", "backpack", "air fryer"),
    "shop": ("Boots", "IKEA", "Argos", "John Lewis", "Zara", "Currys", "Decathlon", "Tesco"),
    "prize": ("iPhone", "cruise", "gift card", "laptop", "luxury watch", "holiday"),
    "amount": ("$5,000", "$10,000", "$50,000", "$250,000", "$1,000,000", "$3.5 million"),
    "city": ("your area", "London", "Leeds", "Bristol", "Glasgow", "Cardiff", "Manchester", "Belfast"),
    "n": tuple(str(n) for n in range(2, 31)),
    "order": tuple(str(n) for n in range(10000, 99999, 977)),
    "q": ("1", "2", "3", "4"),
}
PATTERNS = {
    "work": (
        "Minutes from {day}'s {team} meeting",
        "Q{q} {team} report - please review before {weekday}",
        "Deadline moved: {project} now due {weekday}",
        "Interview schedule for the {role} position - {first} to confirm",
        "Reminder: timesheets for week {n} are due {weekday}",
        "{project} kick-off call on {weekday} at {hour}",
        "{first}, can you cover the {team} stand-up on {weekday}?",
        "Updated slides for the {project} presentation from {first}",
    ),
    "family": (
        "Photos from {kid}'s {kid_event}",
        "{relative} lands at {hour} o'clock on {day} - who's picking up?",
        "Sunday lunch at {relative}'s at {hour}?",
        "Can you collect {kid} from school on {weekday}?",
        "{relative}'s {family_event} - ideas for a present?",
        "{kid} has a temperature, staying home {weekday}",
        "{relative} is coming to stay on {day}",
        "{kid}'s {kid_event} is on {day} - can {relative} come?",
    ),
    "shopping": (
        "Your order #{order} has been dispatched",
        "Good news: the {product} is back in stock at {shop}",
        "Your {shop} receipt for order #{order}",
        "{shop}: delivery slot confirmed for {day}",
        "How was your {product}? Leave a review for {shop}",
        "{shop}: your click and collect order #{order} is ready",
        "Refund processed for your {product}",
        "{n}% off everything at {shop} this weekend",
    ),
    "spam": (
        "URGENT {first}!!! Claim your {amount} prize now",
        "Congratulations {first}, you have been selected for a FREE {prize}",
        "Dear winner, your inheritance of {amount} is waiting",
        "Lose {n} kg in {n} days with this one weird trick",
        "{first}, your account has been SUSPENDED - verify your password within {n} hours",
        "Hot singles in {city} want to meet you",
        "You won a {prize}!!! Click here before midnight",
        "Make {amount} a month working from home, {first}",
    ),
}
TEMPLATES = (
    "Which folder should this email go in: work, family, shopping or spam?\nSubject: {subject}",
    "I'm tidying my inbox. An email with the subject \"{subject}\" - does that belong in work, family, shopping or spam?",
    "Help me file this one. Subject line: {subject}\nWork, family, shopping or spam?",
)


def held_out(subject: str) -> bool:
    return hashlib.sha256(subject.encode()).digest()[0] % 10 == 0


def fill(pattern: str, rng: random.Random) -> str:
    out = pattern
    while "{" in out:
        start = out.index("{")
        end = out.index("}", start)
        out = out[:start] + rng.choice(SLOTS[out[start + 1:end]]) + out[end + 1:]
    return out


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(subject, prompt, folder) for ``count`` distinct subjects of one split, folders balanced."""
    rng = random.Random(f"email_folder:{seed}:{evaluation}")
    found: dict[str, tuple[str, str, str]] = {}
    attempts = 0
    while len(found) < count and attempts < 100 * count:
        attempts += 1
        folder = LABELS[len(found) % len(LABELS)]
        subject = fill(rng.choice(PATTERNS[folder]), rng)
        if held_out(subject) != evaluation or subject in found:
            continue
        found[subject] = (subject, rng.choice(TEMPLATES).format(subject=subject), folder)
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class EmailFolderEnv(BaseEnv):
    """Say which folder an email belongs in from its subject (single turn, guided_choice)."""

    name = "email_folder"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=256, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(4000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=10, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=10, guided_choice=LABELS, temperature=0.0)
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
    EmailFolderEnv.cli()
