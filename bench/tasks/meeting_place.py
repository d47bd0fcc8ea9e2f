"""Keep track of where a meeting was arranged, through a change of plan (multi-turn).

"Let's meet at Maple Cafe tomorrow. Sound good?" ... "Wait, let's make it Union Library rather
than Maple Cafe." ... "So where are we meeting? Just the name of the place." -> "Union Library".
The user proposes a place; in a little over half the conversations a second message moves the meeting to
another place (mentioned before or after the old one, so the last name said is not always the
answer); the last message asks where the meeting is. Places are a street-or-area name and a kind
of venue ("Riverside Bakery"). The episode returns 1.0 when the final reply is exactly the place
agreed last and 0 otherwise; the other replies earn nothing. A tenth of the (first place, new
place) plans, chosen by a SHA-256 hash, are held out for evaluation, so the policy must follow
the conversation, not learn an answer per plan.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

AREAS = (
    "Maple", "Harbor", "Riverside", "Union", "Hillside", "Oakwood", "Lakeside", "Central", "Westgate",
    "Greenwood", "Bayview", "Kingston", "Victoria", "Elmwood", "Fairview", "Brookside", "Sunset", "Main Street",
)
VENUES = ("Cafe", "Library", "Station", "Diner", "Bakery", "Market", "Cinema", "Park", "Mall")
PLACES = tuple(f"{area} {venue}" for area in AREAS for venue in VENUES)
OPENINGS = (
    "Let's meet at {place} tomorrow. Sound good?",
    "How about we meet at {place} on Saturday?",
    "I'll see you at {place} after work, okay?",
)
CHANGES = (
    "Actually, change of plan: let's meet at {new} instead.",
    "Sorry, {old} turns out to be closed. Can we do {new} instead?",
    "Wait, let's make it {new} rather than {old}.",
)
QUESTIONS = (
    "So where are we meeting? Just the name of the place.",
    "Remind me, where did we agree to meet? Only the place name, please.",
    "Where should I go to meet you? Just tell me the place.",
)
MAX_TOKENS = 24

# (first place, new place or "" if the plan stays, opening, change, question) -- the last three
# index the phrasings, so one item is one fixed conversation
Plan = tuple[str, str, int, int, int]


def held_out(first: str, new: str) -> bool:
    return hashlib.sha256(f"{first}|{new}".encode()).digest()[0] % 10 == 0


def make_plans(count: int, *, seed: int, evaluation: bool) -> list[Plan]:
    rng = random.Random(f"meeting_place:{seed}")
    found: dict[Plan, None] = {}
    while len(found) < count:
        first = rng.choice(PLACES)
        new = rng.choice([p for p in PLACES if p != first]) if rng.random() < 0.5 else ""
        if held_out(first, new) != evaluation:
            continue
        plan = (first, new, rng.randrange(len(OPENINGS)), rng.randrange(len(CHANGES)) if new else 0, rng.randrange(len(QUESTIONS)))
        found[plan] = None
    return list(found)


def answer(plan: Plan) -> str:
    return plan[1] or plan[0]


class Conversation:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.pending = ([CHANGES[plan[3]].format(old=plan[0], new=plan[1])] if plan[1] else []) + [QUESTIONS[plan[4]]]
        self.correct = False

    def reply(self, text: str) -> TurnOutcome:
        if self.pending:
            return TurnOutcome(reward=0.0, next_message=self.pending.pop(0))
        self.correct = text.strip() == answer(self.plan)
        return TurnOutcome(reward=1.0 if self.correct else 0.0, next_message=None)


class MeetingPlaceEnv(BaseEnv):
    """Say where the meeting is after the plan may have changed (multi-turn)."""

    name = "meeting_place"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.correct: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=150, steps_per_eval=25, max_token_length=384, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_plans = make_plans(2000, seed=self.config.seed, evaluation=False)
        self.eval_plans = make_plans(100, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Plan:
        return self.rng.choice(self.train_plans)

    async def play(self, plan: Plan, temperature: float | None = None) -> tuple[Episode, bool]:
        conversation = Conversation(plan)
        episode = await run_episode(
            self.policy,
            OPENINGS[plan[2]].format(place=plan[0]),
            conversation.reply,
            max_turns=3,
            discount_factor=1.0,
            max_tokens=MAX_TOKENS,
            temperature=temperature,
        )
        return episode, conversation.correct

    async def collect_trajectories(self, item: Plan) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.correct.extend(1.0 if correct else 0.0 for _, correct in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(plan, 0.0) for plan in self.eval_plans))
        metrics = {"eval/percent_correct": sum(correct for _, correct in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.correct:
            metrics["train/percent_correct"] = sum(self.correct) / len(self.correct)
            self.correct = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    MeetingPlaceEnv.cli()
