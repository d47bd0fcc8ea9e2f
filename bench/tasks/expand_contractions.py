"""Rewrite an everyday message with its contractions written out in full (string map).

"Rewrite this without contractions: We're out of milk, so I'll pick some up on the way home."
-> "We are out of milk, so I will pick some up on the way home." Messages come from about thirty
everyday templates (running late, a broken boiler, a parcel that hasn't arrived...) with their
slots filled in every way, each holding one to three contractions ("can't" -> "cannot", "won't"
-> "will not", "let's" -> "let us"; only contractions with one reading are used), under three
phrasings of the request. A tenth of the messages, chosen by a SHA-256 hash of the message, are
held out (under all phrasings) for evaluation, so the policy must learn the expansions, not the
messages. Evaluation is exact (greedy). Training gives partial credit: the difflib similarity of
the reply to the expanded message, so a reply that copies most of the message and expands some
of it scores between a bare copy and the right answer.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import random
import re
from typing import Any

from pydantic import Field

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CONTRACTIONS = {
    "I'm": "I am", "you're": "you are", "we're": "we are", "they're": "they are", "it's": "it is",
    "that's": "that is", "there's": "there is", "don't": "do not", "doesn't": "does not",
    "didn't": "did not", "can't": "cannot", "won't": "will not", "isn't": "is not", "aren't": "are not",
    "wasn't": "was not", "weren't": "were not", "haven't": "have not", "hasn't": "has not",
    "I'll": "I will", "you'll": "you will", "we'll": "we will", "she'll": "she will", "they'll": "they will",
    "I've": "I have", "we've": "we have", "they've": "they have", "shouldn't": "should not",
    "couldn't": "could not", "wouldn't": "would not", "let's": "let us",
}

NAMES = ("Anna", "Maya", "Priya", "Sofia", "Grace", "Chloe", "Lucy", "Zara")
TIMES = ("6:15", "7:40", "8:30", "9:45", "noon", "half past four", "six")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

# (message with contractions and {slots}, {slot: values})
TEMPLATES: tuple[tuple[str, dict[str, tuple[str, ...]]], ...] = (
    ("I'm running about {n} minutes late, so don't wait for me.", {"n": ("5", "10", "15", "20", "25", "30", "40")}),
    ("We're out of {food}, so I'll pick some up on the way home.",
     {"food": ("milk", "bread", "eggs", "coffee", "butter", "rice", "pasta", "bananas", "cheese", "tea bags")}),
    ("The {vehicle} isn't coming until {time}, so we'll walk.", {"vehicle": ("bus", "train", "tram", "taxi", "shuttle"), "time": TIMES}),
    ("I can't find my {thing}. Have you seen it anywhere?",
     {"thing": ("wallet", "phone", "umbrella", "library card", "charger", "passport", "blue scarf", "bike lock")}),
    ("{name} didn't get your message, so she'll call you after {time}.", {"name": NAMES, "time": TIMES}),
    ("The {appliance} doesn't work again. Let's call the landlord.",
     {"appliance": ("washing machine", "dishwasher", "boiler", "fridge", "oven", "doorbell", "heater", "shower")}),
    ("We haven't booked the {thing} yet, and prices aren't going down.",
     {"thing": ("hotel", "flights", "train tickets", "rental car", "campsite", "ferry")}),
    ("They're stuck in traffic, so they won't make it by {time}.", {"time": TIMES}),
    ("You shouldn't leave the {thing} on overnight.", {"thing": ("heater", "oven", "iron", "lights", "fan", "electric blanket")}),
    ("The {item} hasn't arrived yet, and the tracking page doesn't show anything.",
     {"item": ("parcel", "new lamp", "birthday present", "replacement card", "order", "book")}),
    ("I've already paid for the {thing}, so you don't owe me anything.",
     {"thing": ("tickets", "taxi", "pizza", "groceries", "petrol", "parking", "drinks")}),
    ("It's {weather}.",
     {"weather": ("raining outside, so don't forget your umbrella", "freezing outside, so don't forget your gloves",
                  "really windy outside, so don't forget your coat", "snowing outside, so don't forget your boots",
                  "sunny outside, so don't forget your sunglasses", "cold outside, so don't forget your hat")}),
    ("We'll be at the {place} by {time} if the kids aren't too slow.",
     {"place": ("park", "beach", "zoo", "museum", "pool", "cinema"), "time": TIMES}),
    ("{name} wasn't feeling well, so she couldn't come to {event}.",
     {"name": NAMES, "event": ("practice", "the party", "work", "choir", "the meeting", "class")}),
    ("That's the last {thing}, so please don't eat it.",
     {"thing": ("slice of cake", "cookie", "yoghurt", "apple", "croissant", "piece of pizza")}),
    ("There's a leak under the {place}, and I can't reach the plumber.",
     {"place": ("sink", "bath", "washing machine", "dishwasher", "stairs")}),
    ("The kids aren't ready yet, so we'll leave at {time}.", {"time": TIMES}),
    ("I wouldn't worry about the {thing}; it's only a small scratch.",
     {"thing": ("car", "phone screen", "table", "door", "bike", "guitar")}),
    ("You're welcome to stay for dinner if you don't mind {food}.",
     {"food": ("leftovers", "soup", "curry", "pasta again", "fish", "eating late")}),
    ("They've moved the meeting to {day}, but I haven't told {name} yet.", {"day": DAYS, "name": NAMES}),
    ("We didn't order the {dish}, so we shouldn't have to pay for it.",
     {"dish": ("garlic bread", "salad", "dessert", "second pizza", "wine", "side of chips")}),
    ("My {relative} won't be home until {time}, so you'll have to wait.",
     {"relative": ("mum", "dad", "brother", "sister", "flatmate", "husband", "wife"), "time": TIMES}),
    ("The shop wasn't open, so I couldn't get the {thing}.",
     {"thing": ("batteries", "birthday card", "stamps", "paint", "light bulbs", "dog food")}),
    ("Let's meet outside the {place}; it's easier to find.", {"place": ("station", "library", "cinema", "bank", "town hall", "museum")}),
    ("Your {thing} is ready, but we can't deliver it until {day}.",
     {"thing": ("sofa", "new bed", "wardrobe", "fridge", "bookcase", "desk"), "day": DAYS}),
    ("We weren't expecting so many guests, so we've run out of {thing}.",
     {"thing": ("chairs", "plates", "glasses", "cake", "napkins", "ice")}),
    ("I haven't seen {name} since {month}. Is she okay?",
     {"name": NAMES, "month": ("January", "March", "May", "the summer", "Christmas", "the wedding")}),
    ("They're selling tickets at the door, so you don't need to book.", {}),
    ("I'll be working from home on {day} because the trains aren't running.", {"day": DAYS}),
    ("You'll love the {place}; we've been there twice and it's never busy.",
     {"place": ("cafe", "bakery", "beach", "market", "pub", "gallery")}),
    ("I didn't know {name} was coming, so there isn't a present for her.", {"name": NAMES}),
)

PHRASINGS = (
    "Rewrite this without contractions: {text}",
    "Please write this message out in full, with no contractions:\n{text}",
    "Expand the contractions in this sentence: {text}",
)

_PATTERN = re.compile(r"\b(" + "|".join(re.escape(c) for c in sorted(CONTRACTIONS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_LOWER = {c.lower(): e for c, e in CONTRACTIONS.items()}


def expand(text: str) -> str:
    """The message with every contraction written out, keeping a capital first letter."""

    def one(match: re.Match[str]) -> str:
        word = match.group(0)
        full = _LOWER[word.lower()]
        return full[0].upper() + full[1:] if word[0].isupper() else full

    return _PATTERN.sub(one, text)


def all_messages() -> list[str]:
    messages: dict[str, None] = {}
    for template, slots in TEMPLATES:
        keys = sorted(slots)
        for values in itertools.product(*(slots[k] for k in keys)):
            messages[template.format(**dict(zip(keys, values)))] = None
    return list(messages)


def held_out(message: str) -> bool:
    return hashlib.sha256(message.encode()).digest()[0] % 10 == 0


def all_items() -> list[tuple[str, str, str]]:
    """(message, prompt, expanded message) for every message and phrasing."""
    return [(m, p.format(text=m), expand(m)) for m in all_messages() for p in PHRASINGS]


def normalise(answer: str) -> str:
    return " ".join(answer.split())


def exact(answer: str, target: str) -> float:
    return 1.0 if normalise(answer) == target else 0.0


def partial(answer: str, target: str) -> float:
    """1.0 when exact, else how alike the reply and the expanded message are (below 1)."""
    answer = normalise(answer)
    if answer == target:
        return 1.0
    return 0.95 * difflib.SequenceMatcher(None, answer, target, autojunk=False).ratio()


MAX_TOKENS = max(len(expand(m)) for m in all_messages()) + 8


class ExpandContractionsConfig(BaseEnvConfig):
    eval_size: int = Field(240, gt=0, description="Held-out prompts evaluated (a fixed sample of the held-out messages).")


class ExpandContractionsEnv(BaseEnv):
    """Write out the contractions of an everyday message in full (single turn, string map)."""

    name = "expand_contractions"
    env_config_cls = ExpandContractionsConfig

    def __init__(self, config: ExpandContractionsConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[ExpandContractionsConfig, list[APIServerConfig]]:
        config = ExpandContractionsConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=320, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        eval_items = [i for i in items if held_out(i[0])]
        if len(eval_items) > self.config.eval_size:
            eval_items = random.Random(f"expand_contractions:eval:{self.config.seed}").sample(eval_items, self.config.eval_size)
        self.eval_items = eval_items
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
    ExpandContractionsEnv.cli()
