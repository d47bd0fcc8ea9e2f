"""Say whether a sentence is in the past, present or future tense (classification, guided_choice).

"Is this sentence past, present or future? \"My sister washed the car yesterday.\"" -> "past".
Sentences join a subject ("I", "we", "my sister", "the kids", ...) to a verb phrase ("wash the
car", "catch the train", ...) in one of six forms: simple past, past continuous ("was washing"),
simple present, present continuous ("is washing"), future with "will" and with "going to",
sometimes followed by a time phrase that fits the tense ("yesterday", "on Saturdays", "right
now", "next week"). A tenth of the subject-and-verb pairs, chosen by a SHA-256 hash, are held out
(in every form, time phrase and phrasing) for evaluation. Answers are constrained to the three
labels; a completion scores 1.0 for the right tense and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["past", "present", "future"]
# subject, is it third person singular, "be" in the present, "be" in the past
SUBJECTS = (
    ("I", False, "am", "was"), ("you", False, "are", "were"), ("we", False, "are", "were"),
    ("they", False, "are", "were"), ("she", True, "is", "was"), ("he", True, "is", "was"),
    ("my sister", True, "is", "was"), ("our neighbours", False, "are", "were"), ("the kids", False, "are", "were"),
    ("Tom", True, "is", "was"), ("my parents", False, "are", "were"), ("Grandad", True, "is", "was"),
)
# base, third person singular, past, -ing, rest of the phrase (no verb whose past equals its base)
VERBS = (
    ("walk", "walks", "walked", "walking", "the dog"), ("cook", "cooks", "cooked", "cooking", "dinner"),
    ("paint", "paints", "painted", "painting", "the fence"), ("wash", "washes", "washed", "washing", "the car"),
    ("watch", "watches", "watched", "watching", "a film"), ("play", "plays", "played", "playing", "tennis"),
    ("clean", "cleans", "cleaned", "cleaning", "the kitchen"), ("visit", "visits", "visited", "visiting", "Grandma"),
    ("fix", "fixes", "fixed", "fixing", "the bike"), ("plant", "plants", "planted", "planting", "tomatoes"),
    ("bake", "bakes", "baked", "baking", "bread"), ("write", "writes", "wrote", "writing", "a letter"),
    ("eat", "eats", "ate", "eating", "lunch outside"), ("drink", "drinks", "drank", "drinking", "green tea"),
    ("buy", "buys", "bought", "buying", "groceries"), ("sell", "sells", "sold", "selling", "the old sofa"),
    ("drive", "drives", "drove", "driving", "to work"), ("take", "takes", "took", "taking", "the bus"),
    ("catch", "catches", "caught", "catching", "the train"), ("sing", "sings", "sang", "singing", "in a choir"),
    ("swim", "swims", "swam", "swimming", "in the lake"), ("build", "builds", "built", "building", "a treehouse"),
    ("feed", "feeds", "fed", "feeding", "the cat"), ("call", "calls", "called", "calling", "the bank"),
    ("mow", "mows", "mowed", "mowing", "the lawn"), ("bring", "brings", "brought", "bringing", "snacks"),
    ("teach", "teaches", "taught", "teaching", "yoga"), ("make", "makes", "made", "making", "pancakes"),
    ("ride", "rides", "rode", "riding", "a horse"), ("pack", "packs", "packed", "packing", "the bags"),
    ("water", "waters", "watered", "watering", "the plants"), ("order", "orders", "ordered", "ordering", "pizza"),
    ("learn", "learns", "learned", "learning", "Spanish"), ("open", "opens", "opened", "opening", "the shop"),
    ("meet", "meets", "met", "meeting", "friends"), ("run", "runs", "ran", "running", "in the park"),
)
TIMES = {
    "past": ("", "", " yesterday", " last weekend", " on Sunday morning"),
    "past_cont": ("", "", " at eight last night", " when the phone rang"),
    "present": ("", "", " every day", " on Saturdays", " most evenings"),
    "present_cont": ("", "", " right now", " at the moment"),
    "will": ("", "", " tomorrow", " next week", " after lunch"),
    "going_to": ("", "", " tomorrow", " this weekend", " next month"),
}
TEMPLATES = (
    "Is this sentence past, present or future? \"{s}\"",
    "What tense is \"{s}\" - past, present or future?",
    "My son wrote \"{s}\" in his homework. Is that past, present or future tense?",
    "Grammar question: is \"{s}\" in the past, the present or the future?",
)


def held_out(subject: str, verb: str) -> bool:
    return hashlib.sha256(f"{subject}|{verb}".encode()).digest()[0] % 10 == 0


def sentence(subject: tuple[str, bool, str, str], verb: tuple[str, ...], form: str, time: str) -> str:
    who, third, be_now, be_then = subject
    base, s_form, past, ing, rest = verb
    phrase = {
        "past": past,
        "past_cont": f"{be_then} {ing}",
        "present": s_form if third else base,
        "present_cont": f"{be_now} {ing}",
        "will": f"will {base}",
        "going_to": f"{be_now} going to {base}",
    }[form]
    text = f"{who} {phrase} {rest}{time}."
    return text[0].upper() + text[1:]


def label(form: str) -> str:
    return {"past": "past", "past_cont": "past", "present": "present", "present_cont": "present"}.get(form, "future")


def make_item(subject: tuple[str, bool, str, str], verb: tuple[str, ...], rng: random.Random) -> tuple[str, str, str]:
    form = rng.choice(list(TIMES))
    text = sentence(subject, verb, form, rng.choice(TIMES[form]))
    return f"{subject[0]}|{verb[0]}", rng.choice(TEMPLATES).format(s=text), label(form)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class VerbTenseEnv(BaseEnv):
    """Name a sentence's tense: past, present or future (single turn, guided_choice)."""

    name = "verb_tense"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        pairs = [(s, v) for s in SUBJECTS for v in VERBS]
        self.train_pairs = [p for p in pairs if not held_out(p[0][0], p[1][0])]
        held = [p for p in pairs if held_out(p[0][0], p[1][0])]
        eval_rng = random.Random(f"verb_tense:eval:{self.config.seed}")
        # each held-out pair three times, in randomly drawn forms, time phrases and phrasings
        self.eval_items = [make_item(s, v, eval_rng) for s, v in held for _ in range(3)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        subject, verb = self.rng.choice(self.train_pairs)
        return make_item(subject, verb, self.rng)

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
    VerbTenseEnv.cli()
