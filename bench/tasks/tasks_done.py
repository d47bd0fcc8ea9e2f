"""Count the ticked items on a to-do list (counting).

"Here's my to-do list for today:" followed by the lines "[x] laundry", "[ ] call mum" and
"[x] buy milk", one a line, then "How many things have I already done?" -> "2".
Each list holds three to seven different chores, each ticked "[x]" or open "[ ]" at random,
asked under three phrasings; answers run from 0 to 7. A tenth of the lists, chosen by a SHA-256
hash of their sorted lines, are held out (in every order and phrasing) for evaluation, so the
policy must count the ticks, not memorise lists. A completion scores 1.0 when it is exactly the
number of ticked chores, in digits, and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

CHORES = (
    "laundry", "dishes", "call mum", "buy milk", "pay rent", "walk the dog", "water the plants",
    "email Sarah", "vacuum", "take out the trash", "book dentist", "return library books",
    "clean the bathroom", "mow the lawn", "pick up parcel", "fix the bike", "iron shirts",
    "make the bed", "cook dinner", "pay electricity bill", "renew passport", "wash the car",
    "go to the gym", "post the letter",
)
TEMPLATES = (
    "Here's my to-do list for today:\n{list}\nHow many things have I already done?",
    "{list}\nThat's my checklist, the ticked ones are done. How many are ticked?",
    "How many of these chores are checked off?\n{list}",
)
MAX_TOKENS = 4


def held_out(lines: list[str]) -> bool:
    return hashlib.sha256("\n".join(sorted(lines)).encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """``count`` distinct (list, prompt, count) items on the chosen side of the split."""
    rng = random.Random(f"tasks_done:{seed}")
    found: dict[tuple[str, str, str], None] = {}
    while len(found) < count:
        chores = rng.sample(CHORES, rng.randint(3, 7))
        ticks = [rng.random() < 0.5 for _ in chores]
        lines = [f"[{'x' if tick else ' '}] {chore}" for chore, tick in zip(chores, ticks)]
        if held_out(lines) != evaluation:
            continue
        prompt = rng.choice(TEMPLATES).format(list="\n".join(lines))
        found[("\n".join(sorted(lines)), prompt, str(sum(ticks)))] = None
    return list(found)


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip() == target else 0.0


class TasksDoneEnv(BaseEnv):
    """Say how many chores on a to-do list are ticked off (single turn)."""

    name = "tasks_done"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=320, use_wandb=False)
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

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=MAX_TOKENS)
        scores = [exact(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
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
    TasksDoneEnv.cli()
