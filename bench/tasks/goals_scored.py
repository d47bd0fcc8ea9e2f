"""Count one team's goals in a list of match notes (counting).

"Here are my notes from the match: 12' goal Rovers, 20' yellow card United, 34' corner Rovers,
51' goal United, 77' goal Rovers. How many goals did Rovers score?" -> "2". Each log has five to
nine events (goals, corners, cards, free kicks, substitutions, offsides) for two teams, written
in one of three styles, and the question asks about one team; prompts come in several phrasings.
A tenth of the items, chosen by a SHA-256 hash of the events and the team asked about, are held
out for evaluation. The first number in the reply (digits, a word up to ten, or "none") is the answer; it
scores 1.0 when it is the count and 0 otherwise.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup

TEAMS = ("Rovers", "United", "City", "Athletic", "Wanderers", "Rangers", "Albion", "Town", "Villa", "Olympic", "Dynamo", "Harriers")
EVENTS = ("goal", "goal", "goal", "corner", "yellow card", "free kick", "substitution", "offside")
TEMPLATES = (
    "Here are my notes from the match:\n{log}\nHow many goals did {team} score?",
    "I jotted this down at my son's game: {log}. How many did {team} score?",
    "Match log: {log}. What's the goal count for {team}?",
    "Can you count {team}'s goals from this? {log}",
    "My notes from Saturday's game are a bit messy:\n{log}\nSo how many goals for {team}? Just the number.",
)
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
FIRST_NUMBER = re.compile(r"\b(\d+|none|" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)


def held_out(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % 10 == 0


def write_log(events: list[tuple[int, str, str]], style: int, multiline: bool) -> str:
    if style == 0:
        lines = [f"{m}' {e} {t}" for m, e, t in events]
    elif style == 1:
        lines = [f"{t} {e} ({m} min)" for m, e, t in events]
    else:
        lines = [f"{m} min - {t} - {e}" for m, e, t in events]
    return "\n".join(lines) if multiline else ", ".join(lines)


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[str, str, str]]:
    """(key, prompt, answer) items, held out or not."""
    rng = random.Random(f"goals_scored:{seed}")
    found: dict[str, tuple[str, str, str]] = {}
    while len(found) < count:
        teams = rng.sample(TEAMS, 2)
        size = rng.randint(5, 9)
        minutes = sorted(rng.sample(range(1, 91), size))
        events = [(m, rng.choice(EVENTS), rng.choice(teams)) for m in minutes]
        team = rng.choice(teams)
        key = team + "|" + ";".join(f"{m},{e},{t}" for m, e, t in events)
        if held_out(key) != evaluation:
            continue
        answer = str(sum(e == "goal" and t == team for _, e, t in events))
        template = rng.choice(TEMPLATES)
        log = write_log(events, rng.randrange(3), multiline="\n{log}\n" in template)
        found.setdefault(key, (key, template.format(log=log, team=team), answer))
    return list(found.values())


def score(text: str, answer: str) -> float:
    match = FIRST_NUMBER.search(text)
    if not match:
        return 0.0
    word = match.group(1).lower().replace("none", "zero")
    value = str(NUMBER_WORDS.index(word)) if word in NUMBER_WORDS else str(int(word))
    return 1.0 if value == answer else 0.0


class GoalsScoredEnv(BaseEnv):
    """Count a team's goals in match notes (counting)."""

    name = "goals_scored"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=512, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    @staticmethod
    def prompt(item: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": item[1]}]

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        from hermes_rl_mcp.sdk.policy_client import scored_group

        group = await self.policy.chat(self.prompt(item), n=self.config.group_size, max_tokens=6)
        scores = [score(c.text, item[2]) for c in group.completions]
        self.correct.extend(scores)
        return scored_group(group, scores), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        from hermes_rl_mcp.sdk.concurrency import gather_bounded

        async def one(item: Any) -> float:
            group = await self.policy.chat(self.prompt(item), n=1, max_tokens=6, temperature=0.0)
            return score(group.completions[0].text, item[2])

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
    GoalsScoredEnv.cli()
