"""Count how many messages one person sent in a group chat (counting).

"Here's our group chat from this morning:\nTom: Who's driving?\nPriya: On my way\nLeah: Thanks
Priya!\nPriya: Just got here\nHow many messages did Priya send?" -> "2". A chat has five to nine
lines from three or four people, each line "Name: message"; the person asked about sent one to
five of them. Other people's messages sometimes mention that person by name, and Dan and Dana
can both be in one chat, so only the name before the colon counts. Chats come from a seeded
generator under three phrasings; those (with the person asked about) whose SHA-256 hash falls in
one tenth are held out for evaluation and never trained on. The answer is the count in digits.
Evaluation is exact (greedy). Training gives partial credit to a wrong count by how near it is:
0.6 one off, 0.3 two off, nothing further or for a reply that is not a number.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = ("Priya", "Tom", "Leah", "Sam", "Omar", "Jess", "Ben", "Nina", "Raj", "Kate", "Luca", "Mia", "Dan", "Dana")
MESSAGES = (
    "Morning all!", "Who's bringing snacks?", "Running late, sorry", "I can do Saturday", "See you there",
    "Has anyone seen the email?", "lol", "Same here", "What time again?", "On my way",
    "Can someone send the address?", "Sounds good", "I'll bring drinks", "Is it still raining?", "Count me in",
    "Not sure I can make it", "Parking is a nightmare", "Just got here", "Where are you all?", "Haha yes",
    "Thanks!", "Does 7 work?", "I'm in", "Any news?", "Nice one", "Sorry, missed that", "Who's driving?",
    "Tickets booked", "Should we order food?", "Good idea", "Ok", "See you soon", "Bus is packed today",
    "Did anyone find my scarf?", "Back in 5", "Table for how many?",
)
MENTIONS = ("Thanks {name}!", "{name}, are you coming?", "Did {name} reply?", "Ask {name}", "{name} has the keys", "Lol {name}")
PHRASINGS = (
    "Here's our group chat from this morning:\n{chat}\nHow many messages did {name} send?",
    "Quick question about this chat:\n{chat}\nHow many of these messages are from {name}?",
    "{chat}\nCount the messages {name} sent in the chat above.",
)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def make_item(rng: random.Random) -> tuple[str, str, int]:
    """(key, prompt, count)."""
    people = rng.sample(NAMES, rng.randint(3, 4))
    if "Dan" in people and "Dana" not in people and rng.random() < 0.5:
        people[people.index("Dan") - 1] = "Dana"
    name, others = people[0], people[1:]
    total = rng.randint(5, 9)
    count = rng.randint(1, min(5, total - 2))
    senders = [name] * count + [rng.choice(others) for _ in range(total - count)]
    rng.shuffle(senders)
    lines: list[str] = []
    used: set[str] = set()
    for sender in senders:
        if sender != name and rng.random() < 0.25:
            text = rng.choice(MENTIONS).format(name=name)
        else:
            text = rng.choice([m for m in MESSAGES if m not in used])
        used.add(text)
        lines.append(f"{sender}: {text}")
    chat = "\n".join(lines)
    key = f"{chat}#{name}"
    return key, rng.choice(PHRASINGS).format(chat=chat, name=name), count


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, int]]:
    rng = random.Random(f"messages_from:{seed}:{'eval' if evaluation else 'train'}")
    found: dict[str, tuple[str, str, int]] = {}
    while len(found) < count:
        item = make_item(rng)
        if held_out(item[0]) == evaluation:
            found.setdefault(item[0], item)
    return list(found.values())


def parse(answer: str) -> int | None:
    text = answer.strip().rstrip(".").strip()
    return int(text) if re.fullmatch(r"\d{1,3}", text) else None


def exact(answer: str, target: int) -> float:
    return 1.0 if parse(answer) == target else 0.0


def partial(answer: str, target: int) -> float:
    """1.0 when exact, 0.6 one off, 0.3 two off, else 0."""
    value = parse(answer)
    if value is None:
        return 0.0
    if value == target:
        return 1.0
    return max(0.0, 0.9 - 0.3 * abs(value - target))


MAX_TOKENS = 4


class MessagesFromConfig(BaseEnvConfig):
    train_size: int = Field(4000, gt=0, description="Distinct training chats generated.")
    eval_size: int = Field(200, gt=0, description="Distinct held-out chats evaluated.")


class MessagesFromEnv(BaseEnv):
    """Count one person's messages in a group chat (single turn, counting)."""

    name = "messages_from"
    env_config_cls = MessagesFromConfig

    def __init__(self, config: MessagesFromConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[MessagesFromConfig, list[APIServerConfig]]:
        config = MessagesFromConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=448, use_wandb=False)
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
    MessagesFromEnv.cli()
