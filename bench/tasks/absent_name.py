"""Name the one team member who missed a meeting (selection).

"Our team is Ana, Ben, Cara and Dev. Ben, Dev and Ana came to the meeting. Who missed it?" ->
"Cara". Teams have three to five people drawn from a list of first names; everyone but one is
listed as present, in a shuffled order. A tenth of the teams (the set of names together with
who is absent), chosen by a SHA-256 hash, are held out for evaluation, so the policy must
compare the two lists rather than memorise teams. A completion scores 1.0 when it is the
missing name and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

NAMES = (
    "Ana", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivan", "Jade", "Kai", "Lena",
    "Milo", "Nora", "Omar", "Pia", "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera", "Wes", "Yuki",
    "Zoe", "Leo", "Maya", "Noah", "Iris", "Tom", "Ruth", "Max", "Ella", "Finn", "Gwen", "Hugo",
)
TEMPLATES = (
    "Our team is {team}. {present} came to the meeting. Who missed it?",
    "The book club has {team}. Tonight I saw {present}. Who didn't come?",
    "Invited to dinner: {team}. Arrived so far: {present}. Who are we still waiting for?",
)


def join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def key(team: list[str], absent: str) -> str:
    return ",".join(sorted(team)) + "|" + absent


def held_out(team: list[str], absent: str) -> bool:
    return hashlib.sha256(key(team, absent).encode()).digest()[0] % 10 == 0


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str]]:
    """(prompt, absent name), distinct prompts on the requested side of the split."""
    rng = random.Random(f"absent_name:{seed}")
    found: dict[str, tuple[str, str]] = {}
    while len(found) < count:
        team = rng.sample(NAMES, rng.randint(3, 5))
        absent = rng.choice(team)
        if held_out(team, absent) != evaluation:
            continue
        present = [n for n in team if n != absent]
        rng.shuffle(present)
        prompt = rng.choice(TEMPLATES).format(team=join(team), present=join(present))
        found.setdefault(prompt, (prompt, absent))
    return list(found.values())


def exact(answer: str, target: str) -> float:
    return 1.0 if answer.strip().rstrip(".") == target else 0.0


class AbsentNameEnv(BaseEnv):
    """Pick out the person missing from a list (single turn, selection)."""

    name = "absent_name"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(200, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[0]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=12)
        scores = [exact(c.text, item[1]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=12, temperature=0.0)
            return exact(group.completions[0].text, item[1])

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
    AbsentNameEnv.cli()
