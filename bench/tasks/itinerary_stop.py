"""Recall which city was a given stop of a trip told one stop per message (multi-turn).

The user names the stops of a trip one message at a time and then asks for one of the earlier
ones, e.g. "Our trip's stops, one by one. First: Lisbon." / "Then Porto." / "Then Seville.
What was the second stop?" -> "Porto". Trips have two or three different cities; the question
comes with the last city or, for two cities, sometimes in a message of its own, so a
conversation has two or three user turns, and it always asks for a city named in an earlier
turn. Replies before the question earn nothing; the episode returns 1.0 when the reply to the
question is exactly the city and 0 otherwise. A tenth of the city sequences, chosen by a SHA-256
hash, are held out for evaluation and never trained on.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

from hermes_rl_mcp.sdk import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from hermes_rl_mcp.sdk.multiturn import Episode, TurnOutcome, episodes_to_group, run_episode

CITIES = (
    "Lisbon", "Porto", "Madrid", "Seville", "Granada", "Valencia", "Bilbao", "Paris", "Lyon", "Nice",
    "Rome", "Milan", "Venice", "Naples", "Florence", "Vienna", "Prague", "Berlin", "Munich", "Hamburg",
    "Cologne", "Zurich", "Geneva", "Bern", "Oslo", "Bergen", "Dublin", "Cork", "London", "York", "Bath",
    "Oxford", "Athens", "Sofia", "Krakow", "Warsaw", "Riga", "Tallinn", "Vilnius", "Ghent", "Bruges",
    "Antwerp", "Split", "Zagreb", "Budapest", "Salzburg", "Kyoto", "Osaka", "Seoul", "Hanoi", "Lima", "Cusco",
)
OPENERS = (
    "Our trip's stops, one by one. First: {city}.",
    "Road trip! We start in {city}.",
    "Track our route for me. Stop one: {city}.",
    "Our holiday starts in {city}.",
)
NEXTS = ("Then {city}.", "Next, {city}.", "Then on to {city}.")
ORDINALS = ("first", "second")
QUESTIONS = (
    "What was the {ordinal} stop?",
    "Which city is stop {number}?",
    "Where's our {ordinal} stop?",
)
MAX_TOKENS = max(len(c) for c in CITIES) + 3


def held_out(cities: tuple[str, ...]) -> bool:
    return hashlib.sha256("|".join(cities).encode()).digest()[0] % 10 == 0


def make_script(cities: tuple[str, ...], asked: int, separate: bool, rng: random.Random) -> list[str]:
    """The user's messages: one per city, the question appended to the last or sent on its own."""
    question = rng.choice(QUESTIONS).format(ordinal=ORDINALS[asked], number=asked + 1)
    messages = [rng.choice(OPENERS).format(city=cities[0])]
    messages += [rng.choice(NEXTS).format(city=city) for city in cities[1:]]
    if separate:
        messages.append(question)
    else:
        messages[-1] += " " + question
    return messages


def make_items(count: int, *, seed: int, evaluation: bool) -> list[tuple[tuple[str, ...], list[str], str]]:
    """(cities, user messages, answer) items whose city sequence is on the requested side."""
    rng = random.Random(f"itinerary_stop:{seed}")
    found: dict[tuple[str, ...], tuple[tuple[str, ...], list[str], str]] = {}
    while len(found) < count:
        cities = tuple(rng.sample(CITIES, rng.choice((2, 3))))
        if held_out(cities) != evaluation or cities in found:
            continue
        # two cities: the question with the second or on its own; three: with the third
        separate = len(cities) == 2 and rng.random() < 0.5
        # the city asked for is always one named before the message with the question
        last_earlier = len(cities) - 1 if separate else len(cities) - 2
        asked = rng.randint(0, min(last_earlier, len(ORDINALS) - 1))
        found[cities] = (cities, make_script(cities, asked, separate, rng), cities[asked])
    return list(found.values())


class Conversation:
    def __init__(self, messages: list[str], answer: str) -> None:
        self.pending = list(messages[1:])
        self.answer = answer
        self.recalled = False

    def reply(self, text: str) -> TurnOutcome:
        if self.pending:
            return TurnOutcome(reward=0.0, next_message=self.pending.pop(0))
        self.recalled = text.strip() == self.answer
        return TurnOutcome(reward=1.0 if self.recalled else 0.0, next_message=None)


class ItineraryStopEnv(BaseEnv):
    """Name the trip stop asked for, from cities given in earlier turns (multi-turn)."""

    name = "itinerary_stop"

    def __init__(self, config: BaseEnvConfig, server_configs: list[APIServerConfig], slurm: bool = False, testing: bool = False) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.recalled: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[BaseEnvConfig, list[APIServerConfig]]:
        config = BaseEnvConfig(group_size=8, batch_size=64, total_steps=200, steps_per_eval=25, max_token_length=192, use_wandb=False)
        return config, [APIServerConfig(model_name="policy", base_url="http://127.0.0.1:8001/v1", api_key="x")]

    async def setup(self) -> None:
        self.train_items = make_items(3000, seed=self.config.seed, evaluation=False)
        self.eval_items = make_items(150, seed=self.config.seed, evaluation=True)
        self.rng = random.Random(self.config.seed)

    async def get_next_item(self) -> Any:
        return self.rng.choice(self.train_items)

    async def play(self, item: Any, temperature: float | None = None) -> tuple[Episode, bool]:
        _cities, messages, answer = item
        conversation = Conversation(messages, answer)
        episode = await run_episode(
            self.policy,
            messages[0],
            conversation.reply,
            max_turns=len(messages),
            discount_factor=1.0,
            max_tokens=MAX_TOKENS,
            temperature=temperature,
        )
        return episode, conversation.recalled

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        played = await asyncio.gather(*(self.play(item) for _ in range(self.config.group_size)))
        self.recalled.extend(1.0 if recalled else 0.0 for _, recalled in played)
        return episodes_to_group([episode for episode, _ in played]), []

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        played = await asyncio.gather(*(self.play(item, 0.0) for item in self.eval_items))
        metrics = {"eval/percent_correct": sum(recalled for _, recalled in played) / len(played)}
        await self.wandb_log(metrics)
        return metrics

    async def wandb_log(self, wandb_metrics: dict[str, float] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        if self.recalled:
            metrics["train/percent_correct"] = sum(self.recalled) / len(self.recalled)
            self.recalled = []
        await super().wandb_log(metrics)


if __name__ == "__main__":
    ItineraryStopEnv.cli()
