"""Say which household bin a piece of rubbish goes in, answering through guided_choice
(classification).

"We sort our rubbish into paper, plastic, glass, metal and compost. Where should the empty jam
jar go?" -> "glass". About twenty everyday objects per bin (newspaper, yogurt pot, wine bottle,
tin can, banana peel, ...) are asked under five phrasings; a tenth of the objects, chosen by a
SHA-256 hash, are held out (under every phrasing) for evaluation, so the policy must know what
things are made of, not memorise prompts. Answers are constrained to the five bins; a
completion scores 1.0 for the right bin and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

LABELS = ["paper", "plastic", "glass", "metal", "compost"]
OBJECTS = {
    "paper": (
        "newspaper", "cardboard box", "cereal box", "magazine", "paper envelope", "printer paper", "toilet roll tube",
        "paper bag", "junk mail flyer", "shoebox", "old notebook", "catalogue", "greeting card", "tissue box",
        "delivery box", "paper gift tag", "brown paper wrapping", "old school worksheet", "cardboard sleeve", "phone book",
    ),
    "plastic": (
        "plastic water bottle", "shampoo bottle", "yogurt pot", "plastic milk bottle", "detergent bottle",
        "plastic food tray", "margarine tub", "plastic fruit punnet", "ketchup squeeze bottle", "plastic cup",
        "plastic takeaway container", "plastic clamshell", "mouthwash bottle", "plastic plant pot", "fizzy drink bottle",
        "hand soap bottle", "conditioner bottle", "plastic ice cream tub", "bleach bottle", "plastic salad box",
    ),
    "glass": (
        "glass jar", "wine bottle", "beer bottle", "jam jar", "pickle jar", "glass olive oil bottle", "perfume bottle",
        "pasta sauce jar", "glass milk bottle", "baby food jar", "whisky bottle", "glass juice bottle", "coffee jar",
        "honey jar", "vinegar bottle", "champagne bottle", "glass candle jar", "mayonnaise jar", "glass ketchup bottle",
        "glass yogurt pot",
    ),
    "metal": (
        "tin can", "soda can", "aluminium foil", "baked bean tin", "aerosol can", "pet food tin", "foil tray",
        "beer can", "tuna tin", "biscuit tin", "metal jar lid", "soup can", "coffee tin", "deodorant aerosol",
        "tea light casing", "sardine tin", "energy drink can", "chopped tomato tin", "foil pie dish", "shaving foam can",
    ),
    "compost": (
        "banana peel", "apple core", "coffee grounds", "eggshells", "tea bag", "orange peel", "potato peelings",
        "lettuce leaves", "grass clippings", "onion skins", "avocado skin", "bread crusts", "wilted flowers",
        "carrot tops", "melon rind", "corn husks", "fallen leaves", "strawberry tops", "cucumber ends", "mouldy lemon",
    ),
}
TEMPLATES = (
    "Which bin does the {thing} go in: paper, plastic, glass, metal or compost?",
    "We sort our rubbish into paper, plastic, glass, metal and compost. Where should the {thing} go?",
    "quick one - {thing}, which bin? (paper/plastic/glass/metal/compost)",
    "I'm clearing out the kitchen. Where does the {thing} belong: paper, plastic, glass, metal or compost?",
    "My flatmate keeps putting the {thing} in the wrong bin. Which one is right, paper, plastic, glass, metal or compost?",
)


def held_out(thing: str) -> bool:
    return hashlib.sha256(thing.encode()).digest()[0] % 10 == 0


def make_items(*, evaluation: bool) -> list[tuple[str, str, str]]:
    """(object, prompt, bin) for every object (held out or not) and phrasing."""
    items = []
    for label, things in OBJECTS.items():
        for thing in things:
            if held_out(thing) != evaluation:
                continue
            for template in TEMPLATES:
                items.append((thing, template.format(thing=thing), label))
    return items


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class RecycleBinEnv(BaseEnv):
    """Choose the recycling bin for a piece of rubbish (single turn, guided_choice)."""

    name = "recycle_bin"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(evaluation=False)
        self.eval_items = make_items(evaluation=True)
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
    RecycleBinEnv.cli()
