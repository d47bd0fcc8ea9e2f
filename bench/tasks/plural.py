"""Make a noun plural: "Plural of box?" -> "boxes" (a string map with a spelling rule).

Items are common English nouns with regular plurals: most add "s", those ending in s, x, z, ch or
sh add "es", and those ending in a consonant and "y" change it to "ies". A tenth of the nouns,
chosen by a SHA-256 hash, are held out for evaluation. A completion scores 1.0 for the plural
and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NOUNS = """
cat dog bird tree house car book pen cup door window table chair lamp road river hill lake rock
star cloud apple pear plum bean seed leaf root flower garden field farm barn horse goat sheep cow
pig duck frog snake bear wolf lion tiger mouse rat ant bee fly moth shirt coat hat shoe sock ring
bell drum song word name town city road bridge tower wall gate key lock coin card map box fox tax
wax bus gas glass class dress kiss church bench branch lunch match watch beach coach brush dish
wish bush crash baby city lady party story berry cherry puppy pony army copy family hobby penny
diary daisy jelly boy toy key day tray valley monkey donkey turkey
""".split()


def plural(noun: str) -> str:
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def held_out(noun: str) -> bool:
    return hashlib.sha256(f"plural {noun}".encode()).digest()[0] % 10 == 0


class PluralEnv(BaseEnv):
    """Say a noun's plural (single turn)."""

    name = "plural"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=64, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        nouns = sorted(set(NOUNS))
        self.train_items = [n for n in nouns if not held_out(n)]
        self.eval_items = [n for n in nouns if held_out(n)]
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(noun: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Plural of {noun}?"}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [1.0 if c.text.strip() == plural(item) else 0.0 for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(noun: str) -> float:
            group = await self.policy.chat(self.prompt(noun), n=1, max_tokens=12, temperature=0.0)
            return 1.0 if group.completions[0].text.strip() == plural(noun) else 0.0

        scores = await gather_bounded((one(n) for n in self.eval_items), self.config.max_eval_workers)
        metrics = {"eval/percent_correct": sum(scores) / len(scores)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    PluralEnv.cli()
