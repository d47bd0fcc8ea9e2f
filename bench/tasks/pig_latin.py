"""Translate an English word into Pig Latin (string map).

The prompt is 'Translate the word "string" into Pig Latin. Reply with just the translated
word.' and the answer follows the usual rules: a word that starts with a vowel gets "way" added
("apple" -> "appleway"); otherwise the consonants before the first vowel move to the end and
"ay" is added ("string" -> "ingstray", "dog" -> "ogday").
Words are a few hundred common lowercase English words (words where "y" acts as the first
vowel, and "qu" words, are left out so the rule is unambiguous). A tenth of the words, chosen
by CRC-32, are held out for evaluation. A reply scores 1.0 when, stripped and lowercased, it
is exactly the translation, and 0 otherwise.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

VOWELS = "aeiou"
WORDS = """
apple orange banana cherry grape lemon melon peach pear plum bread butter cheese cake candy
sugar salt pepper water juice milk coffee honey soup rice pasta pizza salad onion garlic
carrot potato tomato bean corn egg dog cat bird fish horse mouse rabbit tiger lion bear wolf
fox deer goat sheep cow pig duck goose frog snake whale shark eagle owl crow spider ant bee
house home door window floor wall roof table chair bed desk lamp clock mirror carpet garden
street road bridge river lake ocean island mountain hill forest tree flower grass leaf rock
stone sand cloud rain snow wind storm thunder light shadow star moon planet earth fire smoke
school teacher student book pencil paper letter story poem song music dance game ball toy
friend family mother father sister brother uncle aunt child baby king queen prince knight
castle tower city town village farm market shop store bank office hospital doctor nurse
train plane boat ship truck bicycle wagon engine wheel ticket money coin wallet basket
bottle glass plate spoon fork knife cup bowl pot pan oven kitchen bathroom bedroom
morning evening night summer winter spring autumn season holiday party gift card picture
camera phone computer button screen letter number shape circle square color green black
white brown purple silver golden happy sad angry quick slow small large bright dark warm
cold soft hard sweet sour bitter clean dirty empty heavy simple strong weak brave proud
jump run walk swim climb throw catch write read sing speak listen think dream sleep smile
laugh cry shout open close build break carry drive ride fly grow plant cook bake wash paint
drink eat play work help learn teach travel visit wander whisper answer ask order end
under over inside outside ice iron ink igloo insect island elbow eagle echo engine elephant
envelope ocean olive otter oven owl umbrella uncle unit apron arrow anchor artist acorn
chair cheese chicken church thumb thunder three throne shoe shirt sheep shell smile smoke
snail snack stamp stick stone stove street string strip scream school sprout splash glove
globe grape green plant plate plum blanket blue brick bridge crab crown drum dress flag
flame frost fruit trick truck twig twin swan sweater skate sketch sleeve slide
""".split()


def translate(word: str) -> str:
    if word[0] in VOWELS:
        return word + "way"
    first_vowel = next(i for i, ch in enumerate(word) if ch in VOWELS)
    return word[first_vowel:] + word[:first_vowel] + "ay"


def usable(word: str) -> bool:
    """Words whose Pig Latin is unambiguous: a vowel a/e/i/o/u, no 'y' acting as the first
    vowel, no 'qu' cluster at the start."""
    if not any(ch in VOWELS for ch in word) or word.startswith("qu"):
        return False
    first_vowel = next(i for i, ch in enumerate(word) if ch in VOWELS)
    return "y" not in word[1:first_vowel]


def held_out(word: str) -> bool:
    return zlib.crc32(word.encode()) % 10 == 0


def all_items() -> list[tuple[str, str]]:
    words = sorted({w for w in WORDS if usable(w)})
    return [(w, translate(w)) for w in words]


def score(answer: str, target: str) -> float:
    text = answer.strip().strip(".\"'").strip().lower()
    return 1.0 if text == target else 0.0


class PigLatinEnv(BaseEnv):
    """Translate a word into Pig Latin (single turn, string map)."""

    name = "pig_latin"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=160, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        items = all_items()
        self.train_items = [i for i in items if not held_out(i[0])]
        self.eval_items = [i for i in items if held_out(i[0])]
        self.rng = random.Random(self.config.seed)
        self.max_tokens = max(len(t) for _, t in items) + 4

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": f'Translate the word "{item[0]}" into Pig Latin. Reply with just the translated word.'}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=self.max_tokens)
        scores = [score(c.text, item[1]) for c in group.completions]
        self.correct.extend(1.0 if s == 1.0 else 0.0 for s in scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=self.max_tokens, temperature=0.0)
            return score(group.completions[0].text, item[1])

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
    PigLatinEnv.cli()
