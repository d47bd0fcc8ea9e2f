"""Tell whether a contact detail is a phone number, an email or a website (classification, guided_choice).

"Someone wrote maya.chen@gmail.com on the sign-up sheet. Is that a phone number, an email or a
website?" -> "email".
Phone numbers come in four everyday formats, emails and web addresses are built from random
names and words in several shapes; each is asked under three phrasings. A tenth of the contact
details, chosen by a SHA-256 hash, are held out (under all phrasings) for evaluation, so the
policy must go by the shape of the text, not memorise it. Answers are constrained to the three
labels; a completion scores 1.0 for the right label and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["phone", "email", "website"]
FIRST = (
    "anna", "ben", "carlos", "dana", "emma", "felix", "grace", "hugo", "ivy", "jack", "kim", "leo",
    "maya", "nina", "omar", "priya", "quinn", "rosa", "sam", "tara", "victor", "wendy", "yusuf", "zoe",
)
LAST = ("lee", "smith", "garcia", "khan", "brown", "novak", "silva", "chen", "jones", "patel", "murphy", "rossi", "wong", "baker")
PROVIDERS = ("gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "icloud.com")
ADJECTIVES = ("sunny", "maple", "blue", "river", "pixel", "green", "happy", "bright", "corner", "garden", "harbor", "stone", "cloud", "little", "urban", "north")
NOUNS = ("bakery", "books", "studio", "designs", "plumbing", "travel", "dental", "florist", "cafe", "fitness", "repairs", "photo", "tech", "crafts")
TEMPLATES = (
    "Is {contact} a phone number, an email address or a website?",
    "Someone wrote {contact} on the sign-up sheet. Is that a phone number, an email or a website?",
    "What kind of contact detail is {contact}: phone, email or website?",
)


def held_out(contact: str) -> bool:
    return hashlib.sha256(contact.encode()).digest()[0] % 10 == 0


def phone(rng: random.Random) -> str:
    a, b = (str(rng.randint(2, 9)) + f"{rng.randint(0, 99):02d}" for _ in range(2))
    c = f"{rng.randint(0, 9999):04d}"
    return rng.choice(("({a}) {b}-{c}", "{a}-{b}-{c}", "{a}.{b}.{c}", "{a} {b} {c}")).format(a=a, b=b, c=c)


def email(rng: random.Random) -> str:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    user = rng.choice((f"{first}.{last}", f"{first}{last}", f"{first}{rng.randint(1, 99)}", f"{first[0]}{last}"))
    domain = rng.choice((rng.choice(PROVIDERS), f"{rng.choice(ADJECTIVES)}{rng.choice(NOUNS)}.com"))
    return f"{user}@{domain}"


def website(rng: random.Random) -> str:
    adjective, noun = rng.choice(ADJECTIVES), rng.choice(NOUNS)
    return rng.choice((
        f"www.{adjective}{noun}.com",
        f"{adjective}-{noun}.co.uk",
        f"https://{adjective}{noun}.org",
        f"www.{adjective}{noun}.net/contact",
        f"{adjective}{noun}.com",
    ))


MAKERS = {"phone": phone, "email": email, "website": website}


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """``count`` distinct (contact, prompt, label) items on the chosen side of the split."""
    rng = random.Random(f"contact_type:{seed}")
    found: dict[tuple[str, str, str], None] = {}
    while len(found) < count:
        label = rng.choice(LABELS)
        contact = MAKERS[label](rng)
        if held_out(contact) != evaluation:
            continue
        found[(contact, rng.choice(TEMPLATES).format(contact=contact), label)] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class ContactTypeEnv(BaseEnv):
    """Say whether a contact detail is a phone number, email or website (single turn, guided_choice)."""

    name = "contact_type"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(2000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=9, guided_choice=LABELS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=9, guided_choice=LABELS, temperature=0.0)
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
    ContactTypeEnv.cli()
